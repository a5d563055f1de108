"""The write side: store, forget, validate, access flushes and eviction over one journal.

:class:`Writer` is the only thing that appends memory commands. Each command: validate the
input (nothing written on bad input) → decide with the pure rules of
:mod:`ferrex.core.decide`, which ask what they need measured as they reach it (the
embedding model and Qdrant answer, through :class:`~ferrex.write.measures.StoreMeasures`:
the nearest memories, cosine similarities of names, objects and predicate phrases) →
append and apply through the :class:`~ferrex.core.runner.CommandRunner` (a dump restore's
own decisions too, :meth:`Writer.run`). The events record the *outcomes* of the decisions,
so a replay never decides again.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from ferrex.core.decide import (
    ConsolidateResult,
    Decision,
    EntityAction,
    EntityResult,
    Folding,
    ForgetResult,
    MarkResult,
    ResolvedEntity,
    SettleResult,
    StoreResult,
    UnfoldResult,
    ValidateResult,
    confirmable,
    consolidation_groups,
    decide_access,
    decide_consolidate,
    decide_entity,
    decide_eviction,
    decide_expiry,
    decide_forget,
    decide_mark,
    decide_refold,
    decide_settle,
    decide_store,
    decide_unfold,
    decide_validate,
    neighbour_floor,
    store_text,
)
from ferrex.core.runner import Batch, CommandRunner, Decide
from ferrex.core.settings import StoreSettings
from ferrex.errors import FerrexError, UsageError
from ferrex.ids import new_id
from ferrex.models import Embedder
from ferrex.models.remote import ServerDown
from ferrex.rules.entities import normalize_entity
from ferrex.rules.memory_input import StoreRequest, ValidStore, validate
from ferrex.rules.predicates import normalize_predicate
from ferrex.write.measures import Pending, StoreMeasures, nearest
from journal import JournalBackend
from projections.documents import subject_key
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
A = TypeVar("A")
log = logging.getLogger("ferrex")

#: Chunks of an import whose texts are embedded in one go: the encoder sorts them by length
#: into its batches, and more texts to sort means less padding (256 texts a chunk: 4 chunks
#: cost some 10-15% less model CPU than one at a time).
EMBED_CHUNKS = 4
#: A store that waited this long for the embedding model to load says so in its warnings.
WAIT_WORTH_SAYING = 0.1
_VECTORS = "vectors"  # Batch.scratch key: the vectors of the chunk's pending stores
_NEAREST = "nearest"  # Batch.scratch key: the committed nearest memories, by store index
_AHEAD = "ahead"  # Batch.scratch key: vectors read for the nearest queries, by store index


def _now() -> datetime:
    return datetime.now(UTC)


class _Inline:
    """A stand-in for the worker pool that runs a task at once, in the calling thread."""

    def submit(self, task: Callable[[A], None], part: A) -> Future[None]:
        done: Future[None] = Future()
        try:
            task(part)
        except BaseException as exc:
            done.set_exception(exc)
        else:
            done.set_result(None)
        return done

    def shutdown(self, *, wait: bool, cancel_futures: bool) -> None:
        return None


class Writer:
    """The command side over one journal and its projections."""

    def __init__(
        self,
        journal: JournalBackend,
        projections: Projections,
        embedder: Embedder,
        settings: StoreSettings | None = None,
        clock: Clock = _now,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.journal = journal
        self.projections = projections
        self.embedder = embedder
        self.settings = settings or StoreSettings()
        self.clock = clock
        self._runner: CommandRunner[Any, Any] = CommandRunner(
            journal, projections, before_write=before_write
        )

    def new_id(self, prefix: str) -> str:
        return new_id(prefix, self.clock())

    # -- store ------------------------------------------------------------------------------

    def store(self, request: StoreRequest, *, multi_valued: bool = False) -> StoreResult:
        """Store one memory (see :mod:`ferrex.core.decide` for the rules).

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
        # The first chunk's texts go to the model while the rest are validated.
        early: list[threading.Thread] = []
        first = (chunk, lambda valid: early.append(self._embedding_ahead(valid)))
        try:
            outcomes, valids = self._validated(requests, first if len(requests) > chunk else None)
            done = len(requests) - len(valids)
            if not valids:
                if progress is not None:
                    progress(done, len(requests))
                return [o for o in outcomes if o is not None]
            # Loaded outside the writer lock, so a first store does not hold up other writers.
            try:
                waited = self.embedder.wait_for_model()
            except ServerDown as exc:  # nothing decided, nothing written
                for i, _ in valids:
                    outcomes[i] = exc
                return [o for o in outcomes if o is not None]
        finally:
            for thread in early:  # the pipeline's first chunk then finds its vectors cached
                thread.join()

        def report(finished: int) -> None:
            if progress is not None:
                progress(done + finished, len(requests))

        with self._holding_sync(len(valids) > chunk):
            decided = self._pipelined([v for _, v in valids], multi_valued, chunk, report)
        wait_note = (
            (f"waited {waited:.1f} s for the embedding model to load",)
            if waited >= WAIT_WORTH_SAYING
            else ()
        )
        for (i, valid), outcome in zip(valids, decided, strict=True):
            outcomes[i] = _noted(outcome, valid, wait_note)
        if self.settings.budget_bytes is not None and any(
            isinstance(o, StoreResult) and o.stored for o in decided
        ):
            self.enforce_budget(self.settings.budget_bytes)
        assert all(o is not None for o in outcomes)
        return [o for o in outcomes if o is not None]

    def _embedding_ahead(self, valid: Sequence[ValidStore]) -> threading.Thread:
        """A thread embedding ``valid``'s texts (their vectors into the cache), started. A
        failure is only logged: it is met again, and reported, when the pipeline embeds
        them."""
        texts = [store_text(v) for v in valid]

        def embed() -> None:
            try:
                if texts:
                    self.embedder.embed_many(texts)
            except Exception as exc:
                log.debug("embedding an import's first chunk ahead failed: %s", exc)

        thread = threading.Thread(target=embed, name="ferrex-embed-first", daemon=True)
        thread.start()
        return thread

    def _validated(
        self,
        requests: Sequence[StoreRequest],
        first: tuple[int, Callable[[Sequence[ValidStore]], None]] | None = None,
    ) -> tuple[list[StoreResult | FerrexError | None], list[tuple[int, ValidStore]]]:
        """Each request validated: the refusals in their places of the outcomes, the valid
        ones by index. Validation needs the tokenizer only: a bad store is refused without
        waiting for the model, which the dedup check is the first to need.

        ``first = (n, call)``: ``call`` is given the valid ones of the first ``n`` requests
        as soon as they are validated, before the rest are."""
        counter = self.embedder.counter()
        # Many requests (an import): the model loads on its own thread while they are
        # validated. One store still never waits for a model it may not need.
        preload = len(requests) > 1 and not self.embedder.loaded
        if preload:
            self.embedder.load_in_background()
        outcomes: list[StoreResult | FerrexError | None] = [None] * len(requests)
        valids: list[tuple[int, ValidStore]] = []
        # A text that surely fits the window is not tokenised to check it (the model will).
        count = counter.count_unless_fits
        for i, request in enumerate(requests):
            if first is not None and i == first[0]:
                first[1]([v for _, v in valids])
            try:
                valids.append(
                    (i, validate(request, self.settings.limits, count_tokens=count,
                                 window=counter.window, secrets=self.settings.secrets))
                )  # fmt: skip
            except FerrexError as exc:
                outcomes[i] = exc
        if preload and not valids:  # let the load end here, not at the interpreter's exit
            self.embedder.join_loader()
        return outcomes, valids

    def _pipelined(
        self,
        items: Sequence[ValidStore],
        multi_valued: bool,
        chunk: int,
        report: Callable[[int], None],
    ) -> list[Any]:
        """Decide, append and apply ``items`` chunk by chunk, one outcome each, in order.

        Chunk by chunk, so that when the embeddings server goes away part way (a chunk's
        texts are embedded before its lock), the chunks already written keep their outcomes
        and the rest fail with backend_unavailable, none of them half-written. Pipelined:
        the next chunks' texts are embedded on a worker thread while this one is decided,
        appended and applied (ONNX Runtime and SQLite let go of the GIL), so the model never
        waits for the writer; a few chunks at a time (:func:`embedding_units`), so that
        the encoder's batches of similar length are padded less."""

        def decide(item: tuple[int, Sequence[ValidStore]], batch: Batch) -> Any:
            return self._decide(item, batch, multi_valued)

        parts = [items[start : start + chunk] for start in range(0, len(items), chunk)]
        units = embedding_units(len(parts))
        following = {unit.start: n for n, unit in enumerate(units)}  # first chunk → its unit

        def prepare(unit: range) -> None:
            # Batched embedding: the decisions and the projection then hit the cache.
            texts = [store_text(v) for n in unit for v in parts[n]]
            also = [t for n in unit for v in parts[n] for t in self._ahead(v, multi_valued)]
            self.embedder.embed_many(texts + also)

        decided: list[Any] = []
        # One chunk (a single store) has nothing to overlap: no thread for it.
        pool = _Inline() if len(parts) == 1 else ThreadPoolExecutor(1, "ferrex-embed")
        try:
            ahead: Future[None] = pool.submit(prepare, units[0])
            for n, part in enumerate(parts):
                start = len(decided)

                def reported(finished: int, _total: int, start: int = start) -> None:
                    report(start + finished)

                try:
                    if n in following:  # this chunk's unit: embedded (or failed) by now
                        ahead.result()
                        if following[n] + 1 < len(units):
                            ahead = pool.submit(prepare, units[following[n] + 1])
                    at = [(i, part) for i in range(len(part))]
                    decided += self._runner.run(at, decide, chunk=chunk, progress=reported)
                except ServerDown as exc:
                    log.warning("stores stopped after %d of %d: %s", start, len(items), exc.message)
                    decided += [exc] * (len(items) - start)
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return decided

    def _ahead(self, valid: ValidStore, multi_valued: bool) -> list[str]:
        """The texts besides its own that a store is likely to embed once it holds the writer
        lock, embedded with its own text before it instead (a text's vector does not depend
        on its batch), so that other writers do not wait for the model: a fact's object and
        the objects of its subject's active facts of the same predicate, which the decision
        weighs it against (``_fact_conflicts``), when the read model holds such facts; and
        the names it gives (a fact's subject, its ``entities``) that no spelling of its
        namespace has, whose new entity or alias is embedded as a spelling's point when the
        record is applied. A guess: a text missed is embedded under the lock as before, one
        guessed wrongly costs only its embedding."""
        names = [*([valid.subject] if valid.type == "semantic" and valid.subject else []),
                 *valid.entities]  # fmt: skip
        weighed = (
            valid.type == "semantic"
            and not multi_valued
            and valid.supersedes is None
            and bool(valid.subject and valid.predicate and valid.object)
        )
        if not names and not weighed:
            return []
        namespace = valid.namespace or self.settings.default_namespace
        rm = self.projections.read_model
        with self.projections.reading():
            spelled = {s.normalized for s in rm.spellings(namespace)} if names else set()
            facts = rm.subject_facts(namespace, subject_key(valid.subject or "")) if weighed else []
        ahead = [name for name in names if normalize_entity(name) not in spelled]
        if weighed:
            assert valid.predicate is not None and valid.object is not None
            predicate = normalize_predicate(valid.predicate, self.settings.synonyms_for(namespace))
            others = [
                m.object
                for m in facts
                if m.t_invalid is None and m.predicate_normalized == predicate and m.object
            ]
            ahead += [valid.object, *others] if others else []  # fmt: skip
        return ahead

    def _decide(
        self, item: tuple[int, Sequence[ValidStore]], batch: Batch, multi_valued: bool
    ) -> Any:
        """Decide the store at ``item = (i, chunk)``; what it asks to measure (the only I/O)
        is measured then."""
        i, part = item
        valid = part[i]
        ahead: dict[int, Any] = batch.scratch.setdefault(_AHEAD, {})
        vector = ahead.pop(i) if i in ahead else self.embedder.embed(store_text(valid))
        pending: Pending = batch.scratch.setdefault(_VECTORS, Pending())
        floor = neighbour_floor(self.settings)

        def neighbours() -> list[tuple[str, float]]:
            return self._committed_nearest(item, batch, vector) + pending.cosines(vector, floor)

        measures = StoreMeasures(self.embedder.embed_many, neighbours)
        now = self.clock()
        decision = decide_store(
            valid,
            batch.view,
            measures,
            now=now,
            new_id=lambda prefix: new_id(prefix, now),
            settings=self.settings,
            multi_valued=multi_valued,
        )
        if decision.result.stored:
            pending.add(decision.result.id, vector)
        return decision

    def _committed_nearest(
        self, item: tuple[int, Sequence[ValidStore]], batch: Batch, vector: Any
    ) -> list[tuple[str, float]]:
        """The nearest committed memories of the store at ``item = (i, chunk)``, whose vector
        is ``vector``. Qdrant does not change while a chunk is decided (its records are
        applied after the append), so the first store that asks asks for itself and every
        later store of the chunk in one batch of queries; the later ones find their answer,
        and their vector, kept in the batch's scratch."""
        i, part = item
        found: dict[int, list[tuple[str, float]]] = batch.scratch.setdefault(_NEAREST, {})
        if i not in found:
            later = self.embedder.embed_many([store_text(v) for v in part[i + 1 :]])
            batch.scratch.setdefault(_AHEAD, {}).update(enumerate(later, start=i + 1))
            vectors = [vector, *later]
            answers = nearest(self.projections, list(zip(part[i:], vectors, strict=True)),
                              self.settings)  # fmt: skip
            found.update(enumerate(answers, start=i))
        return found[i]

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

        with self._holding_sync(len(items) > chunk):
            outcomes: list[R | FerrexError] = self._runner.run(
                items, decide, chunk=chunk, prepare=prepare, progress=progress
            )
        return outcomes

    @contextmanager
    def _holding_sync(self, many: bool) -> Iterator[None]:
        """More than one chunk (an import): the vectors are flushed once at the end rather
        than every second (:meth:`Projections.holding_sync`); one chunk keeps the usual rule.

        The records are in the journal by then: a failed flush is logged, not raised (the
        vectors are re-applied from the checkpoint at the next start)."""
        if not many:
            yield
            return
        held = self.projections.holding_sync()
        held.__enter__()
        try:
            yield
        finally:
            try:
                held.__exit__(None, None, None)
            except Exception as exc:
                log.warning("ferrex: flushing the vectors after an import failed: %s", exc,
                            exc_info=True)  # fmt: skip

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
        show are refused (:func:`ferrex.core.decide.confirmable`), nothing written."""
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
        decide_settle`): pairs that both hold, or the one fact a confirmed fact replaces."""
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
        (:func:`ferrex.core.decide.decide_entity`): one journal event."""
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

        def decide(_: None, batch: Batch) -> Any:
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
        """Evict what the budget cannot hold (see :func:`ferrex.core.decide.decide_eviction`)."""

        def decide(_: None, batch: Batch) -> Any:
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
        (:func:`~ferrex.core.decide.decide_refold`): a forgotten source's sentences leave
        its summary's text in the same record."""
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
        """The groups a consolidation would fold now (see ``decide.consolidation_groups``)."""
        created_before = _cutoff(self.clock(), older_than_days)
        self.projections.catch_up()
        found = self.projections.read_model.decisions.foldable(
            created_before=created_before, namespace=namespace, agent_id=agent_id
        )
        return consolidation_groups(found, created_before=created_before)

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
                    key, members, created_before=created_before, now=self.clock(),
                    summary_id=f"(summary {n + 1})", keep_ratio=ratio, unit=unit,
                )  # fmt: skip
                planned += d.result.summaries
            return ConsolidateResult(tuple(planned), dry_run=True)

        def decide(item: tuple[str, Sequence[Memory]], batch: Batch) -> Any:
            key, members = item
            current = [m for m in (batch.view.memory(x.memory_id) for x in members) if m]
            return decide_consolidate(
                key, current, created_before=created_before, now=self.clock(),
                summary_id=self.new_id("mem"), keep_ratio=ratio, unit=unit,
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

    def unfold(self, summary_id: str) -> UnfoldResult:
        """Undo one consolidation: its memories back in recall, the summary forgotten."""

        def decide(sid: str, batch: Batch) -> Any:
            return decide_unfold(sid, batch.view, self.projections.read_model.folded(sid))

        result: UnfoldResult = self._runner.run_one(summary_id, decide)
        return result

    def unfold_many(self, summary_ids: Sequence[str]) -> list[UnfoldResult]:
        """Undo these consolidations, one command each (a summary already gone, undone or
        forgotten meanwhile, is passed over); any other refusal is raised, and what was
        undone before it stays undone."""

        def decide(sid: str, batch: Batch) -> Any:
            return decide_unfold(sid, batch.view, self.projections.read_model.folded(sid))

        done: list[UnfoldResult] = []
        for outcome in self._runner.run(list(summary_ids), decide, chunk=64):
            if isinstance(outcome, FerrexError):
                if outcome.code == "not_found":
                    continue
                raise outcome
            done.append(outcome)
        return done


def embedding_units(chunks: int, most: int = EMBED_CHUNKS) -> list[range]:
    """The runs of consecutive chunks whose texts are embedded together: the first chunk
    alone (the decisions start soon), then up to ``most`` at a time, and the last alone (the
    decisions left once the model is done are few). In order, covering every chunk once."""
    if chunks <= 2:
        return [range(n, n + 1) for n in range(chunks)]
    middle = [range(n, min(n + most, chunks - 1)) for n in range(1, chunks - 1, most)]
    return [range(0, 1), *middle, range(chunks - 1, chunks)]


def _noted(outcome: Any, valid: ValidStore, wait_note: tuple[str, ...]) -> Any:
    """A store's outcome with what the caller should hear beside it: the wait for the
    model, and the likely secrets redacted before it was stored."""
    if wait_note and isinstance(outcome, StoreResult):
        outcome = replace(outcome, warnings=(*outcome.warnings, *wait_note))
    if valid.redacted and isinstance(outcome, StoreResult):
        notes = tuple(f"redacted {s.describe()}" for s in valid.redacted)
        outcome = replace(
            outcome,
            warnings=(*outcome.warnings, *notes),
            redacted=tuple(s.as_dict() for s in valid.redacted),
        )
    return outcome


def _cutoff(now: datetime, older_than_days: float) -> float:
    if not math.isfinite(older_than_days) or older_than_days < 0:
        raise UsageError(
            f"the age must be a number of days, 0 or more, not {older_than_days!r}",
            hint="--older-than 30 folds what ferrex learned more than 30 days ago",
        )
    return now.timestamp() - older_than_days * 86400.0
