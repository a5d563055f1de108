"""What a decision reads, and the two real things that answer it.

:class:`View` is the whole of what the decisions in :mod:`ferrex.core.decide` may ask about
the committed state: a memory by id, the active facts of one relation, the facts of one
subject, the versions of a procedure, the spellings of a namespace's entities, which
memories name an entity, whether two entities or two facts were said to differ, and where
an agent's last derived episode ends. Two implementations:

- :class:`ReadModelView`: the SQLite read model, through its named queries;
- :class:`Overlay`: a view plus the events decided earlier in the same batch but not yet
  appended, folded by the read model's own fold (:func:`projections.fold.changes`, and
  :func:`projections.fold.updated` for a row's fields), so a later request of the batch sees
  what it would see once the batch is applied.

Unit tests of the decisions use an :class:`Overlay` over an empty view of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, assert_never, cast

from journal import AnyEvent, Event
from projections import fold
from projections.readmodel.predicates import is_current
from projections.rows import RELATION, RESTATES, Memory, PossibleConflict, Spelling, viewers

if TYPE_CHECKING:
    from projections.sqlite import ReadModel


@dataclass(frozen=True)
class EpisodeTail:
    """The last memory of an agent's derived episodes (see ``decide.store.episode_of``)."""

    episode: str
    index: int
    at: float | None
    """When it was recorded (epoch seconds); None: decided earlier in the same batch."""


class View(Protocol):
    """The committed state as decisions see it (every list ordered by id)."""

    def memory(self, memory_id: str) -> Memory | None: ...

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]: ...

    def subject_facts(self, namespace: str, key: str) -> list[Memory]: ...

    def facts_holding(self, namespace: str, words: tuple[str, ...]) -> list[Memory]: ...

    def procedures(self, namespace: str, name: str) -> list[Memory]: ...

    def imported(self, namespace: str, key: str) -> list[Memory]: ...

    def spellings(self, namespace: str) -> list[Spelling]: ...

    def linked(self, entity_id: str) -> list[str]: ...

    def has_entity(self, entity_id: str) -> bool: ...

    def entities_differ(self, a: str, b: str) -> bool: ...

    def facts_differ(self, a: str, b: str) -> bool: ...

    def flagged_with(self, memory_id: str) -> list[PossibleConflict]: ...

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None: ...


class ReadModelView:
    """The read model as a :class:`View`, for one chunk of the command runner.

    The runner builds one under the writer lock, after catching up, and drops it before the
    chunk's records are applied: the read model cannot change while it lives, so each
    question is asked of SQLite once (the chunk's decisions ask many of the same ones) and
    answered from memory after that."""

    def __init__(self, read_model: ReadModel) -> None:
        self._rm = read_model
        self._answers: dict[tuple[object, ...], Any] = {}

    def _once(self, key: tuple[object, ...], ask: Callable[[], Any]) -> Any:
        if key not in self._answers:
            self._answers[key] = ask()
        return self._answers[key]

    def memory(self, memory_id: str) -> Memory | None:
        found: Memory | None = self._once(("memory", memory_id), lambda: self._rm.get(memory_id))
        return found

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        def ask() -> list[Memory]:
            return self._rm.decisions.active_facts(namespace, key, predicate)

        return list(self._once(("active", namespace, key, predicate), ask))

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        return list(
            self._once(("subject", namespace, key), lambda: self._rm.subject_facts(namespace, key))
        )

    def facts_holding(self, namespace: str, words: tuple[str, ...]) -> list[Memory]:
        def ask() -> list[Memory]:
            return self._rm.facts_holding(namespace, words)

        return list(self._once(("holding", namespace, words), ask))

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        return list(
            self._once(
                ("procedures", namespace, name),
                lambda: self._rm.decisions.procedures(namespace, name),
            )
        )

    def imported(self, namespace: str, key: str) -> list[Memory]:
        return list(
            self._once(
                ("imported", namespace, key), lambda: self._rm.decisions.imported(namespace, key)
            )
        )

    def spellings(self, namespace: str) -> list[Spelling]:
        return list(self._once(("spellings", namespace), lambda: self._rm.spellings(namespace)))

    def has_entity(self, entity_id: str) -> bool:
        """Whether the entity exists, merged or not, with or without spellings."""
        found: bool = self._once(
            ("entity", entity_id), lambda: bool(self._rm.entity_names([entity_id]))
        )
        return found

    def linked(self, entity_id: str) -> list[str]:
        return list(
            self._once(("linked", entity_id), lambda: [m for _, m in self._rm.links([entity_id])])
        )

    def entities_differ(self, a: str, b: str) -> bool:
        return bool(
            self._once(
                ("differ", *sorted((a, b))), lambda: self._rm.decisions.entities_differ(a, b)
            )
        )

    def facts_differ(self, a: str, b: str) -> bool:
        key = ("facts differ", *sorted((a, b)))
        return bool(self._once(key, lambda: self._rm.decisions.facts_differ(a, b)))

    def flagged_with(self, memory_id: str) -> list[PossibleConflict]:
        """The possible conflicts of one fact, seen from it, by other id (whoever sees them:
        the caller filters)."""

        def ask() -> list[PossibleConflict]:
            found = self._rm.possible_conflicts([memory_id])
            return sorted((c for c in found if c.memory_id == memory_id), key=lambda c: c.other_id)

        return list(self._once(("flagged", memory_id), ask))

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None:
        m: Memory | None = self._once(
            ("tail", namespace, agent_id, visibility),
            lambda: self._rm.decisions.episode_tail(namespace, agent_id, visibility),
        )
        if m is None or m.episode is None:
            return None
        return EpisodeTail(m.episode, m.episode_index, m.created_at)


class Overlay:
    """A :class:`View` plus decisions not yet applied (see the module docstring).

    Over an empty base it answers what the read model answers after the same events, for
    any sequence a decision could make (``tests/integration/test_one_fold.py``). Over a read
    model two answers are only as good as the base's: an episode tail whose memory the batch
    forgot (the base names no earlier one), and who sees a private entity of the base that a
    cascade keeps for some agents (its viewers do not say whether they come from its scope).
    Neither is asked in practice: the write paths that decide several commands in one batch
    (stores, imports, restores, consolidation) decide no forget and no entity correction."""

    def __init__(self, base: View) -> None:
        self._base = base
        self._changed: dict[str, Memory | None] = {}  # None: forgotten in this batch
        # (namespace, import key) → the ids in _changed that ever had it: imported()'s
        # candidates, so a chunk's stores do not each scan every store before them.
        self._imports: dict[tuple[str, str], set[str]] = {}
        self._recorded: dict[str, float | None] = {}  # stored in this batch → recorded when
        # Spellings as the read model keeps them: rows keyed by (namespace, normalized, the
        # entity recorded under, agent), each reported under the entity it was merged into.
        self._spellings: dict[str, list[Spelling]] = {}  # added in this batch, recorded ids
        self._replaced: set[_SpellingKey] = set()  # rows of the base gone or replaced
        self._dropped: set[str] = set()  # entities gone in this batch, with their spellings
        self._scopes: dict[str, str | None] = {}  # entity made in this batch → its scope
        self._kept: dict[str, tuple[str, ...]] = {}  # entity → the agents a cascade kept it for
        self._merged_into: dict[str, str] = {}
        self._differ: set[tuple[str, str]] = set()
        self._same: set[tuple[str, str]] = set()  # pairs a merge made one again
        self._facts_differ: set[tuple[str, str]] = set()  # facts said to both hold
        self._flags: dict[str, dict[str, PossibleConflict]] = {}  # flagged in this batch
        self._unflagged: set[tuple[str, str]] = set()  # the base's flags said to both hold
        self._forgot: set[str] = set()  # forgotten in this batch: the base's pairs are gone

    # -- applying ---------------------------------------------------------------------------

    def apply(self, events: Sequence[Event], *, recorded_at: float | None = None) -> None:
        """Take one command's events as if they had been applied (the one fold,
        :func:`projections.fold.changes`). ``recorded_at``: when they were recorded, for a view
        of committed state built from events (a test's); None, decisions not yet appended."""
        for event in events:
            # Every event is one of the catalogue's (``AnyEvent``, the closed tagged union).
            for change in fold.changes(cast(AnyEvent, event)):
                self._take(change, recorded_at)

    def _take(self, change: fold.Change, recorded_at: float | None) -> None:
        match change:
            case fold.PutMemory():
                event = change.event
                body = event.body
                predicate = body.predicate_normalized or body.predicate if body else None
                self._changed.pop(event.memory_id, None)  # the latest put is the last
                self._changed[event.memory_id] = Memory.from_event(
                    event, position=0, created_at=0.0, predicate_normalized=predicate,
                    recorded_at=recorded_at,
                )  # fmt: skip
                self._index_import(event.memory_id)
                self._recorded[event.memory_id] = recorded_at
            case fold.Forgot():
                for memory_id in change.memory_ids:
                    self._changed[memory_id] = None
                    # A forgotten fact's pairs go with it (the base's too).
                    self._forgot.add(memory_id)
                    self._facts_differ = {p for p in self._facts_differ if memory_id not in p}
                    for other in self._flags.pop(memory_id, {}):
                        self._flags.get(other, {}).pop(memory_id, None)
            case (
                fold.Invalidated()
                | fold.Revalidated()
                | fold.Validated()
                | fold.Accessed()
                | fold.Marked()
                | fold.Relinked()
            ):
                old = self.memory(change.memory_id)
                if old is not None:
                    self._changed[change.memory_id] = fold.updated(old, change)
                    self._index_import(change.memory_id)
            case fold.PutEntity():
                self._scopes[change.entity_id] = change.agent_id
            case fold.PutSpelling():
                self._spell(change)
            case fold.DropSpelling():
                self._split_off(change)
            case fold.DropEntities():
                self._drop(change.entity_ids)
            case fold.KeptFor():
                self._kept[change.entity_id] = change.agent_ids
            case fold.Merged():
                self._merge(change)
            case fold.Differ():
                self._differ.add(_pair(change.entity_id, change.other_id))
            case fold.Unflagged():
                self._facts_differ.add(_pair(change.memory_id, change.other_id))
                self._unflagged.add(_pair(change.memory_id, change.other_id))
                self._flags.get(change.memory_id, {}).pop(change.other_id, None)
                self._flags.get(change.other_id, {}).pop(change.memory_id, None)
            case fold.Flagged():
                c = change.conflict
                seen = PossibleConflict(c.other_id, c.memory_id, c.other_entity_id, c.entity_id,
                                        c.reason, c.score)  # fmt: skip
                for side in (c, seen):  # the latest flag of a pair, as the projection keeps
                    self._flags.setdefault(side.memory_id, {})[side.other_id] = side
            case fold.FoldedPair() | fold.Unfolded():
                pass  # a summary's folds change no decision
            case _:
                assert_never(change)

    def _spell(self, change: fold.PutSpelling) -> None:
        # A spelling of an entity made in this batch is seen by those who see it; a spelling
        # more of a known entity, by those who see that entity.
        if change.entity_id in self._scopes:
            seen_by = viewers(self._scopes[change.entity_id])
        else:
            seen_by = next(
                (
                    s.viewers
                    for s in self.spellings(change.namespace)
                    if s.entity_id == change.entity_id
                ),
                None,
            )
        spelled = Spelling(
            change.entity_id, change.alias, change.normalized, change.agent_id, viewers=seen_by
        )
        self._unspell(change.namespace, lambda s: _key(change.namespace, s) == _key_of(change))
        self._spellings.setdefault(change.namespace, []).append(spelled)

    def _unspell(self, namespace: str, gone: Callable[[Spelling], bool]) -> None:
        """Drop the rows ``gone`` names (it is asked of rows as :meth:`spellings` reports them,
        and of this batch's rows as recorded)."""
        self._replaced.update(
            _key(namespace, s) for s in self._base_spellings(namespace) if gone(s)
        )
        pending = self._spellings.get(namespace, [])
        self._spellings[namespace] = [s for s in pending if not gone(self._reported(s))]

    def _split_off(self, change: fold.DropSpelling) -> None:
        # The spelling leaves the entity and the entities merged into it.
        def gone(s: Spelling) -> bool:
            recorded = s.recorded_under or s.entity_id
            return s.normalized == change.normalized and change.entity_id in (
                recorded,
                self._merged_into.get(s.entity_id, s.entity_id),
            )

        self._unspell(change.namespace, gone)

    def _merge(self, change: fold.Merged) -> None:
        self._merged_into[change.absorbed] = change.into
        for absorbed, into in list(self._merged_into.items()):
            if into == change.absorbed:
                self._merged_into[absorbed] = change.into
        self._differ.discard(_pair(change.absorbed, change.into))
        self._same.add(_pair(change.absorbed, change.into))

    def _drop(self, entity_ids: Sequence[str]) -> None:
        dropped = set(entity_ids)
        for namespace in list(self._spellings):
            self._spellings[namespace] = [
                s for s in self._spellings[namespace] if s.entity_id not in dropped
            ]
        self._dropped |= dropped
        for entity_id in dropped:
            self._kept.pop(entity_id, None)
            self._scopes.pop(entity_id, None)

    def _index_import(self, memory_id: str) -> None:
        m = self._changed[memory_id]
        if m is not None and m.import_key is not None:
            self._imports.setdefault((m.namespace, m.import_key), set()).add(memory_id)

    # -- reading ----------------------------------------------------------------------------

    def memory(self, memory_id: str) -> Memory | None:
        if memory_id in self._changed:
            return self._changed[memory_id]
        return self._base.memory(memory_id)

    def _merged(
        self, base: Sequence[Memory], keep: _Keep, among: Iterable[str] | None = None
    ) -> list[Memory]:
        """``base``'s memories and those changed in the batch that ``keep`` keeps (looked
        for ``among`` these ids if given, else among every changed one), by id."""
        ids = [m.memory_id for m in base]
        changed = self._changed.items() if among is None else (
            (i, self._changed.get(i)) for i in among
        )  # fmt: skip
        ids += [i for i, m in changed if m is not None and keep(m)]
        found = (self.memory(i) for i in sorted(set(ids)))
        return [m for m in found if m is not None and keep(m)]

    def active_facts(self, namespace: str, key: str, predicate: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return (
                m.namespace == namespace
                and m.type == "semantic"
                and m.subject_key == key
                and m.predicate_normalized == predicate
                and is_current(m)
            )

        return self._merged(self._base.active_facts(namespace, key, predicate), keep)

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.type == "semantic" and m.subject_key == key

        return self._merged(self._base.subject_facts(namespace, key), keep)

    def facts_holding(self, namespace: str, words: tuple[str, ...]) -> list[Memory]:
        words = tuple(w for w in words if w.isalnum())  # as ``Reads.facts_holding`` keeps them

        def keep(m: Memory) -> bool:
            held = str(m.object or "").casefold()
            return (m.namespace == namespace and m.type == "semantic" and m.superseded_by is None
                    and any(w.casefold() in held for w in words))  # fmt: skip

        return self._merged(self._base.facts_holding(namespace, words), keep)

    def procedures(self, namespace: str, name: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.type == "procedural" and m.procedure_name == name

        return self._merged(self._base.procedures(namespace, name), keep)

    def imported(self, namespace: str, key: str) -> list[Memory]:
        def keep(m: Memory) -> bool:
            return m.namespace == namespace and m.import_key == key

        among = self._imports.get((namespace, key), set())
        return self._merged(self._base.imported(namespace, key), keep, among)

    def _base_spellings(self, namespace: str) -> list[Spelling]:
        if not self._dropped and not self._replaced:  # the common case: nothing to hide
            return self._base.spellings(namespace)
        return [
            s
            for s in self._base.spellings(namespace)
            if (s.recorded_under or s.entity_id) not in self._dropped
            and _key(namespace, s) not in self._replaced
        ]

    def _reported(self, spelling: Spelling) -> Spelling:
        """A spelling as :meth:`spellings` reports it (``spelling`` recorded or reported)."""
        s = spelling
        if s.entity_id in self._merged_into:
            into = self._merged_into[s.entity_id]
            s = replace(s, entity_id=into, recorded_under=s.recorded_under or s.entity_id)
        if s.entity_id in self._kept:
            scope = self._scopes.get(s.recorded_under or s.entity_id)
            s = replace(s, viewers=viewers(scope, self._kept[s.entity_id]))
        return s

    def spellings(self, namespace: str) -> list[Spelling]:
        found = [*self._base_spellings(namespace), *self._spellings.get(namespace, ())]
        if not self._merged_into and not self._kept:  # nothing reported otherwise
            return found
        return [self._reported(s) for s in found]

    def has_entity(self, entity_id: str) -> bool:
        if entity_id in self._scopes:  # made in this batch (again, after a drop)
            return True
        return entity_id not in self._dropped and self._base.has_entity(entity_id)

    def linked(self, entity_id: str) -> list[str]:
        ids = {m for m in self._base.linked(entity_id) if self.memory(m) is not None}
        ids |= {i for i, m in self._changed.items() if m is not None and entity_id in m.entity_ids}
        return sorted(ids)

    def entities_differ(self, a: str, b: str) -> bool:
        pair = _pair(a, b)
        if pair in self._differ:
            return True
        return pair not in self._same and self._base.entities_differ(a, b)

    def facts_differ(self, a: str, b: str) -> bool:
        if _pair(a, b) in self._facts_differ:
            return True
        return not {a, b} & self._forgot and self._base.facts_differ(a, b)

    def flagged_with(self, memory_id: str) -> list[PossibleConflict]:
        """The base's flags and this batch's, less those forgotten with a fact or said to
        both hold since, and those of subjects said to differ or merged (a contradiction
        proper then, unless of two relations). A pair flagged twice, from either side,
        reads as the later flag, here as in the read model (one row a pair)."""
        base = [] if memory_id in self._forgot else self._base.flagged_with(memory_id)
        found = {c.other_id: c for c in base if c.other_id not in self._forgot
                 and _pair(memory_id, c.other_id) not in self._unflagged}  # fmt: skip
        found.update(self._flags.get(memory_id, {}))
        kept = []
        for other in sorted(found):
            c = found[other]
            mine = self._merged_into.get(c.entity_id, c.entity_id)
            theirs = self._merged_into.get(c.other_entity_id, c.other_entity_id)
            merged = mine == theirs and c.reason not in (RELATION, RESTATES)
            if not merged and not self.entities_differ(mine, theirs):
                kept.append(c)
        return kept

    def episode_tail(
        self, namespace: str, agent_id: str | None, visibility: str
    ) -> EpisodeTail | None:
        # The last memory of the batch still in one of the agent's derived episodes (the
        # read model orders by position: a memory stored again moves to the end).
        for memory_id, m in reversed(self._changed.items()):
            if (
                m is not None
                and memory_id in self._recorded
                and m.episode is not None
                and (m.namespace, m.agent_id, m.visibility) == (namespace, agent_id, visibility)
            ):
                return EpisodeTail(m.episode, m.episode_index, self._recorded[memory_id])
        return self._base.episode_tail(namespace, agent_id, visibility)


_SpellingKey = tuple[str, str, str, str | None]


def _key(namespace: str, s: Spelling) -> _SpellingKey:
    """The read model's key of a spelling's row (``aliases_scoped``)."""
    return (namespace, s.normalized, s.recorded_under or s.entity_id, s.agent_id)


def _key_of(change: fold.PutSpelling) -> _SpellingKey:
    return (change.namespace, change.normalized, change.entity_id, change.agent_id)


def _pair(a: str, b: str) -> tuple[str, str]:
    first, second = sorted((a, b))
    return (first, second)


class _Keep(Protocol):
    def __call__(self, memory: Memory, /) -> bool: ...
