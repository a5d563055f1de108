"""Journal compaction on real files: redaction, the chain, sealing, leftovers, other processes
that read and append meanwhile, and SIGKILL at every step of a real `ferrex journal compact`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import apsw
import numpy as np
import pytest

from ferrex.models import EmbeddingCache, ModelIdentity, cache_path, text_key
from journal import (
    Journal,
    JournalDamaged,
    MemoriesForgotten,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
    repair,
    verify,
)
from journal.compact import compact, plan
from journal.record import encode_record
from journal.segment import HEADER_SIZE, list_segments
from tests.strategies import T0, stored

SEGMENT = 2048
FORGOTTEN = {"m3", "m13", "m33", "m53", "m60"}
SUPERSEDED = "m23"  # superseded, never forgotten: its text stays
IDENTITY = ModelIdentity("test-model", 4, "0" * 64)


def secret(i: int) -> str:
    return f"SECRET-{i:03d} the launch code is {i * 7919:08d}"


def text(i: int) -> str:
    return secret(i) if i % 10 == 3 or i == 60 else f"plain note {i} about the weather"


def build(directory: Path) -> None:
    """60 memories over several segments; five forgotten, one of them in the active one."""
    with Journal.open(directory, segment_bytes=SEGMENT) as journal:
        for i in range(1, 61):
            journal.append([stored(i, text(i))])
            if i == 24:
                journal.append(
                    [MemorySuperseded(memory_id=SUPERSEDED, namespace="default", t_invalid=T0)]
                )
        journal.append(
            [MemoriesForgotten(memory_ids=tuple(sorted(FORGOTTEN)), namespace="default")]
        )


def hashes(directory: Path) -> list[tuple[int, bytes | None]]:
    with Journal.open(directory, segment_bytes=SEGMENT) as journal:
        return [(r.position, r.hash) for r in journal.read(hashes=True)]


def bodies(directory: Path) -> dict[str, MemoryBody | None]:
    with Journal.open(directory, segment_bytes=SEGMENT) as journal:
        return {
            e.memory_id: e.body
            for r in journal.read()
            for e in r.events
            if isinstance(e, MemoryStored)
        }


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def everything(directory: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def leaks(directory: Path) -> list[str]:
    """Forgotten memories whose secret (or a distinctive part of it) is under ``directory``."""
    blob = everything(directory)
    found = []
    for memory_id in sorted(FORGOTTEN):
        i = int(memory_id[1:])
        if any(part.encode() in blob for part in (f"SECRET-{i:03d}", f"{i * 7919:08d}")):
            found.append(memory_id)
    return found


@pytest.fixture
def journal_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "journal"
    build(directory)
    return directory


def test_forgotten_bodies_are_redacted_and_every_hash_is_kept(journal_dir: Path) -> None:
    found = plan(journal_dir)
    assert {t.memory_id for t in found.targets} == FORGOTTEN
    assert found.seal and len(found.segments) >= 4  # sealed segments and the active one
    before_hashes, before_bodies = hashes(journal_dir), bodies(journal_dir)
    assert not verify(journal_dir).redacted_bodies and leaks(journal_dir) == sorted(FORGOTTEN)

    with Journal.open(journal_dir, segment_bytes=SEGMENT) as journal:
        report = compact(journal)

    assert report.redacted == len(FORGOTTEN) and report.sealed is not None
    assert sorted(p for s in report.segments for p in s.positions) == sorted(
        int(m[1:]) + (1 if int(m[1:]) > 24 else 0) for m in FORGOTTEN
    )
    assert all(s.bytes_after < s.bytes_before for s in report.segments)
    # The chain is untouched: every position and every record hash is the same.
    assert hashes(journal_dir) == before_hashes
    after = bodies(journal_dir)
    for memory_id, body in before_bodies.items():
        assert after[memory_id] == (None if memory_id in FORGOTTEN else body), memory_id
    report_v = verify(journal_dir)
    assert report_v.ok and report_v.redacted_bodies == len(FORGOTTEN)
    assert leaks(journal_dir) == []
    # History is kept on purpose: a superseded memory keeps its text.
    assert secret(23).encode() in everything(journal_dir)


def test_compacting_again_changes_nothing(journal_dir: Path) -> None:
    with Journal.open(journal_dir, segment_bytes=SEGMENT) as journal:
        compact(journal)
        once = files(journal_dir)
        again = compact(journal)
    assert again.plan.empty and not again.segments and again.sealed is None
    assert again.plan.already_redacted == len(FORGOTTEN)
    assert files(journal_dir) == once


def test_sealing_moves_appends_to_a_new_segment(journal_dir: Path) -> None:
    head = hashes(journal_dir)[-1]
    active_before = list_segments(journal_dir)[-1][1]
    with Journal.open(journal_dir, segment_bytes=SEGMENT) as journal:
        report = compact(journal)
        assert report.sealed == f"{head[0] + 1:020d}.seg"
        assert journal.head.position == head[0] and journal.head.hash == head[1]
        record = journal.append([stored(100, "after the compaction")])
    segments = list_segments(journal_dir)
    assert segments[-1] == (head[0] + 1, journal_dir / report.sealed)
    assert record.position == head[0] + 1 and record.prev_hash == head[1]
    assert active_before.name in {s.segment for s in report.segments}
    assert verify(journal_dir).ok


def test_a_dry_plan_changes_nothing(journal_dir: Path) -> None:
    before = files(journal_dir)
    found = plan(journal_dir)
    assert found.targets and files(journal_dir) == before


def test_readers_and_writers_opened_before_keep_working(tmp_path: Path) -> None:
    """A writer whose tail, and a reader whose cursor, point into a segment that another
    process then seals and compacts: both find their place again by position."""
    directory = tmp_path / "journal"
    other = Journal.open(directory, segment_bytes=SEGMENT)
    writer = Journal.open(directory, segment_bytes=SEGMENT)
    reader = Journal.open(directory, segment_bytes=SEGMENT)
    try:
        other.append_batch([[stored(i, text(i))] for i in range(1, 5)])
        writer.append([stored(5, text(5))])  # the writer's tail: inside the first segment
        seen = [r.position for r in reader.read()]  # the reader's cursor: there too
        assert seen == [1, 2, 3, 4, 5] and len(list_segments(directory)) == 1
        other.append_batch([[stored(i, text(i))] for i in range(6, 40)])
        other.append([MemoriesForgotten(memory_ids=("m3", "m13", "m33"), namespace="default")])
        assert len(list_segments(directory)) > 2
        before = hashes(directory)

        with Journal.open(directory, segment_bytes=SEGMENT) as compactor:
            report = compact(compactor)
        first = list_segments(directory)[0][1].name
        assert first in {s.segment for s in report.segments}  # moved under both of them

        assert [r.position for r in reader.read(after=5)] == list(range(6, 41))
        record = writer.append([stored(41, "the writer goes on")])
        assert record.position == 41 and record.prev_hash == before[-1][1]
        assert [r.position for r in reader.read(after=40)] == [41]
        assert [r.position for r in other.read(after=0)][-3:] == [39, 40, 41]
        assert hashes(directory)[:40] == before and verify(directory).ok
    finally:
        for journal in (other, writer, reader):
            journal.close()


def test_a_following_process_and_a_writing_process_see_no_break(tmp_path: Path) -> None:
    """Real processes: one appends, one follows; this one forgets and compacts meanwhile."""
    directory = tmp_path / "journal"
    total = 400
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    Journal.open(directory, segment_bytes=16 * 1024).close()
    follower = subprocess.Popen(
        [sys.executable, "-c", _FOLLOWER, str(directory), str(total)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.journal_writer", str(directory), "w", "300"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked: list[int] = []
    compactions = 0
    with Journal.open(directory, segment_bytes=16 * 1024) as journal:
        assert writer.stdout is not None
        for line in writer.stdout:
            memory_id, position = line.split()
            acked.append(int(position))
            n = int(memory_id.split("-")[1])
            if n % 25 == 24:
                journal.append(
                    [MemoriesForgotten(memory_ids=(f"w-{n - 10}",), namespace="default")]
                )
                report = compact(journal)
                compactions += bool(report.segments)
        _, werr = writer.communicate(timeout=60)
        assert writer.returncode == 0, werr
        while journal.refresh().position < total:
            journal.append([stored(10_000 + journal.head.position, "filler")])
        compact(journal)
    out, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    positions = [int(p) for p in out.split()]
    assert positions == list(range(1, total + 1))
    assert compactions >= 5 and len(acked) == 300
    present = {p for p, _ in hashes(directory)}
    assert set(acked) <= present and verify(directory).ok
    assert verify(directory).redacted_bodies >= 12


_FOLLOWER = """
import sys, threading
from pathlib import Path
from journal import Journal
directory, total = Path(sys.argv[1]), int(sys.argv[2])
stop = threading.Event()
with Journal.open(directory) as journal:
    for record in journal.follow(stop=stop, poll_ms=50):
        print(record.position, flush=True)
        if record.position >= total:
            break
"""


def test_torn_and_damaged_leftovers_are_scrubbed(tmp_path: Path) -> None:
    directory = tmp_path / "journal"
    torn_text = "TORN-SECRET the vault combination is 11-22-33-44-55"
    damaged_text = "DAMAGED-SECRET the door code is 9911 and the safe 4471"
    with Journal.open(directory, segment_bytes=1 << 20) as journal:
        journal.append([stored(1, "kept")])
        journal.append([stored(2, damaged_text)])
        journal.append([stored(3, "kept too")])
    # Flip a bit in the frame of record 2: damage with a valid record after it.
    segment = list_segments(directory)[0][1]
    data = bytearray(segment.read_bytes())
    at = bytes(data).index(b"FXRC", HEADER_SIZE + 1)
    data[at + 5] ^= 0x01  # inside the crc
    segment.write_bytes(bytes(data))
    with pytest.raises(JournalDamaged):
        Journal.open(directory).close()
    entry = repair(directory)
    assert entry is not None and entry.saved_to is not None
    damaged = directory / entry.saved_to
    assert damaged_text.encode() in damaged.read_bytes()
    # A write torn in the middle of the text: kept aside as .corrupt-* at the next open.
    with Journal.open(directory) as journal:
        head = journal.head
        frame, _ = encode_record(
            head.position + 1, datetime.now(UTC), head.hash, [stored(4, torn_text)]
        )
    cut = frame.index(torn_text.encode()) + 20
    with open(segment, "ab") as f:
        f.write(frame[:cut])
    with Journal.open(directory) as journal:
        (corrupt,) = (t.saved_to for t in journal.torn_tails)
        assert torn_text.encode()[:20] in corrupt.read_bytes()
        # The agent retried both stores; later they are forgotten.
        journal.append([stored(5, torn_text)])
        journal.append([stored(6, damaged_text)])
        journal.append([MemoriesForgotten(memory_ids=("m5", "m6"), namespace="default")])
        sizes = {p: p.stat().st_size for p in (corrupt, damaged)}
        found = plan(directory)
        assert found.leftovers == sorted([corrupt, damaged])
        report = compact(journal)
    assert sorted(report.leftovers) == sorted([corrupt.name, damaged.name])
    blob = everything(directory)
    for raw in (torn_text.encode(), damaged_text.encode()):
        assert not any(raw[k : k + 8] in blob for k in range(len(raw) - 7)), raw
    # Scrubbed in place of the text, not deleted: the rest of the evidence is kept.
    assert {p: p.stat().st_size for p in (corrupt, damaged)} == sizes
    assert b"FXRC" in corrupt.read_bytes() and verify(directory).ok


# -- SIGKILL at every step of a real `ferrex journal compact` -------------------------------

CRASH_POINTS = [
    "planned",
    "cache-purged",
    "leftover-written",
    "leftover-synced",
    "leftover-renamed",
    "leftover-done",
    "sealed",
    "segment-written",
    "segment-synced",
    "segment-renamed",
    "segment-done",
    "segment-written:2",
    "segment-renamed:2",
    "segment-synced:3",
    "segment-renamed:4",
    "segment-done:5",
    "journal-compacted",
]
LEFTOVER = "00000000000000000001.seg.corrupt-2000-20260101T000000000000Z"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory: the journal of ``build``, a leftover and an embedding cache."""
    home = tmp_path_factory.mktemp("pristine")
    build(home / "journal")
    (home / "journal" / LEFTOVER).write_bytes(b"\x00torn\x00" + secret(13).encode() + b"\x01")
    cache = EmbeddingCache(cache_path(home))
    rows = [(text_key(text(i)), np.full(4, i, dtype=np.float32)) for i in range(1, 61)]
    cache.put_many(IDENTITY, rows)
    cache.close()
    return home


@pytest.fixture(scope="module")
def reference(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same directory after an uninterrupted compaction."""
    home = tmp_path_factory.mktemp("reference") / "home"
    shutil.copytree(pristine, home)
    done = _compact(home)
    assert done.returncode == 0, done.stderr
    return home


def _compact(home: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FERREX_COMPACT_CRASH_AT"}
    if crash_at is not None:
        env["FERREX_COMPACT_CRASH_AT"] = crash_at
    exe = str(Path(sys.executable).with_name("ferrex"))
    return subprocess.run(
        [exe, "--home", str(home), "journal", "compact", "--journal-only", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def _cached(home: Path) -> set[bytes]:
    db = apsw.Connection(str(cache_path(home)))
    try:
        return {bytes(k) for (k,) in db.execute("SELECT text_sha256 FROM vectors")}
    finally:
        db.close()


def test_the_reference_compaction_rewrote_several_segments(pristine: Path, reference: Path) -> None:
    changed = [
        name
        for name, data in files(reference / "journal").items()
        if files(pristine / "journal").get(name) != data
    ]
    segments = [n for n in changed if n.endswith(".seg")]
    assert len(segments) >= 6 and LEFTOVER in changed  # 5 rewritten, 1 sealed (new)
    assert leaks(reference) == []
    forgotten_keys = {text_key(secret(int(m[1:]))) for m in FORGOTTEN}
    assert _cached(pristine) & forgotten_keys == forgotten_keys
    assert not _cached(reference) & forgotten_keys and len(_cached(reference)) == 55


@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_sigkill_at_each_step_loses_nothing_and_a_rerun_finishes(
    crash_at: str, pristine: Path, reference: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(pristine, home)
    original = files(pristine / "journal")
    final = files(reference / "journal")
    expected_hashes = hashes(pristine / "journal")

    done = _compact(home, crash_at)
    assert done.returncode == -signal.SIGKILL, (crash_at, done.returncode, done.stderr)

    # The journal opens and verifies, every acknowledged record is there with its hash, and
    # each file holds either its old bytes or its new ones (a temporary copy aside).
    report = verify(home / "journal")
    assert report.ok and report.torn_tail is None, report.problem
    assert hashes(home / "journal") == expected_hashes
    for name, data in files(home / "journal").items():
        if name.endswith(".compacting"):
            continue
        assert data in (original.get(name), final.get(name)), (crash_at, name)
    forgotten_keys = {text_key(secret(int(m[1:]))) for m in FORGOTTEN}
    left = _cached(home) & forgotten_keys
    assert left == (forgotten_keys if crash_at == "planned" else set())

    done = _compact(home)
    assert done.returncode == 0, done.stderr
    assert files(home / "journal") == final
    assert leaks(home) == []
    assert verify(home / "journal").redacted_bodies == len(FORGOTTEN)
