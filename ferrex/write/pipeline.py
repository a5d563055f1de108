"""The store pipeline: many stores (an import, or one) validated, embedded and decided.

:meth:`Writer.store_many <ferrex.write.writer.Writer.store_many>` runs one
:class:`StorePipeline` per call. Requests are validated first (the tokenizer only: a bad
store is refused without waiting for the model), the first chunk's texts embedded while the
rest are; then chunk by chunk, each decided under one writer lock and appended as one group
commit through the :class:`~ferrex.core.runner.CommandRunner`, the next chunks' texts embedded
on a worker thread meanwhile (:func:`embedding_units`). What a decision asks to measure (the
nearest memories, cosines) is measured through :class:`~ferrex.write.measures.StoreMeasures`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from ferrex.core.decide import Decision
from ferrex.core.decide.copies import neighbour_floor
from ferrex.core.decide.store import StoreResult, decide_store, store_text
from ferrex.core.runner import Batch, CommandRunner
from ferrex.core.settings import StoreSettings
from ferrex.errors import FerrexError
from ferrex.ids import new_id
from ferrex.models import Embedder
from ferrex.models.remote import ServerDown
from ferrex.rules.entities import normalize_entity
from ferrex.rules.memory_input import StoreRequest, ValidStore, validate
from ferrex.rules.predicates import normalize_predicate
from ferrex.write.measures import ChunkVectors, StoreMeasures, nearest
from projections.documents import subject_key
from projections.readmodel.predicates import is_current
from projections.replay import Projections

A = TypeVar("A")
log = logging.getLogger("ferrex")

#: Chunks of an import whose texts are embedded in one go: the encoder sorts them by length
#: into its batches, and more texts to sort means less padding (256 texts a chunk: 4 chunks
#: cost some 10-15% less model CPU than one at a time).
EMBED_CHUNKS = 4
#: A store that waited this long for the embedding model to load says so in its warnings.
WAIT_WORTH_SAYING = 0.1


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


@dataclass(frozen=True, eq=False)
class StorePipeline:
    """One :meth:`~ferrex.write.writer.Writer.store_many` call, over the writer's runner,
    projections, model, settings and clock as they are when it starts."""

    runner: CommandRunner
    projections: Projections
    embedder: Embedder
    settings: StoreSettings
    clock: Callable[[], datetime]

    def store_many(
        self,
        requests: Sequence[StoreRequest],
        *,
        multi_valued: bool,
        chunk: int,
        progress: Callable[[int, int], None] | None,
    ) -> list[StoreResult | FerrexError]:
        """One outcome per request, in order: :meth:`Writer.store_many
        <ferrex.write.writer.Writer.store_many>` but for the budget, which is the writer's to
        enforce after (its arguments, their defaults and what they do are said there)."""
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

        with holding_sync(self.projections, len(valids) > chunk):
            decided = self._pipelined([v for _, v in valids], multi_valued, chunk, report)
        wait_note = (
            (f"waited {waited:.1f} s for the embedding model to load",)
            if waited >= WAIT_WORTH_SAYING
            else ()
        )
        for (i, valid), outcome in zip(valids, decided, strict=True):
            outcomes[i] = _noted(outcome, valid, wait_note)
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
    ) -> list[StoreResult | FerrexError]:
        """Decide, append and apply ``items`` chunk by chunk, one outcome each, in order.

        Chunk by chunk, so that when the embeddings server goes away part way (a chunk's
        texts are embedded before its lock), the chunks already written keep their outcomes
        and the rest fail with backend_unavailable, none of them half-written. Pipelined:
        the next chunks' texts are embedded on a worker thread while this one is decided,
        appended and applied (ONNX Runtime and SQLite let go of the GIL), so the model never
        waits for the writer; a few chunks at a time (:func:`embedding_units`), so that
        the encoder's batches of similar length are padded less."""

        def decide(item: tuple[int, Sequence[ValidStore]], batch: Batch) -> Decision[StoreResult]:
            return self._decide(item, batch, multi_valued)

        parts = [items[start : start + chunk] for start in range(0, len(items), chunk)]
        units = embedding_units(len(parts))
        following = {unit.start: n for n, unit in enumerate(units)}  # first chunk → its unit

        def prepare(unit: range) -> None:
            # Batched embedding: the decisions and the projection then hit the cache.
            texts = [store_text(v) for n in unit for v in parts[n]]
            also = [t for n in unit for v in parts[n] for t in self._ahead(v, multi_valued)]
            self.embedder.embed_many(texts + also)

        decided: list[StoreResult | FerrexError] = []
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
                    done = self.runner.run(at, decide, chunk=chunk, progress=reported)
                    decided += done
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
                if is_current(m) and m.predicate_normalized == predicate and m.object
            ]
            ahead += [valid.object, *others] if others else []  # fmt: skip
        return ahead

    def _decide(
        self, item: tuple[int, Sequence[ValidStore]], batch: Batch, multi_valued: bool
    ) -> Decision[StoreResult]:
        """Decide the store at ``item = (i, chunk)``; what it asks to measure (the only I/O)
        is measured then."""
        i, part = item
        valid = part[i]
        kept = batch.state(ChunkVectors)
        ahead = kept.ahead
        vector = ahead.pop(i) if i in ahead else self.embedder.embed(store_text(valid))
        pending = kept.pending
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
        self, item: tuple[int, Sequence[ValidStore]], batch: Batch, vector: NDArray[np.float32]
    ) -> list[tuple[str, float]]:
        """The nearest committed memories of the store at ``item = (i, chunk)``, whose vector
        is ``vector``. Qdrant does not change while a chunk is decided (its records are
        applied after the append), so the first store that asks asks for itself and every
        later store of the chunk in one batch of queries; the later ones find their answer,
        and their vector, kept for the chunk (``Batch.state``)."""
        i, part = item
        kept = batch.state(ChunkVectors)
        found = kept.nearest
        if i not in found:
            later = self.embedder.embed_many([store_text(v) for v in part[i + 1 :]])
            kept.ahead.update(enumerate(later, start=i + 1))
            vectors = [vector, *later]
            answers = nearest(self.projections, list(zip(part[i:], vectors, strict=True)),
                              self.settings)  # fmt: skip
            found.update(enumerate(answers, start=i))
        return found[i]


@contextmanager
def holding_sync(projections: Projections, many: bool) -> Iterator[None]:
    """More than one chunk (an import): the vectors are flushed once at the end rather
    than every second (:meth:`Projections.holding_sync`); one chunk keeps the usual rule.

    The records are in the journal by then: a failed flush is logged, not raised (the
    vectors are re-applied from the checkpoint at the next start)."""
    if not many:
        yield
        return
    held = projections.holding_sync()
    held.__enter__()
    try:
        yield
    finally:
        try:
            held.__exit__(None, None, None)
        except Exception as exc:
            log.warning("ferrex: flushing the vectors after an import failed: %s", exc,
                        exc_info=True)  # fmt: skip


def embedding_units(chunks: int, most: int = EMBED_CHUNKS) -> list[range]:
    """The runs of consecutive chunks whose texts are embedded together: the first chunk
    alone (the decisions start soon), then up to ``most`` at a time, and the last alone (the
    decisions left once the model is done are few). In order, covering every chunk once."""
    if chunks <= 2:
        return [range(n, n + 1) for n in range(chunks)]
    middle = [range(n, min(n + most, chunks - 1)) for n in range(1, chunks - 1, most)]
    return [range(0, 1), *middle, range(chunks - 1, chunks)]


def _noted(
    outcome: StoreResult | FerrexError, valid: ValidStore, wait_note: tuple[str, ...]
) -> StoreResult | FerrexError:
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
