"""The write side: store, forget and validate, each one path under the writer lock.

Every command: validate the input (nothing written on bad input) → take the journal's
writer lock → bring the projections up to the journal head → decide (entity resolution,
predicate normalization, conflicts, dedup, procedure versions: pure rules from
``ferrex.rules``) → append one record (fsync) →
apply it → answer with ids and the journal position. The events record the *outcomes* of
the decisions, so a replay never decides again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from ferrex.errors import FerrexError, Refused, UsageError
from ferrex.ids import new_id, plausible_id
from ferrex.models.embedding import Embedder
from ferrex.read.insight import assess, eviction_candidate, text_bytes
from ferrex.rules.dedup import classify_object_change, is_duplicate
from ferrex.rules.entities import Candidate, Resolution, normalize_entity, resolve_entity
from ferrex.rules.eviction import eviction_plan
from ferrex.rules.freshness import DEFAULT_STALENESS
from ferrex.rules.memory_input import DEFAULT_LIMITS, Limits, StoreRequest, ValidStore, validate
from ferrex.rules.predicates import DEFAULT_SYNONYMS, match_known, normalize_predicate
from ferrex.storage import check_journal_reserve
from journal import (
    EntityAliasAdded,
    EntityCreated,
    Event,
    Journal,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from journal.events import SupersedeReason
from projections.documents import memory_text, subject_key
from projections.replay import Projections
from projections.sqlite import Memory, ReadModel
from projections.vectors import VectorFilter

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class StoreSettings:
    """The thresholds and defaults the store rules use (from the configuration)."""

    default_namespace: str = "default"
    dedup_threshold: float = 0.95
    conflict_duplicate: float = 0.95
    conflict_different: float = 0.80
    entity_fuzzy: float = 0.85
    entity_embedding: float = 0.92
    predicate_fuzzy: float = 0.85
    synonyms: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SYNONYMS))
    namespace_synonyms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    limits: Limits = DEFAULT_LIMITS
    agent_id: str | None = None
    """Stamped on memories stored without one (the server's ``--agent-id``)."""
    budget_bytes: int | None = None
    """Memory text beyond this is evicted after a store, in the documented priority."""


@dataclass(frozen=True)
class ResolvedEntity:
    name: str
    entity_id: str
    match: str
    """exact, normalized, fuzzy, embedding, or new."""
    score: float
    matched: str | None
    """The known spelling it matched, if any."""


@dataclass(frozen=True)
class StoreResult:
    status: Literal["stored", "duplicate"]
    id: str
    """The new memory, or for a repeated fact the existing one (re-validated)."""
    type: str
    namespace: str
    entities: tuple[ResolvedEntity, ...]
    superseded: tuple[str, ...]
    validated: tuple[str, ...]
    position: int
    version: int | None = None
    superseded_by: str | None = None
    """Set when a back-dated fact arrived after a newer one: it is kept as history, ended by
    this memory."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "id": self.id,
            "type": self.type,
            "namespace": self.namespace,
            "entities": [e.__dict__ for e in self.entities],
            "superseded": list(self.superseded),
            "validated": list(self.validated),
            "position": self.position,
            **({"version": self.version} if self.version is not None else {}),
            **({"superseded_by": self.superseded_by} if self.superseded_by else {}),
        }


@dataclass(frozen=True)
class ForgetResult:
    forgotten: tuple[str, ...]
    not_found: tuple[str, ...]
    dropped_entities: tuple[str, ...]
    position: int | None


@dataclass(frozen=True)
class ValidateResult:
    validated: tuple[str, ...]
    not_found: tuple[str, ...]
    position: int | None


def _now() -> datetime:
    return datetime.now(UTC)


def _cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    value = float(np.dot(a, b))
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


class Writer:
    """The command side over one journal and its projections."""

    def __init__(
        self,
        journal: Journal,
        projections: Projections,
        embedder: Embedder,
        settings: StoreSettings | None = None,
        clock: Clock = _now,
    ) -> None:
        self.journal = journal
        self.projections = projections
        self.embedder = embedder
        self.settings = settings or StoreSettings()
        self.clock = clock
        self.staleness = DEFAULT_STALENESS

    # -- store ------------------------------------------------------------------------------

    def store(self, request: StoreRequest, *, multi_valued: bool = False) -> StoreResult:
        """Store one memory (see the module docstring for the path it takes).

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
        same chunk, through an overlay of pending decisions) and appended as one group
        commit; texts are embedded in batches first. A refused request does not stop the
        others.
        """
        model = self.embedder.model()
        outcomes: list[StoreResult | FerrexError | None] = [None] * len(requests)
        valids: list[tuple[int, ValidStore]] = []
        for i, request in enumerate(requests):
            try:
                valids.append(
                    (i, validate(request, self.settings.limits, count_tokens=model.count_tokens,
                                 window=model.window))
                )  # fmt: skip
            except FerrexError as exc:
                outcomes[i] = exc
        done = len(requests) - len(valids)
        for start in range(0, len(valids), chunk):
            part = valids[start : start + chunk]
            # Batched embedding: the decisions and the projection then hit the cache.
            self.embedder.embed_many([_text(v) for _, v in part])
            with self.journal.exclusive():
                check_journal_reserve(self.journal.directory)
                self.projections.catch_up()
                pending = _Pending()
                commands: list[list[Event]] = []
                decided: list[tuple[int, StoreResult]] = []
                for i, valid in part:
                    try:
                        events, result = self._decide(valid, multi_valued, pending)
                    except FerrexError as exc:
                        outcomes[i] = exc
                        continue
                    commands.append(events)
                    decided.append((i, result))
                records = self.journal.append_batch(commands)
                self.projections.catch_up()
            for (i, result), record in zip(decided, records, strict=True):
                outcomes[i] = replace(result, position=record.position)
            if self.settings.budget_bytes is not None and records:
                self.enforce_budget(self.settings.budget_bytes)
            done += len(part)
            if progress is not None:
                progress(done, len(requests))
        assert all(o is not None for o in outcomes)
        return [o for o in outcomes if o is not None]

    def _decide(
        self, valid: ValidStore, multi_valued: bool, pending: _Pending
    ) -> tuple[list[Event], StoreResult]:
        """The events for one store, given what is committed and what is ``pending`` in this
        batch. Raises (changing nothing) when the rules refuse it; on success the decision is
        added to ``pending``."""
        s = self.settings
        rm = self.projections.read_model
        now = self.clock()
        namespace = valid.namespace or s.default_namespace
        t_valid = valid.t_valid or now
        memory_id = new_id("mem", now)
        events: list[Event] = []
        candidates = pending.candidates(namespace, rm)
        entities, new_candidates = self._resolve_entities(
            valid.entities, namespace, now, events, candidates
        )
        superseded: list[str] = []
        validated: list[str] = []
        version: int | None = None
        successor: Memory | None = None  # a newer active fact that outlives this one
        body = _body(valid)
        agent_id = valid.agent_id or s.agent_id

        if valid.supersedes is not None:
            old = self._active(valid.supersedes, namespace, pending)
            superseded.append(old.memory_id)
            validated.append(memory_id)
        if valid.type == "semantic":
            assert valid.subject is not None and valid.predicate is not None
            predicate = self._normalized_predicate(
                namespace, valid.subject, valid.predicate, pending
            )
            body = MemoryBody(**{**_fields(body), "predicate_normalized": predicate})
            if valid.supersedes is None and not multi_valued:
                outcome = self._fact_conflicts(valid, namespace, predicate, pending, agent_id)
                if isinstance(outcome, Memory):  # the same fact again: confirm it
                    events.append(
                        MemoriesValidated(
                            memory_ids=(outcome.memory_id,), at=now, source="duplicate"
                        )
                    )
                    result = StoreResult(
                        "duplicate", outcome.memory_id, "semantic", namespace, entities,
                        (), (outcome.memory_id,), 0,
                    )  # fmt: skip
                    candidates.extend(new_candidates)
                    return events, result
                # A back-dated fact older than an active one is history, not the new truth:
                # it is stored already ended, where the newer fact began.
                later = [
                    m for m in (pending.get(i, rm) for i in outcome)
                    if m is not None and m.t_valid > t_valid.timestamp()
                ]  # fmt: skip
                if later:
                    successor = min(later, key=lambda m: (m.t_valid, m.memory_id))
                skip = {m.memory_id for m in later}
                superseded.extend(m for m in outcome if m not in superseded and m not in skip)
        if valid.type == "procedural":
            assert valid.name is not None
            previous = self._procedure_versions(namespace, valid.name, pending, agent_id)
            version = 1 + max((m.procedure_version or 0 for m in previous), default=0)
            current = [m for m in previous if m.t_invalid is None]
        else:
            current = []
        text = memory_text(valid.type, body)
        vector = self.embedder.embed(text)
        if valid.supersedes is None:
            skip = {*superseded, *(m.memory_id for m in current)}
            self._refuse_duplicates(valid.type, namespace, text, vector, pending, skip, agent_id)

        events.append(
            MemoryStored(
                memory_id=memory_id,
                namespace=namespace,
                memory_type=valid.type,
                t_valid=t_valid,
                confidence=valid.confidence,
                entity_ids=tuple(dict.fromkeys(e.entity_id for e in entities)),
                supersedes=valid.supersedes,
                procedure_version=version,
                agent_id=agent_id,
                # An agent's own memories are private unless it shares them.
                visibility=valid.visibility or ("private" if agent_id else "shared"),
                body=body,
            )
        )
        for old_id in superseded:
            reason: SupersedeReason = "explicit" if old_id == valid.supersedes else "conflict"
            events.append(
                MemorySuperseded(
                    memory_id=old_id,
                    namespace=namespace,
                    t_invalid=t_valid,
                    superseded_by=memory_id,
                    reason=reason,
                )
            )
        if successor is not None:
            events.append(
                MemorySuperseded(
                    memory_id=memory_id,
                    namespace=namespace,
                    t_invalid=datetime.fromtimestamp(successor.t_valid, UTC),
                    superseded_by=successor.memory_id,
                    reason="conflict",
                )
            )
        for old in current:
            events.append(
                MemorySuperseded(
                    memory_id=old.memory_id,
                    namespace=namespace,
                    t_invalid=t_valid,
                    superseded_by=memory_id,
                    reason="version",
                )
            )
        cited = _cited(valid.source)
        if cited is not None and pending.get(cited, rm) is not None:
            events.append(MemoriesValidated(memory_ids=(cited,), at=now, source="citation"))
            validated.append(cited)
        if valid.supersedes is not None:
            events.append(MemoriesValidated(memory_ids=(memory_id,), at=now, source="supersede"))
        stored = events[[isinstance(e, MemoryStored) for e in events].index(True)]
        assert isinstance(stored, MemoryStored)
        pending.add(stored, vector, superseded=[*superseded, *(m.memory_id for m in current)])
        if successor is not None:
            pending.memories[memory_id] = replace(
                pending.memories[memory_id], t_invalid=0.0, superseded_by=successor.memory_id
            )
        candidates.extend(new_candidates)
        result = StoreResult(
            "stored",
            memory_id,
            valid.type,
            namespace,
            entities,
            tuple(superseded) + tuple(m.memory_id for m in current),
            tuple(validated),
            0,
            version,
            successor.memory_id if successor is not None else None,
        )
        return events, result

    def _active(self, memory_id: str, namespace: str, pending: _Pending) -> Memory:
        old = pending.get(memory_id, self.projections.read_model)
        if old is None:
            raise Refused(
                f"cannot supersede {memory_id}: no such memory",
                code="not_found",
                hint="check the id (recall shows ids); it may have been forgotten",
                details={"ids": [memory_id]},
            )
        if old.namespace != namespace:
            raise UsageError(
                f"cannot supersede {memory_id}: it is in namespace {old.namespace!r}, "
                f"not {namespace!r}",
                hint="store the replacement in the same namespace",
            )
        if old.t_invalid is not None:
            raise Refused(
                f"{memory_id} is already superseded by {old.superseded_by}",
                code="already_superseded",
                hint=f"supersede the current version, {old.superseded_by}, instead",
                details={"ids": [memory_id], "superseded_by": old.superseded_by},
            )
        return old

    def _normalized_predicate(
        self, namespace: str, subject: str, predicate: str, pending: _Pending
    ) -> str:
        synonyms = self.settings.namespace_synonyms.get(namespace, self.settings.synonyms)
        normalized = normalize_predicate(predicate, synonyms)
        key = subject_key(subject)
        known = [
            str(p)
            for (p,) in self.projections.read_model.db.execute(
                "SELECT DISTINCT predicate_normalized FROM memories WHERE namespace=? "
                "AND subject_key=? AND predicate_normalized IS NOT NULL",
                (namespace, key),
            )
        ]
        known += [
            m.predicate_normalized
            for m in pending.memories.values()
            if m.namespace == namespace
            and m.subject is not None
            and subject_key(m.subject) == key
            and m.predicate_normalized
        ]
        if normalized in known:
            return normalized
        return match_known(normalized, sorted(set(known)), self.settings.predicate_fuzzy) or (
            normalized
        )

    def _fact_conflicts(
        self,
        valid: ValidStore,
        namespace: str,
        predicate: str,
        pending: _Pending,
        agent_id: str | None,
    ) -> Memory | list[str]:
        """The existing same fact (a duplicate), or the active facts the new one replaces.

        Raises ``conflict_ambiguous`` when an object is neither clearly the same nor
        clearly different.
        """
        assert valid.subject is not None and valid.object is not None
        rm = self.projections.read_model
        key = subject_key(valid.subject)
        ids = [
            str(m)
            for (m,) in rm.db.execute(
                "SELECT memory_id FROM memories WHERE namespace=? AND subject_key=? "
                "AND predicate_normalized=? AND t_invalid IS NULL AND type='semantic' "
                "ORDER BY memory_id",
                (namespace, key, predicate),
            )
        ]
        ids += [
            m.memory_id
            for m in pending.memories.values()
            if m.namespace == namespace
            and m.type == "semantic"
            and m.subject is not None
            and subject_key(m.subject) == key
            and m.predicate_normalized == predicate
        ]
        found = [pending.get(i, rm) for i in dict.fromkeys(ids)]
        actives = [
            m for m in found
            if m is not None and m.object and m.t_invalid is None and _sees(agent_id, m)
        ]  # fmt: skip
        if not actives:
            return []
        vectors = self.embedder.embed_many([valid.object, *(m.object or "" for m in actives)])
        replaced: list[str] = []
        for old, vector in zip(actives, vectors[1:], strict=True):
            assert old.object is not None
            similarity = _cosine(vectors[0], vector)
            change = classify_object_change(
                valid.object,
                old.object,
                similarity,
                duplicate=self.settings.conflict_duplicate,
                different=self.settings.conflict_different,
            )
            if change == "duplicate":
                return old
            if change == "ambiguous":
                raise Refused(
                    f"{valid.subject} {valid.predicate} {valid.object!r} may or may not replace "
                    f"{old.memory_id} ({old.subject} {old.predicate} {old.object!r}); "
                    f"object similarity {similarity:.2f}",
                    code="conflict_ambiguous",
                    hint=f"pass supersedes={old.memory_id} to replace it, or store it as a "
                    "multi-valued fact to keep both",
                    details={"ids": [old.memory_id], "similarity": round(similarity, 4)},
                )
            replaced.append(old.memory_id)
        return replaced

    def _procedure_versions(
        self, namespace: str, name: str, pending: _Pending, agent_id: str | None
    ) -> list[Memory]:
        rm = self.projections.read_model
        ids = [
            str(m)
            for (m,) in rm.db.execute(
                "SELECT memory_id FROM memories WHERE namespace=? AND type='procedural' "
                "AND procedure_name=?",
                (namespace, name),
            )
        ]
        ids += [
            m.memory_id
            for m in pending.memories.values()
            if m.namespace == namespace and m.type == "procedural" and m.procedure_name == name
        ]
        found = (pending.get(i, rm) for i in dict.fromkeys(ids))
        return [m for m in found if m is not None and _sees(agent_id, m)]

    def _refuse_duplicates(
        self,
        memory_type: str,
        namespace: str,
        text: str,
        vector: np.ndarray[Any, Any],
        pending: _Pending,
        skip: set[str],
        agent_id: str | None,
    ) -> None:
        hits = [
            (str(hit.payload.get("memory_id")), hit.score)
            for hit in self.projections.backend.query_dense(
                self.projections.live.memories,
                [float(x) for x in vector],
                VectorFilter(
                    namespace=namespace,
                    types=(memory_type,),
                    only_valid=True,
                    agent_id=agent_id,
                ),
                5,
            )
        ]
        hits += [
            (memory_id, _cosine(vector, other))
            for memory_id, other in pending.vectors.items()
            if (m := pending.memories[memory_id]).namespace == namespace and m.type == memory_type
        ]
        rm = self.projections.read_model
        for memory_id, score in sorted(hits, key=lambda h: (-h[1], h[0])):
            if memory_id in skip or score < self.settings.dedup_threshold:
                continue
            old = pending.get(memory_id, rm)
            if old is None or old.t_invalid is not None or not _sees(agent_id, old):
                continue
            old_text = memory_text(old.type, old.body())
            if is_duplicate(min(score, 1.0), text, old_text, self.settings.dedup_threshold):
                raise Refused(
                    f"a similar memory exists: {memory_id} (similarity {score:.3f})",
                    code="duplicate",
                    hint=f"pass supersedes={memory_id} to replace it",
                    details={"ids": [memory_id], "similarity": round(score, 4)},
                )

    def _resolve_entities(
        self,
        names: Sequence[str],
        namespace: str,
        now: datetime,
        events: list[Event],
        known: Sequence[Candidate],
    ) -> tuple[tuple[ResolvedEntity, ...], list[Candidate]]:
        """Resolve names against ``known`` spellings; returns the spellings this adds."""
        added: list[Candidate] = []
        resolved: list[ResolvedEntity] = []
        for name in names:
            candidates = [*known, *added]
            found = resolve_entity(
                name,
                candidates,
                fuzzy_threshold=self.settings.entity_fuzzy,
                embedding_threshold=self.settings.entity_embedding,
                embedding_scores=self._name_similarity,
            )
            normalized = normalize_entity(name)
            if found.entity_id is None:
                entity_id = new_id("ent", now)
                events.append(
                    EntityCreated(
                        entity_id=entity_id, namespace=namespace, name=name, normalized=normalized
                    )
                )
                added.append(Candidate(entity_id, name, normalized))
                resolved.append(ResolvedEntity(name, entity_id, "new", 1.0, None))
                continue
            if found.kind in ("fuzzy", "embedding") and not any(
                c.normalized == normalized for c in candidates
            ):
                events.append(
                    EntityAliasAdded(
                        entity_id=found.entity_id,
                        namespace=namespace,
                        alias=name,
                        normalized=normalized,
                        match=_alias_match(found),
                        score=round(found.score, 6),
                    )
                )
                added.append(Candidate(found.entity_id, name, normalized))
            resolved.append(
                ResolvedEntity(name, found.entity_id, found.kind, found.score, found.matched)
            )
        return tuple(resolved), added

    def _name_similarity(self, name: str, candidates: Sequence[Candidate]) -> list[float]:
        vectors = self.embedder.embed_many([name, *(c.name for c in candidates)])
        return [_cosine(vectors[0], v) for v in vectors[1:]]

    # -- forget and validate ----------------------------------------------------------------

    def forget(self, ids: Sequence[str], *, cascade: bool = False) -> ForgetResult:
        """Remove memories from every projection; unknown ids are reported, not errors."""
        wanted = _checked_ids(ids)
        with self.journal.exclusive():
            check_journal_reserve(self.journal.directory)
            self.projections.catch_up()
            rm = self.projections.read_model
            found = rm.memories(memory_ids=wanted)
            found_ids = {m.memory_id for m in found}
            not_found = tuple(i for i in wanted if i not in found_ids)
            if not found:
                return ForgetResult((), not_found, (), None)
            by_namespace: dict[str, list[Memory]] = {}
            for memory in found:
                by_namespace.setdefault(memory.namespace, []).append(memory)
            events: list[Event] = []
            all_dropped: list[str] = []
            for namespace, memories in sorted(by_namespace.items()):
                dropped = self._unused_entities(memories, found_ids) if cascade else ()
                all_dropped.extend(dropped)
                events.append(
                    MemoriesForgotten(
                        memory_ids=tuple(m.memory_id for m in memories),
                        namespace=namespace,
                        reason="request",
                        dropped_entity_ids=dropped,
                    )
                )
            record = self.journal.append(events)
            self.projections.catch_up()
        order = [i for i in wanted if i in found_ids]
        return ForgetResult(tuple(order), not_found, tuple(all_dropped), record.position)

    def enforce_budget(self, budget: int) -> ForgetResult | None:
        """Evict (forget, reason ``eviction``) what the budget cannot hold, in the priority
        of ``ferrex.rules.eviction``; active facts and procedures are never evicted."""
        with self.journal.exclusive():
            self.projections.catch_up()
            memories = self.projections.read_model.memories()
            sizes = {m.memory_id: text_bytes(m) for m in memories}
            over = sum(sizes.values()) - budget
            if over <= 0:
                return None
            now = self.clock().timestamp()
            candidates = [
                eviction_candidate(a, sizes[a.memory.memory_id])
                for a in assess(memories, now, self.staleness)
            ]
            plan = eviction_plan(candidates, over, now)
            if not plan:
                return None
            by_id = {m.memory_id: m for m in memories}
            events: list[Event] = []
            namespaces = sorted({by_id[mid].namespace for mid, _ in plan})
            for namespace in namespaces:
                chosen = [(mid, why) for mid, why in plan if by_id[mid].namespace == namespace]
                events.append(
                    MemoriesForgotten(
                        memory_ids=tuple(mid for mid, _ in chosen),
                        namespace=namespace,
                        reason="eviction",
                        details=tuple(why for _, why in chosen),
                    )
                )
            record = self.journal.append(events)
            self.projections.catch_up()
        return ForgetResult(tuple(mid for mid, _ in plan), (), (), record.position)

    def _unused_entities(self, memories: Sequence[Memory], leaving: set[str]) -> tuple[str, ...]:
        db = self.projections.read_model.db
        linked = sorted({e for m in memories for e in m.entity_ids})
        unused = []
        for entity_id in linked:
            others = [
                str(m)
                for (m,) in db.execute(
                    "SELECT memory_id FROM memory_entities WHERE entity_id=?", (entity_id,)
                )
                if str(m) not in leaving
            ]
            if not others:
                unused.append(entity_id)
        return tuple(unused)

    def validate_memories(
        self, ids: Sequence[str], *, source: Literal["agent", "operator"] = "agent"
    ) -> ValidateResult:
        """Mark memories as confirmed correct now."""
        wanted = _checked_ids(ids)
        with self.journal.exclusive():
            check_journal_reserve(self.journal.directory)
            self.projections.catch_up()
            found = {m.memory_id for m in self.projections.read_model.memories(memory_ids=wanted)}
            ok = tuple(i for i in wanted if i in found)
            missing = tuple(i for i in wanted if i not in found)
            if not ok:
                return ValidateResult((), missing, None)
            record = self.journal.append(
                [MemoriesValidated(memory_ids=ok, at=self.clock(), source=source)]
            )
            self.projections.catch_up()
        return ValidateResult(ok, missing, record.position)


class _Pending:
    """Decisions of this batch not yet applied to the projections: what later requests of
    the same batch must see (memories and their invalidation, vectors, entity spellings)."""

    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}
        self.vectors: dict[str, np.ndarray[Any, Any]] = {}
        self.invalidated: dict[str, str] = {}  # committed memory -> superseded by
        self.spellings: dict[str, list[Candidate]] = {}

    def get(self, memory_id: str, rm: ReadModel) -> Memory | None:
        if memory_id in self.memories:
            return self.memories[memory_id]
        memory = rm.get(memory_id)
        if memory is not None and memory_id in self.invalidated:
            return replace(memory, t_invalid=0.0, superseded_by=self.invalidated[memory_id])
        return memory

    def candidates(self, namespace: str, rm: ReadModel) -> list[Candidate]:
        if namespace not in self.spellings:
            self.spellings[namespace] = [
                Candidate(str(e), str(a), str(n))
                for e, a, n in rm.db.execute(
                    "SELECT entity_id, alias, normalized FROM aliases WHERE namespace=? "
                    "ORDER BY normalized",
                    (namespace,),
                )
            ]
        return self.spellings[namespace]

    def add(
        self, event: MemoryStored, vector: np.ndarray[Any, Any], superseded: Sequence[str]
    ) -> None:
        body = event.body or MemoryBody()
        self.memories[event.memory_id] = Memory(
            memory_id=event.memory_id, namespace=event.namespace, type=event.memory_type,
            content=body.content, subject=body.subject, predicate=body.predicate,
            object=body.object, predicate_normalized=body.predicate_normalized,
            procedure_name=body.procedure_name, procedure_version=event.procedure_version,
            conditions=body.conditions, steps=body.steps, source=body.source,
            context=body.context, confidence=event.confidence, agent_id=event.agent_id,
            visibility=event.visibility, supersedes=event.supersedes,
            t_valid=event.t_valid.timestamp(), t_invalid=None, superseded_by=None,
            created_at=0.0, position=0, redacted=False, access_count=0, last_accessed=None,
            last_validated=None, entity_ids=event.entity_ids,
        )  # fmt: skip
        self.vectors[event.memory_id] = vector
        for old in superseded:
            if old in self.memories:
                self.memories[old] = replace(
                    self.memories[old], t_invalid=0.0, superseded_by=event.memory_id
                )
            else:
                self.invalidated[old] = event.memory_id


def _sees(agent_id: str | None, memory: Memory) -> bool:
    """Whether a store by ``agent_id`` may take ``memory`` into account: another agent's
    private memories neither make it a duplicate nor get superseded by it."""
    return (
        agent_id is None
        or memory.visibility == "shared"
        or memory.agent_id is None
        or memory.agent_id == agent_id
    )


def _body(valid: ValidStore) -> MemoryBody:
    return MemoryBody(
        content=valid.content,
        subject=valid.subject,
        predicate=valid.predicate,
        object=valid.object,
        procedure_name=valid.name,
        conditions=valid.conditions,
        steps=valid.steps,
        source=valid.source,
        context=valid.context,
    )


def _text(valid: ValidStore) -> str:
    return memory_text(valid.type, _body(valid))


def _checked_ids(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str) or not ids:
        raise UsageError("give at least one memory id", hint="recall shows memory ids")
    bad = [repr(i) for i in ids if not plausible_id(i)]
    if bad:
        raise UsageError(
            f"not a memory id: {', '.join(bad[:5])}",
            hint="ids are printable, without spaces, at most 64 characters",
        )
    return list(dict.fromkeys(ids))


def _cited(source: str | None) -> str | None:
    if source and source.startswith("memory:"):
        cited = source.removeprefix("memory:").strip()
        return cited if plausible_id(cited) else None
    return None


def _alias_match(found: Resolution) -> Literal["fuzzy", "embedding"]:
    return "embedding" if found.kind == "embedding" else "fuzzy"


def _fields(body: MemoryBody) -> dict[str, Any]:
    return {name: getattr(body, name) for name in body.__struct_fields__}
