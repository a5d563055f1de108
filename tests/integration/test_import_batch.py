"""An import asks Qdrant for a chunk's nearest memories in one batch of queries (issue 27),
and stores exactly what it stored asking one query per store.

Qdrant does not change while a chunk is decided (its records are applied after the
append), so the batch asked at the chunk's first dedup check sees what each store's own
query would have seen; the chunk's pending stores are compared by cosine as before.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ferrex import ids
from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.write import pipeline
from ferrex.write import writer as writer_module
from ferrex.write.writer import StoreResult
from projections.vectors import Hit, VectorFilter
from tests.integration.test_projections import snapshot

CHUNK = 4


def _requests() -> list[StoreRequest]:
    """Notes with copies inside one chunk (pending) and across chunks (committed), in two
    namespaces and two types, and one bad line."""
    said = [
        "the staging database moved to rack 4 on monday",
        "the invoice for the march sprint went to the vendor",
        "the staging database moved to rack 4 on monday",  # a copy of a pending store
        "lunch with the design team is on thursday at noon",
        "the invoice for the march sprint went to the vendor",  # a copy of a committed one
        "the release train leaves at noon on friday",
        "the laptop password policy changed in the autumn",
        "lunch with the design team is on thursday at noon",
        "the on-call rota for week 12 moved to desk 37",
        "the release train leaves at noon on friday",
    ]
    requests = [StoreRequest(content=text) for text in said]
    requests += [StoreRequest(content=said[0], namespace="other"), StoreRequest(content="")]
    requests += [StoreRequest(type="semantic", subject="staging database", predicate="located in",
                              object="rack 4")]  # fmt: skip
    return requests


def _near_requests() -> list[StoreRequest]:
    """Four notes, then in the next chunk (so their neighbours come from Qdrant) a near copy
    of three of them under the dedup threshold, and one over it that gives another number."""
    said = [
        "the staging database moved to rack 4 on monday",
        "lunch with the design team is on thursday at noon",
        "the release train leaves at noon on friday",
        "the invoice for the march sprint went to the vendor",
        "lunch with the design team is on thursday at one",  # cosine 0.93 to the second
        "the release train leaves friday at noon sharp",  # 0.92 to the third
        "we moved the staging db to rack four monday",  # 0.93 to the first
        "the staging database moved to rack 5 on monday",  # 0.95, another rack
    ]
    return [StoreRequest(content=text) for text in said]


def _deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids from a counter rather than the OS's randomness, so two homes can be compared."""
    counter = itertools.count()
    for module in (writer_module, pipeline):  # the writer's commands, and the stores
        monkeypatch.setattr(
            module, "new_id",
            lambda prefix, now: ids.new_id(prefix, now, random=lambda n: next(counter).to_bytes(n)),
        )  # fmt: skip


def _clock() -> Iterator[datetime]:
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    return (start + timedelta(seconds=n) for n in itertools.count())


def _import(
    home: Path,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    *,
    one_query_a_store: bool,
    requests: Sequence[StoreRequest] | None = None,
) -> tuple[list[StoreResult | FerrexError], list[Any], Any, list[int]]:
    """Store the requests in a fresh home: outcomes, journal events, projections' snapshot,
    and the number of queries in each call to ``query_dense_batch``."""
    _deterministic(monkeypatch)
    app = App(home=home, config=load(home, None), _embedder=embedder)
    try:
        writer = app.writer()
        ticks = _clock()
        writer.clock = lambda: next(ticks)
        backend = writer.projections.backend
        batched = backend.query_dense_batch
        calls: list[int] = []

        def counted(
            name: str,
            queries: Sequence[tuple[Sequence[float], VectorFilter]],
            limit: int,
            at_least: float | None = None,
        ) -> list[list[Hit]]:
            calls.append(len(queries))
            if one_query_a_store:  # as every store asked before: its own query, alone, all
                return [backend.query_dense(name, dense, flt, limit) for dense, flt in queries]
            return batched(name, queries, limit, at_least=at_least)

        monkeypatch.setattr(backend, "query_dense_batch", counted)
        outcomes = writer.store_many(_requests() if requests is None else requests, chunk=CHUNK)
        records = list(app.journal().read())
        events = [[_event(e) for e in record.events] for record in records]
        # The journal stamps each record with the wall clock: times modulo that.
        stamps = {record.recorded_at.timestamp() for record in records}
        return outcomes, events, _timeless(snapshot(app.projections()), stamps), calls
    finally:
        app.close()


def _event(event: Any) -> dict[str, Any]:
    """An event as plain data, but its body hash: keyed by the home's own secret."""
    plain: dict[str, Any] = msgspec.to_builtins(event)
    plain.pop("body_hash", None)
    return plain


def _timeless(value: Any, stamps: set[float]) -> Any:
    """``value`` with every number that is a record's time replaced by a marker."""
    if isinstance(value, float) and value in stamps:
        return "<recorded_at>"
    if isinstance(value, dict):
        return {k: _timeless(v, stamps) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_timeless(v, stamps) for v in value)
    return value


def _plain(outcome: StoreResult | FerrexError) -> object:
    """An outcome comparable with ``==`` (an error is an exception: compared by identity)."""
    if isinstance(outcome, FerrexError):
        return type(outcome), outcome.code, str(outcome), getattr(outcome, "details", None)
    return outcome


def test_an_import_asks_each_chunks_nearest_memories_at_once_and_stores_the_same(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes, events, stored, calls = _import(
        tmp_path / "batched", shared_embedder, monkeypatch, one_query_a_store=False
    )
    statuses = [o.status if isinstance(o, StoreResult) else o.code for o in outcomes]
    assert statuses.count("duplicate") == 4 and statuses[-2] == "invalid_input"
    assert statuses[10] == "stored"  # the same words in another namespace
    # One call a chunk of valid stores (12 of them: 3 chunks), however many stores ask.
    assert len(calls) == 3 and calls[0] == CHUNK
    again = _import(tmp_path / "alone", shared_embedder, monkeypatch, one_query_a_store=True)
    assert [_plain(o) for o in again[0]] == [_plain(o) for o in outcomes]
    assert again[1] == events
    assert again[2] == stored


def test_near_memories_of_an_earlier_chunk_are_named_alike_batched_or_alone(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The batch asks Qdrant only for neighbours at or above the dedup check's floor; each
    # store asking alone, for all of them, names the same ones.
    near = _near_requests()
    outcomes, events, stored, _ = _import(
        tmp_path / "batched", shared_embedder, monkeypatch, one_query_a_store=False,
        requests=near,
    )  # fmt: skip
    assert all(isinstance(o, StoreResult) and o.status == "stored" for o in outcomes)
    first = [o.id for o in outcomes[:4] if isinstance(o, StoreResult)]
    similar = [o.similar for o in outcomes[4:] if isinstance(o, StoreResult)]
    assert [s.id if s else None for s in similar] == [first[1], first[2], first[0], first[0]]
    assert all(s is not None and 0.88 <= s.similarity < 1.0 for s in similar)
    assert similar[3] is not None and similar[3].kept_because is not None
    again = _import(tmp_path / "alone", shared_embedder, monkeypatch, one_query_a_store=True,
                    requests=near)  # fmt: skip
    assert [_plain(o) for o in again[0]] == [_plain(o) for o in outcomes]
    assert again[1] == events
    assert again[2] == stored


def test_a_reimport_asks_qdrant_nothing_and_changes_nothing(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyed = [
        StoreRequest(content=f"line {n}: the rota for week {n} moved", import_key=f"line {n}")
        for n in range(6)
    ]
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer = app.writer()
        first = writer.store_many(keyed, chunk=CHUNK)
        assert all(isinstance(o, StoreResult) and o.status == "stored" for o in first)
        head = app.journal().head.position
        before = snapshot(app.projections())
        calls: list[int] = []
        batched = writer.projections.backend.query_dense_batch

        def counted(name: str, queries: Any, limit: int, **kw: Any) -> list[list[Hit]]:
            calls.append(len(queries))
            return batched(name, queries, limit, **kw)

        monkeypatch.setattr(writer.projections.backend, "query_dense_batch", counted)
        again = writer.store_many(keyed, chunk=CHUNK)
        assert [o.code for o in again if isinstance(o, FerrexError)] == ["duplicate"] * 6
        assert calls == []  # refused by import key before any dedup check
        assert app.journal().head.position == head
        assert snapshot(app.projections()) == before
    finally:
        app.close()
