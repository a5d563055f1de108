"""Reads in parallel with each other and with a write, each on one consistent state.

Real parts throughout: the service over the real journal (fsync), the SQLite read model
(apsw, WAL), Qdrant Edge and the bundled model. The property: while one thread writes a chain
of facts where each new value supersedes the last (one record of several events: the new
memory and the old one's end), reader threads calling recall, stats, reflect and the memory
resource never see the chain half-applied: exactly one fact of the chain is current, every
superseded one names a successor the same snapshot holds.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from projections.gate import Gate, GateMisuse

OPERATOR = Caller()
_NAMESPACES = itertools.count()


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[Service]:
    home = tmp_path_factory.mktemp("concurrent")
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    service = Service(app)
    service.warm()
    yield service
    service.close()


def _chain_state(service: Service, namespace: str) -> list[dict[str, Any]]:
    """The chain's facts as one snapshot holds them (through the read surface)."""
    projections = service.app.projections()
    with projections.reading():
        rows = projections.read_model.memories(namespace=namespace)
    return [
        {"id": m.memory_id, "current": m.t_invalid is None, "by": m.superseded_by}
        for m in rows
        if m.type == "semantic"
    ]


def _check_chain(rows: list[dict[str, Any]], written: int) -> None:
    ids = {r["id"] for r in rows}
    current = [r for r in rows if r["current"]]
    if written == 0 and not rows:
        return
    assert len(current) == 1, f"{len(current)} current facts of one relation: {rows}"
    for r in rows:
        if not r["current"]:
            assert r["by"] in ids, f"{r['id']} superseded by {r['by']}, which is not there"


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    values=st.lists(
        st.sampled_from(
            ["Postgres 14", "Postgres 15", "Postgres 16", "MySQL 8", "SQLite 3", "CockroachDB"]
        ),
        min_size=3,
        max_size=8,
        unique=True,
    ),
    readers=st.integers(2, 4),
)
def test_readers_never_see_a_supersede_half_applied(
    service: Service, values: list[str], readers: int
) -> None:
    namespace = f"chain-{next(_NAMESPACES)}"
    done = threading.Event()
    written = [0]
    failures: list[BaseException] = []
    checks = [0]

    def write() -> None:
        try:
            # Each a change told with its start (a plain second name may be one value more).
            for day, value in enumerate(values, 1):
                service.call(
                    decode("store",
                    {"subject": "billing-api", "predicate": "uses", "object": value,
                     "namespace": namespace, "valid_from": f"2026-01-{day:02d}T00:00:00Z"}),
                    OPERATOR,
                )  # fmt: skip
                written[0] += 1
        except BaseException as exc:
            failures.append(exc)
        finally:
            done.set()

    def read(which: int) -> None:
        try:
            while not done.is_set() or checks[0] < 4 * readers:
                before = written[0]
                if which % 3 == 0:
                    found = service.call(
                        decode("recall",
                        {"query": "what database does billing-api use", "namespace": namespace,
                         "include_invalidated": True, "limit": 20}),
                        OPERATOR,
                    )  # fmt: skip
                    rows = [
                        {"id": r["id"], "current": "invalidated_at" not in r,
                         "by": r.get("superseded_by")}
                        for r in found["results"]
                    ]  # fmt: skip
                    live = [r for r in rows if r["current"]]
                    assert len(live) <= 1, f"two current facts in one recall: {rows}"
                    if before:
                        assert len(live) == 1, f"no current fact after a store: {rows}"
                elif which % 3 == 1:
                    stats = service.call(decode("stats", {"namespace": namespace}), OPERATOR)
                    if before:  # active memories: the chain's one current fact
                        assert stats["total"] == 1, stats
                    _check_chain(_chain_state(service, namespace), before)
                else:
                    _check_chain(_chain_state(service, namespace), before)
                    service.call(decode("reflect", {"namespace": namespace}), OPERATOR)
                checks[0] += 1
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write)] + [
        threading.Thread(target=read, args=(i,)) for i in range(readers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not failures, failures[0]
    assert not any(t.is_alive() for t in threads)
    final = _chain_state(service, namespace)
    assert len(final) == len(values) and sum(r["current"] for r in final) == 1


def test_a_snapshot_keeps_its_state_while_another_thread_applies(service: Service) -> None:
    """A read transaction sees one committed state; the next one sees the new records."""
    namespace = f"snap-{next(_NAMESPACES)}"
    rm = service.app.projections().read_model
    service.call(decode("store", {"content": "The first note of the snapshot test", "namespace":
                           namespace}), OPERATOR)  # fmt: skip
    inside = threading.Event()
    stored = threading.Event()
    seen: list[int] = []

    def reader() -> None:
        with rm.snapshot():
            seen.append(len(rm.memories(namespace=namespace)))
            inside.set()
            stored.wait(120)
            seen.append(len(rm.memories(namespace=namespace)))
        with rm.snapshot():
            seen.append(len(rm.memories(namespace=namespace)))

    t = threading.Thread(target=reader)
    t.start()
    assert inside.wait(60)
    service.call(decode("store", {"content": "A second, unrelated note about the office plants",
                           "namespace": namespace}), OPERATOR)  # fmt: skip
    stored.set()
    t.join(120)
    assert seen == [1, 1, 2]


def test_reads_answer_while_the_writer_lock_is_held(service: Service) -> None:
    """A write in progress (here: its lock held by another thread, as while it decides and
    embeds) does not hold up recall, stats, reflect or a resource: they all return while the
    lock is still held (a read that waited for it would never return, since the holder lets go
    only after the reads are checked)."""
    holding = threading.Event()
    release = threading.Event()
    answered: list[str] = []

    def hold() -> None:
        with service.app.journal().exclusive():
            holding.set()
            release.wait(300)

    def read() -> None:
        for tool, args in (
            ("recall", {"query": "office plants"}),
            ("stats", {"detailed": True}),
            ("reflect", {}),
            ("resource", {"uri": "ferrex://recent"}),
        ):
            service.call(decode(tool, args), OPERATOR)
            answered.append(tool)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(60)
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(240)  # a bound on a deadlock, not a speed: the reads normally take ms
        assert not reader.is_alive(), f"reads blocked behind the writer lock after {answered}"
        assert holder.is_alive(), "the lock must still be held when the reads have answered"
        assert answered == ["recall", "stats", "reflect", "resource"]
    finally:
        release.set()
        holder.join(60)


def test_the_gate_refuses_an_apply_from_inside_a_read() -> None:
    gate = Gate()
    with gate.shared(), gate.shared(), pytest.raises(GateMisuse):  # noqa: SIM117
        with gate.exclusive():
            pass
    with gate.exclusive(), gate.exclusive(), gate.shared():
        assert gate.held_here()
    assert not gate.held_here()


def test_a_waiting_apply_is_not_starved_by_a_stream_of_reads() -> None:
    """A read that arrives while an apply waits for an earlier read goes after the apply."""
    gate = Gate()
    first_in, first_may_leave, late_asking = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []

    def long_read() -> None:
        with gate.shared():
            first_in.set()
            first_may_leave.wait(60)
            order.append("read-1")

    def apply() -> None:
        with gate.exclusive():
            order.append("apply")

    def late_read() -> None:
        late_asking.set()
        with gate.shared():
            order.append("read-2")

    a = threading.Thread(target=long_read)
    a.start()
    assert first_in.wait(10)
    b = threading.Thread(target=apply)
    b.start()
    assert _until(lambda: gate.writers_waiting() == 1), "the apply never started waiting"
    c = threading.Thread(target=late_read)
    c.start()
    assert late_asking.wait(10)
    assert order == []  # the late read cannot pass the waiting apply
    first_may_leave.set()
    for t in (a, b, c):
        t.join(10)
    assert order == ["read-1", "apply", "read-2"]


def _until(condition: Callable[[], bool], attempts: int = 2000) -> bool:
    """Polls a condition (every 5 ms, up to 10 s): a wait for a state, not a timing."""
    for _ in range(attempts):
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def test_many_threads_share_a_read_model_file(tmp_path: Path, shared_embedder: Embedder) -> None:
    """Each thread reads through its own connection; closing closes them all."""
    app = App(home=tmp_path, config=load_config(tmp_path, None), _embedder=shared_embedder)
    service = Service(app)
    try:
        service.call(decode("store", {"content": "A note every reader thread counts"}), OPERATOR)
        rm = app.projections().read_model
        counts: list[int] = []

        def count() -> None:
            with rm.snapshot():
                counts.append(rm.count())

        threads = [threading.Thread(target=count) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert counts == [1] * 6
        assert len(rm.store._readers) == 6
    finally:
        service.close()
    assert not rm.store._readers


def test_try_exclusive_takes_the_writer_lock_only_when_it_is_free(tmp_path: Path) -> None:
    from journal import Journal

    journal = Journal.open(tmp_path / "journal")
    try:
        with journal.try_exclusive() as head:
            assert head is not None  # free: taken (and re-entrant in this thread)
            with journal.try_exclusive() as inner:
                assert inner is not None
        holding, release = threading.Event(), threading.Event()
        seen: list[object] = []

        def hold() -> None:
            with journal.exclusive():
                holding.set()
                release.wait(60)

        def attempt() -> None:
            with journal.try_exclusive() as got:
                seen.append(got)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(60)
        other = threading.Thread(target=attempt)
        other.start()
        other.join(60)
        release.set()
        holder.join(60)
        assert seen == [None]  # held by another thread: not waited for
        with journal.try_exclusive() as again:
            assert again is not None
    finally:
        journal.close()
