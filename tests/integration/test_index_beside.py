"""A server indexes its embedded vector collections on copies, in a child process, while it
goes on serving, and switches the copies in (``index_beside``). Nothing stored
meanwhile is lost, a failure anywhere leaves the live collections serving, and what it
leaves behind is cleared."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.models import Embedder
from ferrex.read.request import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.hub import Hub
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode
from projections import replay
from projections.applying import QDRANT
from projections.generations import Live, read_pointer
from projections.index_beside import index_beside
from projections.indexing import ApartBuild
from projections.qdrant_edge import EdgeBackend
from projections.reconcile import reconcile
from projections.vectors import VectorStoreError

NOTES = [
    f"incident {n}: the {service} service {what} after the {change}"
    for n, (service, what, change) in enumerate(
        (s, w, c)
        for s in ("billing", "ledger", "search", "gateway", "mailer")
        for w in ("timed out", "ran out of memory", "lost its cache")
        for c in ("config push", "node drain")
    )
]


def eager_app(home: Path, embedder: Embedder) -> App:
    """An App whose Edge indexes any segment (a 1 KB threshold), so that a small home has
    indexes to build."""
    backend = EdgeBackend(home / "qdrant", indexing_threshold_kb=1)
    return App(home=home, config=load(home, None), _embedder=embedder, _backend=backend)


@pytest.fixture()
def app(tmp_path: Path, shared_embedder: Embedder) -> Iterator[App]:
    app = eager_app(tmp_path, shared_embedder)
    app.writer().store_many([StoreRequest(content=text) for text in NOTES])
    try:
        yield app
    finally:
        app.close()


def found(app: App, query: str) -> list[str]:
    result = app.reader().recall(RecallRequest(query=query, limit=3)).as_dict()
    return [r["content"] for r in result["results"]]


def qdrant_dirs(app: App) -> list[str]:
    return sorted(p.name for p in (app.home / "qdrant").iterdir() if p.is_dir())


def storing_during(app: App, texts: list[str]) -> Callable[[list[str]], dict[str, bool]]:
    """The real child-process build, with stores made while it runs (outside the gate)."""
    backend = app.backend()
    assert isinstance(backend, EdgeBackend)
    build = ApartBuild(backend.root, backend.indexing_threshold_kb)

    def run(names: list[str]) -> dict[str, bool]:
        for text in texts:
            app.writer().store(StoreRequest(content=text))
        return build(names)

    return run


def test_the_copies_are_indexed_apart_and_switched_in_with_what_was_stored_meanwhile(
    app: App,
) -> None:
    projections, backend = app.projections(), app.backend()
    old = projections.live
    assert backend.unindexed(old.memories) >= len(NOTES)
    late = "the payroll export moved from Friday to Thursday night"
    # More stores meanwhile than the copies catch up in one hold of the gate.
    more = [
        f"deploy {n} of the {NOTES[n % len(NOTES)].split()[3]} service went out" for n in range(40)
    ]

    switched = index_beside(projections, storing_during(app, [*more, late]))

    live = projections.live
    assert switched and live.memories in switched and live.memories != old.memories
    assert read_pointer(app.home) == live
    # Indexed but for the memories stored during the build, applied to the copy after it.
    assert backend.unindexed(live.memories) == len(more) + 1
    assert old.memories not in qdrant_dirs(app)  # the old collection is gone
    assert set(qdrant_dirs(app)) == {live.memories, live.entities}
    assert late in found(app, "when does the payroll export run now")
    assert projections.read_model.checkpoint(QDRANT) == projections.qdrant_position
    assert reconcile(projections).clean
    # Stores after the switch land in the indexed collection.
    app.writer().store(StoreRequest(content="the mailer now retries bounced mail twice"))
    assert "the mailer now retries bounced mail twice" in found(app, "mailer retry policy")


def test_a_restart_serves_the_switched_copy_and_a_rebuild_clears_it(
    tmp_path: Path, app: App, shared_embedder: Embedder
) -> None:
    switched = index_beside(app.projections(), storing_during(app, []))
    assert switched
    app.close()
    again = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        assert again.projections().live.memories == switched[0]
        assert NOTES[7] in found(again, NOTES[7])
        assert reconcile(again.projections()).clean
        rebuilt = again.replay().live
        assert set(qdrant_dirs(again)) == {rebuilt.memories, rebuilt.entities}
    finally:
        again.close()


def test_a_failed_build_leaves_the_live_collections_serving_and_no_copy(app: App) -> None:
    projections = app.projections()
    old = projections.live
    late = "the search cluster was resized to five nodes"

    def failing(names: list[str]) -> dict[str, bool]:
        app.writer().store(StoreRequest(content=late))
        raise VectorStoreError("the index builder was killed")

    with pytest.raises(VectorStoreError, match="killed"):
        index_beside(projections, failing)
    assert projections.live == old == read_pointer(app.home)
    assert set(qdrant_dirs(app)) == {old.memories, old.entities}
    assert late in found(app, "how many nodes does the search cluster have")
    assert reconcile(projections).clean


def test_a_build_that_changes_nothing_switches_nothing_in_and_leaves_no_copy(app: App) -> None:
    projections = app.projections()
    old = projections.live
    built: list[list[str]] = []

    def unchanged(names: list[str]) -> dict[str, bool]:
        built.append(names)
        return dict.fromkeys(names, False)

    assert index_beside(projections, unchanged) == []
    assert len(built) == 1 and set(qdrant_dirs(app)) == {old.memories, old.entities}
    assert projections.live == old == read_pointer(app.home)
    assert reconcile(projections).clean


def test_a_failure_at_the_switch_puts_everything_back(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    projections = app.projections()
    old = projections.live
    late = "the gateway certificate now renews every sixty days"

    def no_pointer(home: Path, live: Live) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(replay, "write_pointer", no_pointer)
    with pytest.raises(OSError, match="No space"):
        index_beside(projections, storing_during(app, [late]))
    monkeypatch.undo()
    assert projections.live == old == read_pointer(app.home)
    assert set(qdrant_dirs(app)) == {old.memories, old.entities}
    assert projections.read_model.checkpoint(QDRANT) == projections.qdrant_position
    assert late in found(app, "gateway certificate renewal")
    assert reconcile(projections).clean
    # And the next try succeeds.
    assert index_beside(projections, storing_during(app, []))


def test_a_collection_is_copied_again_only_for_a_share_of_new_vectors(app: App) -> None:
    projections = app.projections()
    assert index_beside(projections, storing_during(app, []))
    indexed = projections.live
    app.writer().store(StoreRequest(content="the ledger nightly job now starts at 02:00"))
    # One new vector of 31: a segment's worth at this threshold, under 5% of the points.
    assert app.backend().unindexed(indexed.memories) == 1
    assert index_beside(projections, storing_during(app, [])) == []
    assert projections.live == indexed
    app.writer().store(StoreRequest(content="the gateway rate limit was raised to 900 rps"))
    assert index_beside(projections, storing_during(app, []))  # two of 32: over 5%
    assert projections.live != indexed


def test_a_copy_left_by_a_crash_is_removed_by_the_next_run(app: App) -> None:
    projections, backend = app.projections(), app.backend()
    live = projections.live
    stray = f"{live.memories}_0badc0de"
    backend.copy_collection(live.memories, stray)
    assert stray in qdrant_dirs(app)
    index_beside(projections, storing_during(app, []))
    assert stray not in qdrant_dirs(app)


def test_nothing_is_copied_when_no_collection_is_due(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    # Qdrant's own threshold: 30 memories are far from a segment worth indexing.
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        app.writer().store_many([StoreRequest(content=text) for text in NOTES])
        before = qdrant_dirs(app)
        assert app.backend().unindexed(app.projections().live.memories) == 0

        def never(names: list[str]) -> dict[str, bool]:
            raise AssertionError("nothing was due")

        assert index_beside(app.projections(), never) == []
        assert app.index_beside() == []
        assert qdrant_dirs(app) == before
    finally:
        app.close()


def test_a_copy_that_would_eat_the_reserve_is_refused(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = qdrant_dirs(app)
    monkeypatch.setattr("ferrex.home_safety.free_bytes", lambda home: 1024)
    with pytest.raises(FerrexError) as refused:
        app.index_beside()
    assert refused.value.code == "storage_full"
    assert "index" in str(refused.value)
    assert qdrant_dirs(app) == before


def test_a_cancelled_build_refuses_to_start_and_changes_nothing(app: App) -> None:
    projections = app.projections()
    old = projections.live
    app.cancel_indexing()
    with pytest.raises(FerrexError, match="closing"):
        app.index_beside()
    assert projections.live == old
    assert set(qdrant_dirs(app)) == {old.memories, old.entities}


def test_the_app_builds_in_a_child_process(app: App) -> None:
    projections = app.projections()
    old = projections.live
    switched = app.index_beside()
    assert switched == [projections.live.memories] or set(switched) == {
        projections.live.memories,
        projections.live.entities,
    }
    assert projections.live != old
    assert app.backend().unindexed(projections.live.memories) == 0


def test_a_serving_owner_indexes_by_itself_and_answers_meanwhile(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    home = tmp_path / "home"
    hub = Hub(home, lambda: eager_app(home, shared_embedder), Caller(), flush_every=None,
              index_every=0.2)  # fmt: skip
    try:
        first = hub.call(decode("store", {"content": NOTES[0]}))["id"]
        before = read_pointer(home)
        assert before is not None
        deadline = time.monotonic() + 120
        while read_pointer(home) == before and time.monotonic() < deadline:
            assert hub.call(decode("recall", {"query": NOTES[0]}))["results"][0]["id"] == first
            time.sleep(0.05)
        after = read_pointer(home)
        assert after is not None and after.memories.startswith(before.memories + "_")
        assert hub.call(decode("recall", {"query": NOTES[0]}))["results"][0]["id"] == first
    finally:
        hub.close()


def test_a_hub_without_index_every_never_indexes(tmp_path: Path, shared_embedder: Embedder) -> None:
    home = tmp_path / "home"
    app = eager_app(home, shared_embedder)
    hub = Hub(home, lambda: app, Caller(), flush_every=None)  # as a CLI command owns
    try:
        hub.call(decode("store", {"content": NOTES[1]}))
        before = read_pointer(home)
        time.sleep(1.0)
        assert read_pointer(home) == before
        assert app.backend().unindexed(app.projections().live.memories) == 1
    finally:
        hub.close()


def test_a_failing_index_is_tried_less_and_less_often(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    tries: list[float] = []

    def failing(self: App) -> list[str]:
        tries.append(time.monotonic())
        raise FerrexError("the disk is full", code="storage_full")

    monkeypatch.setattr(App, "index_beside", failing)
    app = App(home=home, config=load(home, None), _embedder=shared_embedder)
    hub = Hub(home, lambda: app, Caller(), flush_every=None, index_every=0.05)
    try:
        hub.call(decode("stats", {}))
        time.sleep(1.6)
    finally:
        hub.close()
    # Without the back-off, some 30 tries; with it, at 0.05, 0.15, 0.35, 0.75 and 1.55 s.
    assert 2 <= len(tries) <= 6, len(tries)
