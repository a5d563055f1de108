"""The write side: store, forget, validate, access flushes and eviction over one journal.

:class:`Writer` is the only thing that appends memory commands. Each command: validate the
input (nothing written on bad input) → decide with the pure rules of
:mod:`ferrex.core.decide`, which ask what they need measured as they reach it (the
embedding model and Qdrant answer, through :class:`~ferrex.write.measures.StoreMeasures`:
the nearest memories, cosine similarities of names, objects and predicate phrases) →
append and apply through the :class:`~ferrex.core.runner.CommandRunner` (a dump restore's
own decisions too, :meth:`Writer.run`). The events record the *outcomes* of the decisions,
so a replay never decides again. Stores go through the store pipeline
(:mod:`ferrex.write.pipeline`: validated, embedded in batches, decided chunk by chunk).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Literal, TypeVar

from ferrex.core.decide import Decision
from ferrex.core.decide.consolidate import (
    ConsolidateResult,
    Folding,
    UnfoldResult,
    consolidation_groups,
    decide_consolidate,
    decide_refold,
    decide_unfold,
)
from ferrex.core.decide.entities import EntityAction, EntityResult, ResolvedEntity, decide_entity
from ferrex.core.decide.forget import (
    ForgetResult,
    MarkResult,
    SettleResult,
    ValidateResult,
    confirmable,
    decide_access,
    decide_eviction,
    decide_expiry,
    decide_forget,
    decide_mark,
    decide_settle,
    decide_validate,
)
from ferrex.core.decide.store import StoreResult
from ferrex.core.runner import Batch, CommandRunner, Decide
from ferrex.core.settings import StoreSettings
from ferrex.errors import FerrexError, UsageError
from ferrex.ids import new_id
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.pipeline import StorePipeline, holding_sync
from journal import JournalBackend
from journal.events import utc_now
from projections.replay import Projections
from projections.rows import Memory

__all__ = [
    "ForgetResult",
    "MarkResult",
    "ResolvedEntity",
    "StoreResult",
    "StoreSettings",
    "ValidateResult",
    "Writer",
]

Clock = Callable[[], datetime]
T = TypeVar("T")
R = TypeVar("R")


class Writer:
    """The command side over one journal and its projections."""

    def __init__(
        self,
        journal: JournalBackend,
        projections: Projections,
        embedder: Embedder,
        settings: StoreSettings | None = None,
        clock: Clock = utc_now,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.journal = journal
        self.projections = projections
        self.embedder = embedder
        self.settings = settings or StoreSettings()
        self.clock = clock
        self._runner = CommandRunner(journal, projections, before_write=before_write)

    def new_id(self, prefix: str) -> str:
        return new_id(prefix, self.clock())

    # -- store ------------------------------------------------------------------------------

    def store(self, request: StoreRequest, *, multi_valued: bool = False) -> StoreResult:
        """Store one memory (see :mod:`ferrex.core.decide.store` for the rules).

        ``multi_valued``: a fact that may hold alongside others for the same subject and
        predicate (several owners, several dependencies); no conflict resolution.
        """
        outcome = self.store_many([request], multi_valued=multi_valued)[0]
        if isinstance(outcome, FerrexError):
            raise outcome
        return outcome

    def store_many(
        self,
        requests: Sequence[StoreRequest],
        *,
        multi_valued: bool = False,
        chunk: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[StoreResult | FerrexError]:
        """Store many memories (an import): one outcome per request, in order.

        Each chunk is decided under one writer lock (later requests see earlier ones of the
        same chunk) and appended as one group commit; texts are embedded in batches first.
        A refused request does not stop the others.
        """
        outcomes = StorePipeline(
            self._runner, self.projections, self.embedder, self.settings, self.clock
        ).store_many(requests, multi_valued=multi_valued, chunk=chunk, progress=progress)
        if self.settings.budget_bytes is not None and any(
            isinstance(o, StoreResult) and o.stored for o in outcomes
        ):
            self.enforce_budget(self.settings.budget_bytes)
        return outcomes

    def run(
        self,
        items: Sequence[T],
        decide: Decide[T, R],
        *,
        texts: Callable[[Sequence[T]], Sequence[str]],
        chunk: int = 256,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[R | FerrexError]:
        """Run decisions a caller makes itself (a dump restore's, :mod:`ferrex.porting.
        restore`) through the one write path, a chunk at a time: the chunk's ``texts`` are
        embedded before its writer lock (the projection then finds them in the cache)."""

        def prepare(part: Sequence[T]) -> None:
            self.embedder.embed_many(list(texts(part)))

        with holding_sync(self.projections, len(items) > chunk):
            outcomes: list[R | FerrexError] = self._runner.run(
                items, decide, chunk=chunk, prepare=prepare, progress=progress
            )
        return outcomes

    # -- forget, validate, accesses, eviction ---------------------------------------------------

    def forget(
        self, ids: Sequence[str], *, cascade: bool = False, caller: str | None = None
    ) -> ForgetResult:
        """Remove memories from every projection; unknown (or, for an agent, invisible) ids
        are reported as not found, not errors."""
        result: ForgetResult = self._runner.run_one(
            ids,
            lambda i, batch: self._refolded(
                decide_forget(i, batch.view, cascade=cascade, caller=caller), batch
            ),
        )
        return result

    def validate_memories(
        self,
        ids: Sequence[str],
        *,
        source: Literal["agent", "operator"] = "agent",
        caller: str | None = None,
    ) -> ValidateResult:
        """Mark memories as confirmed correct now."""
        result: ValidateResult = self._runner.run_one(
            ids,
            lambda i, batch: decide_validate(
                i, batch.view, now=self.clock(), source=source, caller=caller
            ),
        )
        return result

    def validate_shown(
        self, ids: Sequence[str], shown: Iterable[str], *, caller: str | None = None
    ) -> ValidateResult:
        """Confirm memories a recall showed the caller (``validate_ids``): ids it did not
        show are refused (:func:`ferrex.core.decide.forget.confirmable`), nothing written."""
        return self.validate_memories(confirmable(ids, shown), caller=caller)

    def mark(
        self,
        ids: Sequence[str],
        *,
        importance: object = None,
        pinned: object = None,
        caller: str | None = None,
    ) -> MarkResult:
        """Set the lifecycle marks of memories (None: that mark unchanged); unknown,
        invisible or expired ids are reported as not found."""
        result: MarkResult = self._runner.run_one(
            ids,
            lambda i, batch: decide_mark(
                i, batch.view, now=self.clock(), importance=importance, pinned=pinned,
                caller=caller,
            ),
        )  # fmt: skip
        return result

    def settle(
        self,
        ids: Sequence[str],
        *,
        differs_from: Sequence[str] = (),
        supersedes: str | None = None,
        caller: str | None = None,
    ) -> SettleResult:
        """Settle possible conflicts from the facts confirmed (:func:`ferrex.core.decide.
        forget.decide_settle`): pairs that both hold, or the one fact a confirmed fact
        replaces."""
        result: SettleResult = self._runner.run_one(
            ids,
            lambda i, batch: decide_settle(
                i, batch.view, now=self.clock(), differs_from=differs_from,
                supersedes=supersedes, caller=caller,
            ),
        )  # fmt: skip
        return result

    def entity(
        self,
        action: EntityAction,
        first: str,
        second: str,
        *,
        namespace: str | None = None,
        caller: str | None = None,
    ) -> EntityResult:
        """Merge two entities, split a wrongly merged spelling off one, or say two differ
        (:func:`ferrex.core.decide.entities.decide_entity`): one journal event."""
        ns = namespace or self.settings.default_namespace
        result: EntityResult = self._runner.run_one(
            None,
            lambda _, batch: decide_entity(
                action, first, second, batch.view, namespace=ns, caller=caller,
                new_id=self.new_id,
            ),
        )  # fmt: skip
        return result

    def sweep_expired(self) -> ForgetResult:
        """Forget the memories whose time to live has run out (the owner runs it
        periodically: ``ferrex.server.hub``)."""

        def decide(_: None, batch: Batch) -> Decision[ForgetResult]:
            now = self.clock()
            due = self.projections.read_model.expiring(by=now.timestamp())
            return self._refolded(decide_expiry(due, now=now), batch)

        result: ForgetResult = self._runner.run_one(None, decide)
        return result

    def sweep_due(self) -> int:
        """:meth:`sweep_expired` if anything has expired (else no writer lock is taken);
        how many memories were forgotten."""
        self.projections.catch_up()
        if not self.projections.read_model.expiring(by=self.clock().timestamp()):
            return 0
        return len(self.sweep_expired().forgotten)

    def journal_accesses(self, pending: Mapping[str, tuple[int, datetime]]) -> tuple[str, ...]:
        """Journal recall hits (the access log's flush); the ids journaled."""
        if not pending:
            return ()
        ids: tuple[str, ...] = self._runner.run_one(
            pending, lambda p, batch: decide_access(p, batch.view)
        )
        return ids

    def enforce_budget(self, budget: int) -> ForgetResult | None:
        """Evict what the budget cannot hold (:func:`ferrex.core.decide.forget.decide_eviction`)."""

        def decide(_: None, batch: Batch) -> Decision[ForgetResult]:
            return self._refolded(
                decide_eviction(
                    self.projections.read_model.memories(),
                    budget=budget,
                    now=self.clock(),
                    staleness=self.settings.staleness_for,
                ),
                batch,
            )

        result: ForgetResult = self._runner.run_one(None, decide)
        return result if result.forgotten else None

    # -- consolidation ----------------------------------------------------------------------

    def _refolded(self, decision: Decision[ForgetResult], batch: Batch) -> Decision[ForgetResult]:
        """A forget's decision with what it does to consolidation summaries after it
        (:func:`~ferrex.core.decide.consolidate.decide_refold`): a forgotten source's
        sentences leave its summary's text in the same record."""
        gone = decision.result.forgotten
        if not gone:
            return decision
        rm = self.projections.read_model
        touched = set(rm.decisions.folded_into(gone).values()) | {i for i in gone if rm.folded(i)}
        if not touched:
            return decision
        extra = decide_refold(
            gone,
            batch.view,
            {s: rm.folded(s) for s in touched},
            now=self.clock(),
            new_id=self.new_id,
            keep_ratio=self.settings.consolidation_keep_ratio,
            unit=self.settings.consolidation_unit,
        )
        return replace(decision, events=(*decision.events, *extra))

    def consolidation_groups(
        self, *, older_than_days: float, namespace: str | None = None, agent_id: str | None = None
    ) -> list[tuple[str, list[Memory]]]:
        """The groups a consolidation would fold now
        (``decide.consolidate.consolidation_groups``)."""
        created_before = _cutoff(self.clock(), older_than_days)
        self.projections.catch_up()
        reads = self.projections.read_model.decisions
        found = reads.foldable(
            created_before=created_before, namespace=namespace, agent_id=agent_id
        )
        summaries = reads.summaries_among([m.memory_id for m in found])
        return consolidation_groups(found, created_before=created_before, summaries=summaries)

    def consolidate_due(self, *, older_than_days: float) -> int:
        """:meth:`consolidate` everything folded by ``older_than_days`` if there is any
        (else no writer lock is taken), from the groups found once; how many memories were
        folded."""
        groups = self.consolidation_groups(older_than_days=older_than_days)
        if not groups:
            return 0
        result = self.fold(groups, created_before=_cutoff(self.clock(), older_than_days))
        return sum(len(f.memory_ids) for f in result.summaries)

    def consolidate(
        self,
        *,
        older_than_days: float,
        namespace: str | None = None,
        agent_id: str | None = None,
        dry_run: bool = False,
        max_groups: int | None = None,
    ) -> ConsolidateResult:
        """Fold every group of episodes learned more than ``older_than_days`` ago into one
        summary each (one command per summary), or the first ``max_groups`` of them (a
        caller showing progress folds in rounds); ``dry_run`` says what it would make and
        writes nothing."""
        groups = self.consolidation_groups(
            older_than_days=older_than_days, namespace=namespace, agent_id=agent_id
        )
        if max_groups is not None:
            groups = groups[:max_groups]
        return self.fold(
            groups, created_before=_cutoff(self.clock(), older_than_days), dry_run=dry_run
        )

    def fold(
        self,
        groups: Sequence[tuple[str, Sequence[Memory]]],
        *,
        created_before: float,
        dry_run: bool = False,
    ) -> ConsolidateResult:
        """Fold each group into one summary (one command each; the members are read again
        under the writer lock, and only those still foldable are folded)."""
        ratio, unit = self.settings.consolidation_keep_ratio, self.settings.consolidation_unit
        if dry_run:
            planned: list[Folding] = []
            for n, (key, members) in enumerate(groups):
                d = decide_consolidate(
                    key, members, created_before=created_before,
                    summaries=self._summaries(members),
                    now=self.clock(), summary_id=f"(summary {n + 1})", keep_ratio=ratio,
                    unit=unit,
                )  # fmt: skip
                planned += d.result.summaries
            return ConsolidateResult(tuple(planned), dry_run=True)

        def decide(item: tuple[str, Sequence[Memory]], batch: Batch) -> Decision[ConsolidateResult]:
            key, members = item
            current = [m for m in (batch.view.memory(x.memory_id) for x in members) if m]
            return decide_consolidate(
                key, current, created_before=created_before,
                summaries=self._summaries(current),
                now=self.clock(), summary_id=self.new_id("mem"), keep_ratio=ratio, unit=unit,
            )  # fmt: skip

        outcomes = self._runner.run(list(groups), decide, chunk=64)
        made: list[Folding] = []
        warnings: list[str] = []
        position: int | None = None
        for outcome in outcomes:
            if isinstance(outcome, FerrexError):
                raise outcome
            made += outcome.summaries
            warnings += [w for w in outcome.warnings if w not in warnings]
            if outcome.position is not None:
                position = outcome.position
        return ConsolidateResult(tuple(made), position, tuple(warnings))

    def _summaries(self, members: Sequence[Memory]) -> frozenset[str]:
        """Those of ``members`` that are consolidation summaries (the rule *foldable* needs
        the fact; a row does not carry it)."""
        reads = self.projections.read_model.decisions
        return reads.summaries_among([m.memory_id for m in members])

    def unfold(self, summary_id: str) -> UnfoldResult:
        """Undo one consolidation: its memories back in recall, the summary forgotten."""

        def decide(sid: str, batch: Batch) -> Decision[UnfoldResult]:
            return decide_unfold(sid, batch.view, self.projections.read_model.folded(sid))

        result: UnfoldResult = self._runner.run_one(summary_id, decide)
        return result

    def unfold_many(self, summary_ids: Sequence[str]) -> list[UnfoldResult]:
        """Undo these consolidations, one command each (a summary already gone, undone or
        forgotten meanwhile, is passed over); any other refusal is raised, and what was
        undone before it stays undone."""

        def decide(sid: str, batch: Batch) -> Decision[UnfoldResult]:
            return decide_unfold(sid, batch.view, self.projections.read_model.folded(sid))

        done: list[UnfoldResult] = []
        for outcome in self._runner.run(list(summary_ids), decide, chunk=64):
            if isinstance(outcome, FerrexError):
                if outcome.code == "not_found":
                    continue
                raise outcome
            done.append(outcome)
        return done


def _cutoff(now: datetime, older_than_days: float) -> float:
    if not math.isfinite(older_than_days) or older_than_days < 0:
        raise UsageError(
            f"the age must be a number of days, 0 or more, not {older_than_days!r}",
            hint="--older-than 30 folds what ferrex learned more than 30 days ago",
        )
    return now.timestamp() - older_than_days * 86400.0
