"""Pins, importance and expiry on real parts: journal, SQLite, Qdrant Edge, the model.

Importance at its default leaves recall exactly as it was; a pinned memory stays in recall
when its twin goes stale; an expired memory is hidden at once and the sweep forgets it; a
rebuild from the journal reproduces every mark and the sweep's outcome; a dump carries the
marks and a restore brings them back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ferrex.models import Embedder
from ferrex.models.rerank import RerankStage, choose_reranker
from ferrex.porting.dump import write_dump
from ferrex.porting.dump_read import is_header, parse_line
from ferrex.porting.restore import restore_many
from ferrex.read.access import AccessLog
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class World:
    writer: Writer
    reader: Reader
    clock: Clock

    def recall(self, query: str, **kw: object) -> dict[str, dict[str, object]]:
        result = self.reader.recall(RecallRequest(query=query, limit=20, **kw))  # type: ignore[arg-type]
        return {str(r["id"]): r for r in result.results}


def _world(root: Path, encoders: Encoders, embedder: Embedder) -> Iterator[World]:
    clock = Clock()
    journal = Journal.open(root / "journal", clock=clock)
    backend = EdgeBackend(root / "qdrant")
    projections = Projections.open(root, journal, backend, encoders)
    writer = Writer(journal, projections, embedder, StoreSettings(), clock=clock)
    off = RerankStage(choose_reranker("none", {}))
    reader = Reader(projections, embedder, off, access=AccessLog(), clock=clock)
    yield World(writer, reader, clock)
    projections.close()
    backend.close()
    journal.close()


@pytest.fixture
def world(tmp_path: Path, encoders: Encoders, shared_embedder: Embedder) -> Iterator[World]:
    yield from _world(tmp_path / "a", encoders, shared_embedder)


def note(text: str, **kw: object) -> StoreRequest:
    return StoreRequest(content=text, **kw)  # type: ignore[arg-type]


NOTES = [
    "Billing-api deploys go through the blue-green pipeline",
    "The billing-api deploy failed on Tuesday because of a missing secret",
    "Search indexes rebuild nightly at 02:00",
    "Deploy freeze for billing-api during the December audit",
    "The ingest job pins numpy below 2.0",
    "Rollback of billing-api takes about four minutes",
]


def test_importance_at_its_default_leaves_recall_exactly_as_it_was(world: World) -> None:
    ids = [world.writer.store(note(text)).id for text in NOTES]
    query = "billing-api deploy"

    def scores() -> list[tuple[str, object]]:
        return [(i, r["score"]) for i, r in world.recall(query).items()]

    before = scores()
    assert len(before) >= 4
    target = before[-1][0]
    world.writer.mark([target], importance=1.0)
    lifted = dict(scores())
    assert lifted[target] == pytest.approx(float(dict(before)[target]) * 1.25, abs=2e-6)  # type: ignore[arg-type]
    assert {i: s for i, s in lifted.items() if i != target} == {
        i: s for i, s in before if i != target
    }
    # Back to the default: an event is journaled, and the ranking is today's again, exactly.
    head = world.writer.journal.refresh().position
    world.writer.mark([target], importance=0.5)
    assert world.writer.journal.refresh().position == head + 1
    assert scores() == before
    explained = world.recall(query, explain=True)[ids[0]]["explain"]
    assert explained["importance"] == {"value": 0.5, "factor": 1.0}  # type: ignore[index]


def test_a_pinned_memory_is_never_hidden_as_stale(world: World) -> None:
    kept = world.writer.store(note("The ingest job pins numpy below 2.0", pinned=True))
    twin = world.writer.store(note("The export job pins pandas below 3.0"))
    world.clock.now = START + timedelta(days=400)
    found = world.recall("job pins numpy pandas")
    assert kept.id in found and twin.id not in found
    assert found[kept.id]["pinned"] is True
    assert found[kept.id]["freshness"]["label"] == "fresh"  # type: ignore[index]
    result = world.reader.recall(RecallRequest(query="job pins numpy pandas"))
    assert result.hidden == {"stale": 1}


def test_an_expired_memory_is_hidden_at_once_and_the_sweep_forgets_it(world: World) -> None:
    scratch = world.writer.store(note("Scratch: trying the cache flag on billing-api", ttl="90s"))
    kept = world.writer.store(note("The cache flag on billing-api is off by default"))
    assert scratch.expires_at == START + timedelta(seconds=90)
    assert set(world.recall("cache flag billing-api")) == {scratch.id, kept.id}
    assert world.writer.sweep_expired().forgotten == ()

    world.clock.now = START + timedelta(seconds=90)
    found = world.reader.recall(RecallRequest(query="cache flag billing-api"))
    assert [r["id"] for r in found.results] == [kept.id] and found.hidden == {"expired": 1}
    swept = world.writer.sweep_expired()
    assert swept.forgotten == (scratch.id,)
    rm = world.writer.projections.read_model
    assert rm.get(scratch.id) is None and rm.get(kept.id) is not None
    assert world.reader.recall(RecallRequest(query="cache flag billing-api")).hidden == {}
    assert world.writer.sweep_expired().forgotten == ()  # nothing twice

    # A replay reads no clock: the sweep's event carries its outcome.
    before = rm.maintenance.dump()
    world.writer.projections.rebuild()
    assert world.writer.projections.read_model.maintenance.dump() == before


def test_marks_survive_a_rebuild_and_a_dump_and_restore(
    world: World, tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> None:
    pinned = world.writer.store(note("Payments approvals live in the finance wiki", pinned=True,
                                     importance=0.8))  # fmt: skip
    scratch = world.writer.store(note("Scratch: draft of the audit reply", ttl="2h"))
    plain = world.writer.store(note("Search indexes rebuild nightly"))
    world.writer.mark([scratch.id], importance=0.3)
    rm = world.writer.projections.read_model
    before = rm.maintenance.dump()
    world.writer.projections.rebuild()
    rm = world.writer.projections.read_model
    assert rm.maintenance.dump() == before
    row = rm.get(pinned.id)
    assert row is not None and (row.pinned, row.importance, row.expires_at) == (True, 0.8, None)

    out = io.BytesIO()
    write_dump(rm, out)
    raw = [json.loads(line) for line in out.getvalue().splitlines()]
    assert is_header(raw[0])  # a dump opens with its format and journal position
    lines = raw[1:]
    by_id = {line["id"]: line for line in lines}
    assert by_id[pinned.id]["pinned"] is True and by_id[pinned.id]["importance"] == 0.8
    assert by_id[scratch.id]["expires_at"] == "2026-03-01T11:00:00Z"
    assert by_id[scratch.id]["importance"] == 0.3
    assert not {"pinned", "importance", "expires_at"} & set(by_id[plain.id])

    for other in _world(tmp_path / "b", encoders, shared_embedder):
        restored = restore_many(
            other.writer, [parse_line(line, f"line {n}") for n, line in enumerate(lines, 1)]
        )
        assert [r.status for r in restored] == ["stored"] * 3
        again = other.writer.projections.read_model
        for memory_id in (pinned.id, scratch.id, plain.id):
            old, new = rm.get(memory_id), again.get(memory_id)
            assert old is not None and new is not None
            assert (new.pinned, new.importance, new.expires_at) == (
                old.pinned, old.importance, old.expires_at,
            )  # fmt: skip


def test_a_dump_line_both_pinned_and_expiring_is_refused() -> None:
    line = {"id": "mem_01JAAAAAAAAAAAAAAAAAAAAAAA", "type": "episodic", "content": "x",
            "t_valid": "2026-03-01T09:00:00Z", "pinned": True,
            "expires_at": "2026-03-02T09:00:00Z"}  # fmt: skip
    with pytest.raises(Exception, match="both pinned and expiring"):
        parse_line(line, "line 1")
    with pytest.raises(Exception, match="importance"):
        parse_line({**line, "pinned": False, "importance": 7}, "line 1")
