"""Consolidation on real parts: journal, SQLite, Qdrant Edge, the bundled model.

Old episodes fold into a summary that recall finds in their place; ``as_of`` before the fold
still sees the originals; undo brings them back; forgetting a source takes its sentences out
of the summary (the old summary is forgotten, so compaction purges its text); a rebuild from
the journal equals what was applied incrementally; bad input writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import Refused, UsageError
from ferrex.models import Embedder
from ferrex.models.rerank import RerankStage, choose_reranker
from ferrex.read.access import AccessLog
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.read.seen import Sight
from ferrex.rules.consolidation import sentences
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.service import Service
from ferrex.times import rfc3339
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from journal.compact import plan
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders
from tests.rows import read_model_rows

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

OLD_CHAT = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: The support group made me feel accepted. I want to study counseling.",
    "Melanie: My kids loved the pottery class we took together in May.",
    "Caroline: I am researching adoption agencies this month.",
    "Melanie: Camping at the beach with the family is our summer plan.",
    "Caroline: Wow, that sounds so lovely! How did the kids like it?",  # states nothing
]
NEW_CHAT = [
    "Caroline: Yesterday I ran a charity race for mental health.",
    "Melanie: Well done! I signed up for a violin course.",
]


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
    journal: Journal
    root: Path

    def recall(self, query: str, **kw: object) -> list[str]:
        """Every candidate up to ten, none trimmed for relevance (``min_relevance=0``): the
        tests look at which memories recall can reach, not at how relevant it judges them."""
        kw.setdefault("min_relevance", 0.0)
        result = self.reader.recall(RecallRequest(query=query, limit=10, **kw))  # type: ignore[arg-type]
        return [str(r["id"]) for r in result.results]

    def head(self) -> int:
        return max((r.position for r in self.journal.read()), default=0)


@pytest.fixture
def world(tmp_path: Path, encoders: Encoders, shared_embedder: Embedder) -> Iterator[World]:
    clock = Clock()
    journal = Journal.open(tmp_path / "journal", clock=clock)
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    writer = Writer(
        journal, projections, shared_embedder,
        StoreSettings(consolidation_keep_ratio=0.5), clock=clock,
    )  # fmt: skip
    off = RerankStage(choose_reranker("none", {}))
    reader = Reader(projections, shared_embedder, off, access=AccessLog(), clock=clock)
    yield World(writer, reader, clock, journal, tmp_path)
    projections.close()
    backend.close()
    journal.close()


def _chats(world: World) -> tuple[list[str], list[str]]:
    old = [
        world.writer.store(
            StoreRequest(content=t, source="chat-1", agent_id="alice", visibility="shared")
        ).id
        for t in OLD_CHAT
    ]
    world.clock.now = START + timedelta(days=40)
    new = [
        world.writer.store(
            StoreRequest(content=t, source="chat-2", agent_id="alice", visibility="shared")
        ).id
        for t in NEW_CHAT
    ]
    return old, new


def test_old_episodes_fold_into_a_summary_recall_finds_in_their_place(world: World) -> None:
    old, new = _chats(world)
    dry = world.writer.consolidate(older_than_days=30, dry_run=True)
    head = world.head()
    assert [f.memory_ids for f in dry.summaries] == [tuple(old)] and dry.dry_run
    assert world.head() == head  # a dry run writes nothing

    done = world.writer.consolidate(older_than_days=30)
    (folding,) = done.summaries
    assert folding.memory_ids == tuple(old) and folding.group == "source:chat-1"
    assert folding.chars < folding.source_chars
    rm = world.writer.projections.read_model
    summary = rm.get(folding.summary_id)
    assert summary is not None and summary.content and summary.source == "chat-1"
    assert summary.visibility == "shared" and summary.agent_id == "alice"
    for memory_id in old:
        row = rm.get(memory_id)
        assert row is not None and row.superseded_by == folding.summary_id
    assert sorted(rm.folded(folding.summary_id)) == sorted(old)
    for memory_id in new:  # learned 0 days ago: not folded
        row = rm.get(memory_id)
        assert row is not None and row.t_invalid is None

    kept = sentences(summary.content)[0]
    found = world.recall(kept)
    assert found[0] == folding.summary_id and not set(found) & set(old)
    # as of a time before the fold, the originals were valid: recall sees them again (the
    # summary too, valid from its first source's event time: what it says was true then)
    before = world.recall(kept, as_of=rfc3339((START + timedelta(days=1)).timestamp()))
    assert before[0] in old and set(old) <= set(before)

    # the summary's history leads to every original, in order; an original's to the summary
    sight = Sight(None, world.clock.now.timestamp())
    assert [m.memory_id for m in sight.history(rm, summary)] == [*old, folding.summary_id]
    source_row = rm.get(old[0])
    assert source_row is not None
    assert [m.memory_id for m in sight.history(rm, source_row)] == [old[0], folding.summary_id]

    # nothing is folded twice
    assert world.writer.consolidate(older_than_days=30).summaries == ()

    incremental = read_model_rows(rm, tables_left_out=frozenset())
    world.writer.projections.rebuild()
    assert (
        read_model_rows(world.writer.projections.read_model, tables_left_out=frozenset())
        == incremental
    )


def test_undo_brings_the_originals_back_and_retires_the_summary(world: World) -> None:
    old, _ = _chats(world)
    (folding,) = world.writer.consolidate(older_than_days=30).summaries
    undone = world.writer.unfold(folding.summary_id)
    assert sorted(undone.restored) == sorted(old)
    rm = world.writer.projections.read_model
    assert rm.get(folding.summary_id) is None and rm.folded(folding.summary_id) == []
    for memory_id in old:
        row = rm.get(memory_id)
        assert row is not None and row.t_invalid is None and row.superseded_by is None
    found = world.recall("pottery class with the kids in May")
    assert found[0] == old[3]

    incremental = read_model_rows(rm, tables_left_out=frozenset())
    world.writer.projections.rebuild()
    assert (
        read_model_rows(world.writer.projections.read_model, tables_left_out=frozenset())
        == incremental
    )


def test_bad_input_is_a_clear_error_and_writes_nothing(world: World) -> None:
    old, _ = _chats(world)
    head = world.head()
    with pytest.raises(Refused) as refused:
        world.writer.unfold(old[0])  # a memory, not a summary
    assert refused.value.code == "not_found"
    with pytest.raises(Refused):
        world.writer.unfold("mem_nothing_like_it")
    with pytest.raises(UsageError):
        world.writer.consolidate(older_than_days=-1)
    with pytest.raises(UsageError):
        world.writer.consolidate(older_than_days=float("nan"), dry_run=True)
    assert world.head() == head


def test_forgetting_a_source_takes_its_sentences_out_of_the_summary(world: World) -> None:
    old, _ = _chats(world)
    world.writer.settings = StoreSettings(consolidation_keep_ratio=1.0)  # every sentence kept
    (folding,) = world.writer.consolidate(older_than_days=30).summaries
    rm = world.writer.projections.read_model
    first = rm.get(folding.summary_id)
    assert first is not None and "pottery class" in (first.content or "")

    world.writer.forget([old[3]])
    assert rm.get(folding.summary_id) is None
    (again,) = rm.decisions.folded_into([old[0]]).values()
    assert again != folding.summary_id
    summary = rm.get(again)
    assert summary is not None and summary.content
    assert "pottery" not in summary.content
    assert sorted(rm.folded(again)) == sorted(set(old) - {old[3]})
    # the first summary's text is a forgotten body: compaction purges it with the source's
    forgotten = plan(world.root / "journal").forgotten
    assert {old[3], folding.summary_id} <= forgotten

    # forgetting the summary itself gives the sources back
    world.writer.forget([again])
    for memory_id in set(old) - {old[3]}:
        row = rm.get(memory_id)
        assert row is not None and row.t_invalid is None

    incremental = read_model_rows(rm, tables_left_out=frozenset())
    world.writer.projections.rebuild()
    assert (
        read_model_rows(world.writer.projections.read_model, tables_left_out=frozenset())
        == incremental
    )


def test_pinned_stays_and_shared_and_private_fold_apart_on_real_parts(world: World) -> None:
    ids = [
        world.writer.store(
            StoreRequest(
                content=t, source="chat-9", agent_id="alice",
                visibility="private" if n in (1, 4, 6) else "shared", pinned=n == 2,
            )
        ).id
        for n, t in enumerate([*OLD_CHAT[:5], OLD_CHAT[6], "Melanie: Aww, so sweet of you!"])
    ]  # fmt: skip
    world.clock.now = START + timedelta(days=40)
    done = world.writer.consolidate(older_than_days=30).summaries
    assert {(f.memory_ids, f.visibility) for f in done} == {
        ((ids[0], ids[3], ids[5]), "shared"),
        ((ids[1], ids[4], ids[6]), "private"),
    }
    pinned = world.writer.projections.read_model.get(ids[2])
    assert pinned is not None and pinned.t_invalid is None


def _app(home: Path, embedder: Embedder, toml: str) -> App:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "ferrex.toml").write_text(toml)
    (home / "ferrex.toml").chmod(0o600)
    return App(home=home, config=load(home, None), _embedder=embedder)


def test_the_owner_pass_is_off_by_default_and_folds_when_configured(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    off = _app(tmp_path / "off", shared_embedder, "")  # no [consolidation]
    for turn in OLD_CHAT[:3]:
        off.writer().store(StoreRequest(content=turn, source="chat-1"))
    head = off.journal().head
    assert Service(off).consolidate_due() == 0 and off.journal().head == head
    off.close()

    on = _app(
        tmp_path / "on", shared_embedder, "[consolidation]\nafter_days = 0\nevery_seconds = 3600\n"
    )
    for turn in [*OLD_CHAT[:3], OLD_CHAT[6]]:
        on.writer().store(StoreRequest(content=turn, source="chat-1"))
    owner = Service(on)
    assert owner.consolidate_due() == 4
    for turn in NEW_CHAT:
        on.writer().store(StoreRequest(content=turn, source="chat-2"))
    assert owner.consolidate_due() == 0  # not again within every_seconds
    on.close()


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ("[consolidation]\nkeep_ratio = 0\n", "out of range"),
        ("[consolidation]\nafter_days = -3\n", "out of range"),
        ("[consolidation]\nafter_days = 'soon'\n", "must be float"),
        ("[consolidation]\nunit = 'paragraph'\n", "not one of sentence, turn"),
    ],
)
def test_bad_consolidation_settings_are_refused(tmp_path: Path, toml: str, words: str) -> None:
    (tmp_path / "ferrex.toml").write_text(toml)
    with pytest.raises(UsageError, match=words):
        load(tmp_path, None)
