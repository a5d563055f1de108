"""Real processes: SIGKILL mid-stream loses no acknowledged record; concurrent writers."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from journal import Journal, MemoryStored, verify

ROOT = Path(__file__).resolve().parents[2]


def spawn(directory: Path, name: str, count: int, batch: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.journal_writer",
            str(directory),
            name,
            str(count),
            str(batch),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def stored_ids(directory: Path) -> dict[str, int]:
    with Journal.open(directory) as journal:
        found: dict[str, int] = {}
        for record in journal.read():
            for event in record.events:
                assert isinstance(event, MemoryStored)
                assert event.memory_id not in found, f"{event.memory_id} appears twice"
                found[event.memory_id] = record.position
        return found


def test_sigkill_at_random_moments_never_loses_an_acknowledged_record(tmp_path: Path) -> None:
    seed = int(os.environ.get("FERREX_TEST_SEED", random.randrange(2**32)))
    print(f"seed={seed}")
    rng = random.Random(seed)
    directory = tmp_path / "j"
    acked: dict[str, int] = {}
    for round_no in range(20):
        proc = spawn(directory, f"r{round_no}", 100_000, batch=rng.choice([1, 1, 7, 50]))
        assert proc.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lines.extend, args=(proc.stdout,))
        reader.start()
        # Kill once the writer has acknowledged a random number of records (plus a random
        # fraction of a record's time), so every round counts whatever the machine's load.
        wanted = rng.randint(6, 40)
        for _ in range(6000):  # polls for the state for up to 5 minutes, not a timing
            if len(lines) >= wanted or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert len(lines) >= wanted, f"seed={seed} round={round_no}: the writer stopped early"
        time.sleep(rng.uniform(0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join()
        proc.stdout.close()
        for line in lines:
            if line.endswith("\n"):  # a line cut by the kill was never fully acknowledged
                memory_id, position = line.split()
                acked[memory_id] = int(position)
        found = stored_ids(directory)
        missing = {m: p for m, p in acked.items() if found.get(m) != p}
        assert not missing, f"seed={seed} round={round_no}: lost acknowledged {missing}"
        report = verify(directory)
        assert report.ok, f"seed={seed} round={round_no}: {report.problem}"
    assert len(acked) > 100, "the writers should have been acknowledged many times"


def test_two_processes_appending_concurrently(tmp_path: Path) -> None:
    directory = tmp_path / "j"
    procs = [spawn(directory, name, 400, batch=b) for name, b in (("a", 1), ("b", 3))]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    acked = dict(line.split() for out in outputs for line in out.splitlines())
    found = stored_ids(directory)
    assert len(found) == 800
    assert {m: str(p) for m, p in found.items()} == acked
    positions = sorted(found.values())
    assert positions == sorted(set(positions))
    with Journal.open(directory) as journal:
        assert [r.position for r in journal.read()] == list(range(1, len(positions) + 1))
    # Each writer's records are in the order it appended them.
    for name in ("a", "b"):
        mine = [found[f"{name}-{i}"] for i in range(400)]
        assert mine == sorted(mine)
    assert verify(directory).ok
