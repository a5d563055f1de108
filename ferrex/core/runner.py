"""The one path every write takes.

:meth:`CommandRunner.run` takes a list of requests and a decide function and, chunk by
chunk: takes the journal's writer lock → checks the free-space reserve → brings the
projections up to the head → decides each request against an
:class:`~ferrex.core.view.Overlay` (so later requests see earlier ones of the same chunk) →
appends every decided command as one group commit (fsync) → applies the records to the
projections. Store, forget, validate,
dump restore, access flushes and eviction all come through here (``ferrex.write.writer``,
``ferrex.porting.restore``, ``ferrex.app``).

Failure rules:

- A request its decision refuses (a :class:`~ferrex.errors.FerrexError`) becomes that
  request's outcome; the others of the chunk go on.
- Anything that fails before the append (the space check, the journal itself) leaves
  nothing written and propagates; the service boundary turns it into a coded error.
- Once the append has returned, the commands **are** done: a failure to apply them to a
  projection is logged and reported as a warning on each outcome, never as a failure. The
  next catch-up (or ``ferrex reconcile``) heals the projection from the journal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, is_dataclass, replace
from typing import TypeVar

from ferrex.errors import FerrexError
from journal import Event, JournalBackend
from projections.replay import Projections

from .decide import Decision
from .view import Overlay, ReadModelView

log = logging.getLogger("ferrex")

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

APPLY_WARNING = (
    "stored in the journal, but a projection could not be updated ({error}); it will be "
    "rebuilt from the journal (ferrex reconcile --fix repairs it now)"
)


@dataclass
class Batch:
    """What the decisions of one chunk share: the overlay view, and what a caller keeps for
    the chunk (:meth:`state`: the writer keeps the vectors of the chunk's pending stores)."""

    view: Overlay
    _states: dict[type[object], object] = field(default_factory=dict, init=False, repr=False)

    def state(self, kind: type[S]) -> S:
        """The chunk's one value of ``kind``, made by ``kind()`` the first time it is asked
        for; a new chunk starts with none."""
        found = self._states.get(kind)
        if isinstance(found, kind):
            return found
        made = kind()
        self._states[kind] = made
        return made


Decide = Callable[[T, Batch], Decision[R]]
"""A command's decision: one item and its chunk's :class:`Batch` in, the events and the
answer (``R``) out, or a :class:`~ferrex.errors.FerrexError` raised."""


class CommandRunner:
    """Runs commands over one journal and its projections (see the module docstring); each
    run is typed by its items (``T``) and its answers (``R``)."""

    def __init__(
        self,
        journal: JournalBackend,
        projections: Projections,
        *,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.journal = journal
        self.projections = projections
        self.before_write = before_write

    def run(
        self,
        items: Sequence[T],
        decide: Decide[T, R],
        *,
        chunk: int = 256,
        prepare: Callable[[Sequence[T]], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[R | FerrexError]:
        """One outcome per item, in order: the decision's result (with its record's
        position and any warning) or the error that refused it.

        ``prepare(chunk)`` runs before the lock is taken (the writer embeds a chunk's texts
        there, so the model does not run while other processes wait for the lock)."""
        outcomes: list[R | FerrexError] = []
        for start in range(0, len(items), chunk):
            part = items[start : start + chunk]
            if prepare is not None:
                prepare(part)
            done: list[R | FerrexError] = self._run_chunk(part, decide)
            outcomes += done
            if progress is not None:
                progress(len(outcomes), len(items))
        return outcomes

    def run_one(self, item: T, decide: Decide[T, R]) -> R:
        """Run one command; raises the error that refused it."""
        outcome = self.run([item], decide)[0]
        if isinstance(outcome, FerrexError):
            raise outcome
        return outcome

    def _run_chunk(self, part: Sequence[T], decide: Decide[T, R]) -> list[R | FerrexError]:
        outcomes: list[R | FerrexError] = []
        with self.journal.exclusive() as head:
            if self.before_write is not None:
                self.before_write()
            # The head is the journal's own under the lock: when the projections have
            # applied it, no other process wrote since and there is nothing to catch up.
            if self.projections.behind(head.position):
                self.projections.catch_up()
            batch = Batch(Overlay(ReadModelView(self.projections.read_model)))
            commands: list[tuple[Event, ...]] = []
            written: list[int] = []  # outcome index of each command
            for item in part:
                try:
                    decision = decide(item, batch)
                except FerrexError as exc:
                    outcomes.append(exc)
                    continue
                if decision.events:
                    batch.view.apply(decision.events)
                    commands.append(decision.events)
                    written.append(len(outcomes))
                outcomes.append(decision.result)
            if not commands:
                return outcomes
            records = self.journal.append_batch(commands)
            warning = self._apply()
        for at, record in zip(written, records, strict=True):
            outcomes[at] = _answered(outcomes[at], record.position, warning)
        return outcomes

    def _apply(self) -> str | None:
        try:
            self.projections.catch_up()
        except Exception as exc:  # the records are durable: the command succeeded
            log.warning("ferrex: applying journaled records failed: %s", exc, exc_info=True)
            return APPLY_WARNING.format(error=type(exc).__name__)
        return None


def _answered(result: R, position: int, warning: str | None) -> R:
    """``result`` with its record's ``position`` and the ``warning``, when it is a dataclass
    with those fields; else as it is."""
    if not is_dataclass(result) or isinstance(result, type):
        return result  # e.g. the ids an access flush wrote
    changes: dict[str, object] = {"position": position}
    if warning is not None:
        earlier: tuple[str, ...] = getattr(result, "warnings", ())
        changes["warnings"] = (*earlier, warning)
    try:
        return replace(result, **changes)
    except TypeError:  # a dataclass without those fields (a settle's result)
        return result
