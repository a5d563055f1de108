"""Faults on a real PostgreSQL journal: a writer killed with SIGKILL mid-append, and
PostgreSQL itself stopped with ``pg_ctl -m immediate`` mid-stream. Afterwards every
acknowledged record is there, an unacknowledged batch is wholly there or not at all,
positions are contiguous and the chain verifies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from journal import MemoryStored
from journal.postgres import PostgresJournal
from tests.pg_cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Writer:
    process: subprocess.Popen[str]
    tried: dict[int, list[str]] = field(default_factory=dict)
    acked: dict[int, list[int]] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)
    done: bool = False

    def pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            kind, _, rest = line.strip().partition(" ")
            k, _, items = rest.partition(" ")
            if kind == "TRY":
                self.tried[int(k)] = items.split(",")
            elif kind == "ACK":
                self.acked[int(k)] = [int(p) for p in items.split(",")]
            elif kind == "ERR":
                self.failed.add(int(k))
            elif kind == "DONE":
                self.done = True
        self.process.stdout.close()


def _start(url: str, name: str, batches: int, size: int) -> tuple[Writer, threading.Thread]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.journal.pg_writer", url, name, str(batches), str(size)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    writer = Writer(process)
    thread = threading.Thread(target=writer.pump, daemon=True)
    thread.start()
    return writer, thread


def _wait_for(predicate: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError("timed out")


def _check(url: str, writers: list[Writer]) -> dict[str, int]:
    """The invariants, and the counts the issue's closing note asks for."""
    with PostgresJournal.open(url) as journal:
        position_of: dict[str, int] = {}
        positions = []
        for record in journal.read():
            positions.append(record.position)
            for event in record.events:
                assert isinstance(event, MemoryStored)
                assert event.memory_id not in position_of, "a record was written twice"
                position_of[event.memory_id] = record.position
        assert positions == list(range(1, len(positions) + 1))
        assert journal.verify().ok
    counts = {"acked_batches": 0, "unacked_present": 0, "unacked_absent": 0}
    for writer in writers:
        for k, ids in writer.tried.items():
            present = [i in position_of for i in ids]
            if k in writer.acked:
                assert all(present), f"acknowledged batch {k} lost"
                assert [position_of[i] for i in ids] == writer.acked[k]
                counts["acked_batches"] += 1
            else:
                assert all(present) or not any(present), f"batch {k} half-written"
                counts["unacked_present" if all(present) else "unacked_absent"] += 1
    return counts


def _ids(journal: PostgresJournal) -> set[str]:
    return {e.memory_id for r in journal.read() for e in r.events if isinstance(e, MemoryStored)}


def test_a_writer_killed_mid_append_loses_no_acknowledged_record(pg_url: str) -> None:
    PostgresJournal.open(pg_url).close()
    victim, _ = _start(pg_url, "victim", 100000, 5)
    other, other_pump = _start(pg_url, "other", 60, 3)
    _wait_for(lambda: len(victim.acked) >= 30)
    os.kill(victim.process.pid, signal.SIGKILL)  # mid-stream: it appends without pause
    victim.process.wait(10)
    other_pump.join(120)
    assert other.done and other.process.wait(10) == 0  # its lock died with the session
    counts = _check(pg_url, [victim, other])
    print(f"SIGKILL trial: {counts}")
    # and the writer lock died with the killed session: it can be taken at once
    with PostgresJournal.open(pg_url) as journal, journal.exclusive() as head:
        assert head.position == sum(len(ids) for w in (victim, other) for ids in w.tried.values()
                                    if ids[0] in _ids(journal))  # fmt: skip


def test_postgres_stopped_immediately_mid_stream_loses_no_acknowledged_record(
    pg_cluster: Cluster,
) -> None:
    url = pg_cluster.new_database()
    PostgresJournal.open(url).close()
    writer, pump = _start(url, "w", 400, 4)
    try:
        _wait_for(lambda: len(writer.acked) >= 40)
        pg_cluster.stop("immediate")  # no checkpoint, no goodbye: a crash
        _wait_for(lambda: len(writer.failed) >= 1)
        time.sleep(0.5)
    finally:
        pg_cluster.start()  # crash recovery replays the WAL
    pump.join(180)
    assert writer.done and writer.process.wait(10) == 0
    assert writer.failed, "the writer never saw PostgreSQL go away"
    counts = _check(url, [writer])
    assert counts["acked_batches"] == len(writer.acked) > 40
    print(f"pg_ctl -m immediate trial: {counts}, failed attempts {len(writer.failed)}")
