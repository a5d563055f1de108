"""Projections on real parts: journal files, apsw, Qdrant Edge, the real model.

Incremental application with restarts equals a rebuild; start-up repairs what is missing;
reconcile finds drift and --fix repairs it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ferrex.models import Embedder
from ferrex.models import sparse as recipe
from ferrex.models.sparse import Bm25Encoder
from ferrex.rules.subjects import object_form
from journal import (
    Access,
    EntityCreated,
    Event,
    Journal,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from journal.errors import JournalBehind
from projections import replay, split_rebuild
from projections.applying import QDRANT
from projections.generations import HOME_TAG, POINTER, read_pointer, write_pointer
from projections.qdrant_edge import EdgeBackend
from projections.readmodel.projector import Rules
from projections.readmodel.store import ReadModelError
from projections.reconcile import reconcile
from projections.replay import Projections
from projections.split_rebuild import splits
from projections.vector_sink import Encoders, alias_point_id, point_id
from projections.vectors import SparseVector, VectorFilter, VectorPoint
from tests.integration.test_read_model import interacting
from tests.strategies import T0, Made, plausible

FORMS = Rules("objects", object_form=object_form)

Snapshot = tuple[dict[str, list[tuple[Any, ...]]], dict[str, Any]]


def snapshot(p: Projections) -> Snapshot:
    """Every read-model row and every point (payload and both vectors), by id."""
    points: dict[str, Any] = {}
    for collection in (p.live.memories, p.live.entities):
        ids = [pid for pid, _ in p.backend.scroll(collection)]
        for pid, (dense, sparse, payload) in p.backend.retrieve(collection, ids).items():
            key = f"{'m' if collection == p.live.memories else 'e'}:{pid}"
            points[key] = (
                payload,
                [round(x, 5) for x in dense],
                sparse.indices,
                [round(x, 5) for x in sparse.values],
            )
    return p.read_model.maintenance.dump(), points


@pytest.fixture
def parts(tmp_path: Path, encoders: Encoders) -> Iterator[tuple[Path, Journal, EdgeBackend]]:
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    yield tmp_path, journal, backend
    backend.close()
    journal.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking real stores is slow
)
@given(
    sessions=st.lists(
        st.lists(st.lists(interacting, min_size=1, max_size=3), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    )
)
def test_incremental_with_restarts_equals_a_rebuild(
    encoders: Encoders, sessions: list[list[list[Event]]]
) -> None:
    # The read model keeps object forms (``Rules.object_form``), as the live one does.
    made = Made()  # what the sessions made so far, across them
    sessions = [plausible(commands, made) for commands in sessions]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        with Journal.open(home / "journal") as journal:
            for commands in sessions:  # each session: a process that appends, applies, exits
                backend = EdgeBackend(home / "qdrant")
                projections = Projections.open(home, journal, backend, encoders, rules=FORMS)
                for events in commands:
                    journal.append(events)
                    projections.catch_up()
                projections.close()
                backend.close()
            backend = EdgeBackend(home / "qdrant")
            projections = Projections.open(home, journal, backend, encoders, rules=FORMS)
            incremental = snapshot(projections)
            generation = projections.live.generation
            projections.rebuild()
            assert projections.live.generation == generation + 1
            assert snapshot(projections) == incremental
            assert reconcile(projections).clean
            with split_rebuilds():  # the read model applied in a child process, beside
                assert splits(journal, encoders)
                projections.rebuild()
            assert projections.live.generation == generation + 2
            assert snapshot(projections) == incremental
            assert reconcile(projections).clean
            projections.close()
            backend.close()


@contextlib.contextmanager
def split_rebuilds() -> Iterator[None]:
    """Rebuilds of any size apply the read model in a child process (``apply_split``)."""
    was = split_rebuild.SPLIT_RECORDS
    split_rebuild.SPLIT_RECORDS = 0
    try:
        yield
    finally:
        split_rebuild.SPLIT_RECORDS = was


def _recipe_encoders(encoders: Encoders, embedder: Embedder) -> Encoders:
    """The encoders without their shortcuts: every text's tokens counted by the tokenizer,
    every BM25 vector built token by token from the recipe."""
    model = embedder.model()
    bm25 = Bm25Encoder()

    def fits(text: str) -> bool:
        count = model.count_tokens(text)
        return count is None or count <= model.window

    def sparse_vector(text: str) -> SparseVector:
        counts: dict[int, int] = {}
        for token in recipe.tokens(text):
            counts[recipe.token_index(token)] = counts.get(recipe.token_index(token), 0) + 1
        norm = bm25.k1 * (1 - bm25.b + bm25.b * sum(counts.values()) / bm25.avg_doc_len)
        ordered = sorted(counts.items())
        return SparseVector(
            tuple(i for i, _ in ordered),
            tuple(tf * (bm25.k1 + 1) / (tf + norm) for _, tf in ordered),
        )

    return dataclasses.replace(encoders, fits=fits, sparse=sparse_vector)


def test_a_rebuild_gives_the_points_of_the_unshortened_recipe(
    tmp_path: Path, encoders: Encoders, shared_embedder: Embedder
) -> None:
    """Replay's fast paths (the window check without tokenising, the remembered word
    indices) give exactly the points of counting and hashing everything, on texts at and
    across the window's edge, non-ASCII ones and identifiers."""
    window = shared_embedder.model().window
    texts = [
        "deploy of api-gateway v2.3.1 failed on staging; INC-90312 opened",
        "!" * (window - 2),  # one token a character: exactly the window with [CLS] and [SEP]
        "!" * (window - 2) + " !",  # one token more: two parts
        "the cache warmed up again. " * (window // 4),  # long prose: parts on sentences
        "Zürich café: naïve retries in src/app/main.py broke the build",
        "東京のサーバーが再起動した" * 12,  # few characters, many tokens
        "a" * 40 + " " + "word " * 50,
    ]
    events: list[Event] = [memory(f"m{i}", text) for i, text in enumerate(texts)]
    events.append(
        MemoryStored(
            memory_id="p1", namespace="default", memory_type="procedural", t_valid=T0,
            body=MemoryBody(
                procedure_name="rotate credentials",
                steps=tuple(f"step {i}: run vault rotate for service-{i} " * 6 for i in range(12)),
            ),
        )
    )  # fmt: skip
    snapshots = []
    for name, chosen, split in (
        ("fast", encoders, False),
        ("recipe", _recipe_encoders(encoders, shared_embedder), False),
        ("split", encoders, True),  # BM25 and window checks from the rebuild's child
    ):
        home = tmp_path / name
        with Journal.open(home / "journal") as journal:
            for event in events:
                journal.append([event])
            backend = EdgeBackend(home / "qdrant")
            with split_rebuilds() if split else contextlib.nullcontext():
                assert splits(journal, chosen) == split
                projections = Projections.replay(home, journal, backend, chosen)
            snapshots.append(snapshot(projections))
            projections.close()
            backend.close()
    (_, fast), (_, recipe), (_, split_points) = snapshots  # the points (the read models
    assert fast == recipe == split_points  # differ in the times they recorded)
    assert len(fast) > len(events)  # some texts were cut into parts


def memory(mid: str, text: str, **kw: Any) -> MemoryStored:
    return MemoryStored(
        memory_id=mid,
        namespace="default",
        memory_type="episodic",
        t_valid=T0,
        body=MemoryBody(content=text),
        **kw,
    )


def seed(journal: Journal) -> None:
    journal.append(
        [EntityCreated(entity_id="e1", namespace="default", name="Tokio", normalized="tokio")]
    )
    for i in range(12):
        journal.append(
            [
                memory(
                    f"m{i}",
                    f"incident INC-{9000 + i} fixed by restarting worker {i}",
                    entity_ids=("e1",),
                )
            ]
        )
    journal.append(
        [MemorySuperseded(memory_id="m1", namespace="default", t_invalid=T0, superseded_by="m2")]
    )
    journal.append([MemoriesAccessed(accesses=(Access("m3", T0, 2),))])
    journal.append([MemoriesForgotten(memory_ids=("m4",), namespace="default")])


def test_a_long_procedure_becomes_several_points_of_one_memory(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    steps = tuple(f"step {k}: " + "configure the load balancer pool " * 8 for k in range(10))
    body = MemoryBody(procedure_name="deploy api", steps=steps)
    journal.append(
        [
            MemoryStored(
                memory_id="p1", namespace="default", memory_type="procedural", t_valid=T0, body=body
            )
        ]
    )
    p = Projections.open(home, journal, backend, encoders)
    payloads = [payload for _, payload in backend.scroll(p.live.memories)]
    assert len(payloads) > 2 and {pl["memory_id"] for pl in payloads} == {"p1"}
    assert sorted(pl["step"] for pl in payloads) == list(range(len(payloads)))
    journal.append([MemoriesForgotten(memory_ids=("p1",), namespace="default")])
    p.catch_up()
    assert backend.count(p.live.memories) == 0
    p.close()


def test_start_catches_up_what_was_appended_but_never_applied(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    p = Projections.open(home, journal, backend, encoders)
    p.close()
    seed(journal)  # appended with no projection running: the "killed before apply" case
    p = Projections.open(home, journal, backend, encoders)
    assert p.read_model.checkpoint() == p.read_model.checkpoint(QDRANT) == journal.head.position
    assert backend.count(p.live.memories) == 11
    m1 = p.read_model.get("m1")
    assert m1 is not None and m1.superseded_by == "m2"
    assert reconcile(p).clean
    p.close()


def test_deleted_qdrant_or_sqlite_is_rebuilt_at_start(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    seed(journal)
    p = Projections.open(home, journal, backend, encoders)
    before = snapshot(p)
    p.close()
    backend.close()
    shutil.rmtree(home / "qdrant")
    backend = EdgeBackend(home / "qdrant")
    p = Projections.open(home, journal, backend, encoders)
    assert snapshot(p) == before
    live = p.live
    p.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(home / live.sqlite) + suffix).unlink(missing_ok=True)
    p = Projections.open(home, journal, backend, encoders)
    assert snapshot(p) == before and p.live.generation == live.generation + 1
    assert reconcile(p).clean
    p.close()
    backend.close()


def test_reconcile_reports_and_fixes_vector_drift(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    seed(journal)
    p = Projections.open(home, journal, backend, encoders)
    before = snapshot(p)
    name = p.live.memories
    backend.delete(name, [point_id("m5")])  # a missing point
    backend.set_payload(name, ["m1"], {"t_invalid": None})  # superseded, but says valid
    stray = VectorPoint(
        id=point_id("ghost"),
        dense=[0.1] * encoders.dim,
        sparse=SparseVector((1,), (1.0,)),
        payload={"memory_id": "ghost"},
    )
    backend.upsert(name, [stray])  # an orphan
    backend.delete(p.live.entities, [alias_point_id("default", "tokio", "e1")])  # a lost spelling
    drift = reconcile(p)
    assert not drift.clean
    assert drift.missing_points == ["m5"]
    assert drift.stale_payloads == ["m1"]
    assert drift.orphan_points == [point_id("ghost")]
    assert drift.entity_drift == [alias_point_id("default", "tokio", "e1")]
    fixed = reconcile(p, fix=True)
    assert fixed.clean, fixed.as_dict()
    assert snapshot(p) == before
    p.close()


def test_reconcile_detects_a_corrupted_checkpoint(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    seed(journal)
    p = Projections.open(home, journal, backend, encoders)
    before = snapshot(p)
    head = journal.head.position
    # A checkpoint set back makes the access event apply twice: reconcile must notice.
    p.read_model.set_checkpoint("sqlite", head - 2)
    p.catch_up()
    drift = reconcile(p)
    assert "m3" in drift.sqlite_rows
    assert reconcile(p, fix=True).clean
    assert snapshot(p) == before
    # A checkpoint beyond the journal: records it applied are missing from the journal (cut,
    # or the journal put back from an older copy), so opening refuses rather than rebuild
    # them away; a replay is the operator's way on without them.
    p.read_model.set_checkpoint("sqlite", head + 10)
    generation = p.live.generation
    p.close()
    with pytest.raises(JournalBehind) as behind:
        Projections.open(home, journal, backend, encoders)
    assert (behind.value.applied, behind.value.head) == (head + 10, head)
    assert "10 acknowledged records are missing" in behind.value.message
    p = Projections.replay(home, journal, backend, encoders)
    assert p.live.generation == generation + 1 and snapshot(p) == before
    p.close()


def test_a_changed_encoder_identity_triggers_a_rebuild(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    seed(journal)
    p = Projections.open(home, journal, backend, encoders)
    old = p.live
    p.close()
    other = Encoders(identity=encoders.identity + "+v2", dim=encoders.dim, dense=encoders.dense,
                     sparse=encoders.sparse, fits=encoders.fits)  # fmt: skip
    p = Projections.open(home, journal, backend, other)
    assert p.live.encoders == other.identity and p.live.memories != old.memories
    assert old.memories not in backend.collections()
    assert read_pointer(home) == p.live and (home / POINTER).exists()
    p.close()


def test_a_rebuild_leaves_no_shard_open_that_a_new_process_would_not_hold(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    """The shards a rebuild filled are closed when it ends: the process serves the new
    generation loaded from its files, as a new process does (Edge answers a shard it filled
    in this process slower for as long as it stays open), and holds only what its queries
    open, with their search threads: at open after a schema change, and by ``rebuild``.
    (Not after a home's first build: see ``Projections._build``.)"""
    home, journal, backend = parts
    seed(journal)
    query = list(encoders.dense(["which worker was restarted for INC-9007"])[0])
    sparse = encoders.sparse("INC-9007")

    def recall(p: Projections) -> str:
        flt = VectorFilter(namespace="default")
        hits = backend.query_hybrid(p.live.memories, query, sparse, flt, 30, 3)
        return str(hits[0].payload["memory_id"])  # the order below varies from build to build

    p = Projections.open(home, journal, backend, encoders)  # a first build keeps them open
    assert recall(p) == "m7"
    p.close()
    backend.close()
    # A new process on the same files: what it holds open, and answers.
    backend = EdgeBackend(home / "qdrant")
    p = Projections.open(home, journal, backend, encoders)
    assert backend.open_collections() == []
    assert recall(p) == "m7" and backend.open_collections() == [p.live.memories]
    p.rebuild()
    assert backend.open_collections() == []
    assert recall(p) == "m7" and backend.open_collections() == [p.live.memories]
    p.close()
    # A schema change rebuilds at open (every user's first start after such an upgrade).
    live = read_pointer(home)
    assert live is not None
    older = msgspec.structs.replace(live, schema_version=live.schema_version - 1)
    write_pointer(home, older)
    p = Projections.open(home, journal, backend, encoders)
    assert p.live.generation == live.generation + 1
    assert backend.open_collections() == []
    assert recall(p) == "m7" and backend.open_collections() == [p.live.memories]
    p.close()
    backend.close()


def test_an_import_of_many_records_ends_with_the_vector_shards_released(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``holding_sync`` block (an import) that applied ``RELEASE_RECORDS`` records or more
    ends with the shards closed, to be loaded from their files by the next use (Edge answers
    filtered queries on points this process added slower while their shard stays open); a
    shorter block leaves them open. Nothing is lost either way."""
    home, journal, backend = parts
    p = Projections.open(home, journal, backend, encoders)
    monkeypatch.setattr(replay, "RELEASE_RECORDS", 16)
    with p.holding_sync():
        seed(journal)  # 16 records
        p.catch_up()
        with p.holding_sync():  # nested: the outer block decides
            p.catch_up()
        assert backend.open_collections() == [p.live.entities, p.live.memories]
    assert backend.open_collections() == []
    assert backend.count(p.live.memories) == 11 and reconcile(p).clean
    with p.holding_sync():
        journal.append([memory("m20", "a short import of one memory")])
        p.catch_up()
    assert backend.open_collections() == [p.live.entities, p.live.memories]
    assert backend.count(p.live.memories) == 12 and reconcile(p).clean
    p.close()


def test_the_old_generation_answers_while_a_rebuild_runs(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    home, journal, backend = parts
    seed(journal)
    p = Projections.open(home, journal, backend, encoders)
    old = p.live
    query = list(encoders.dense(["which worker was restarted for INC-9007"])[0])
    sparse = encoders.sparse("INC-9007")
    answers: list[list[str]] = []

    def during(done: int, total: int) -> None:
        flt = VectorFilter(namespace="default")
        hits = backend.query_hybrid(
            old.memories, query, SparseVector(sparse.indices, sparse.values), flt, 30, 3
        )
        answers.append([h.payload["memory_id"] for h in hits])
        assert p.read_model.get("m7") is not None  # the old read model still serves

    p.rebuild(progress=during)
    assert answers and all(a[0] == "m7" for a in answers)
    assert old.memories not in backend.collections()
    p.close()


def test_two_homes_on_one_vector_store_keep_their_own_collections(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    """Two servers sharing one journal and one Qdrant (here one backend object stands for a
    server): each home writes, rebuilds and drops only its own collections."""
    root, journal, backend = parts
    seed(journal)
    home_a, home_b = root / "a", root / "b"
    home_a.mkdir()
    home_b.mkdir()
    a = Projections.open(home_a, journal, backend, encoders)
    b = Projections.open(home_b, journal, backend, encoders)
    assert {a.live.memories, a.live.entities}.isdisjoint({b.live.memories, b.live.entities})
    assert backend.count(a.live.memories) == backend.count(b.live.memories) == 11
    old_b = b.live.memories
    a.rebuild()  # drops a's old generation only
    assert old_b in backend.collections() and backend.count(old_b) == 11
    assert reconcile(a).clean and reconcile(b).clean
    tag = (home_a / HOME_TAG).read_text().strip()
    assert tag in a.live.memories and tag not in b.live.memories
    a.close()
    b.close()
    reopened = Projections.open(home_a, journal, backend, encoders)  # the tag is kept
    assert tag in reopened.live.memories
    reopened.close()


def test_a_failed_read_model_in_a_split_rebuild_fails_it_and_leaves_the_old_generation(
    parts: tuple[Path, Journal, EdgeBackend], encoders: Encoders
) -> None:
    """The child applying the read model fails (its rules raise on a fact): the rebuild
    fails with a clear error naming the cause and the old generation stays live, whole."""
    home, journal, backend = parts
    seed(journal)
    fact = MemoryBody(subject="api", predicate="uses", object="tokio")
    journal.append(
        [MemoryStored(memory_id="f1", namespace="default", memory_type="semantic", t_valid=T0,
                      body=fact)]
    )  # fmt: skip
    p = Projections.open(home, journal, backend, encoders)
    before, live = snapshot(p), p.live
    p.close()

    def refuse(namespace: str, recorded: str) -> str:
        raise ValueError(f"no rule for {recorded!r}")

    with split_rebuilds(), pytest.raises(ReadModelError, match="no rule for 'uses'"):
        Projections.replay(home, journal, backend, encoders, rules=Rules("broken", refuse))
    assert read_pointer(home) == live
    p = Projections.open(home, journal, backend, encoders)
    assert p.live == live and snapshot(p) == before
    assert reconcile(p).clean
    p.close()
