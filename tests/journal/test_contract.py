"""The journal contract, run against both backends (files and a real PostgreSQL): append,
batch, read, reopen, follow, exclusive, verify, damage, compact. Whatever holds the log, the
records are the same: same positions, hashes, chain."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from journal import EncodeError, Journal, JournalDamaged, MemoriesForgotten
from journal.backend import JournalBackend
from journal.postgres import PostgresJournal
from journal.segment import list_segments
from tests.journal.conftest import Opener
from tests.strategies import stored


def test_append_read_and_reopen(open_journal: Opener) -> None:
    with open_journal() as journal:
        written = [journal.append([stored(i)]) for i in range(1, 21)]
        assert [r.position for r in written] == list(range(1, 21))
        assert journal.head.position == 20 and journal.head.hash == written[-1].hash
        assert list(journal.read(hashes=True)) == written
        assert [r.position for r in journal.read(after=15)] == [16, 17, 18, 19, 20]
        assert list(journal.read(after=20)) == []
    with open_journal() as reopened:
        assert reopened.head.position == 20 and reopened.head.hash == written[-1].hash
        assert list(reopened.read(hashes=True)) == written
        assert reopened.first() == written[0]
        assert reopened.append([stored(21)]).prev_hash == written[-1].hash
        report = reopened.verify()
        assert report.ok and report.records == 21 and report.head_hash == reopened.head.hash


def test_batch_is_one_commit_with_contiguous_positions(open_journal: Opener) -> None:
    journal = open_journal()
    journal.append([stored(0)])
    batch = journal.append_batch([[stored(i), stored(i + 1000)] for i in range(1, 101)])
    assert [r.position for r in batch] == list(range(2, 102))
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(batch))
    assert [len(r.events) for r in journal.read(after=1)] == [2] * 100
    assert journal.append_batch([]) == []


def test_a_bad_event_in_a_batch_writes_nothing(open_journal: Opener) -> None:
    journal = open_journal()
    journal.append([stored(1)])
    with pytest.raises(EncodeError):
        journal.append_batch([[stored(2)], ["not an event"]])  # type: ignore[list-item]
    assert journal.refresh().position == 1
    assert [r.position for r in journal.read()] == [1]
    assert journal.append([stored(3)]).position == 2


def test_handles_see_each_others_appends_and_the_chain_holds(open_journal: Opener) -> None:
    one, two = open_journal(), open_journal()
    one.append([stored(1)])
    two.append([stored(2)])
    one.append([stored(3)])
    assert [r.position for r in two.read()] == [1, 2, 3]
    assert two.refresh().position == 3 == one.head.position
    assert [r.prev_hash for r in one.read(after=1, hashes=True)] == [
        r.hash for r in list(two.read(hashes=True))[:2]
    ]
    assert one.verify().ok


def test_follow_sees_appends_by_another_handle_and_stops(open_journal: Opener) -> None:
    writer, reader = open_journal(), open_journal()
    writer.append([stored(1)])
    stop = threading.Event()
    seen: list[int] = []
    done = threading.Event()

    def consume() -> None:
        for record in reader.follow(after=0, stop=stop, poll_ms=5000):
            seen.append(record.position)
            if len(seen) == 4:
                done.set()
        done.set()

    thread = threading.Thread(target=consume)
    thread.start()
    for i in range(2, 5):
        writer.append([stored(i)])
    # poll_ms is 5 s: seeing all within 3 s means notifications (or the watcher) did it
    assert done.wait(3), f"follower saw only {seen}"
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert seen == [1, 2, 3, 4]


def test_exclusive_holds_other_writers_off_until_released(open_journal: Opener) -> None:
    one, two = open_journal(), open_journal()
    one.append([stored(1)])
    appended = threading.Event()

    def other() -> None:
        two.append([stored(99)])
        appended.set()

    with one.exclusive() as head:
        assert head.position == 1
        thread = threading.Thread(target=other)
        thread.start()
        assert not appended.wait(0.5), "another writer appended inside exclusive()"
        assert one.append([stored(2)]).position == 2  # nested: the lock is re-entrant
    assert appended.wait(10)
    thread.join()
    assert [r.position for r in one.read()] == [1, 2, 3]
    assert one.verify().ok


def test_try_exclusive_takes_a_free_lock_and_skips_a_held_one(open_journal: Opener) -> None:
    one, two = open_journal(), open_journal()
    one.append([stored(1)])
    with one.try_exclusive() as head:
        assert head is not None and head.position == 1
        with two.try_exclusive() as other:
            assert other is None  # another handle (a process, on files) holds it
    with two.try_exclusive() as head:  # released: free again
        assert head is not None and head.position == 1
        assert two.append([stored(2)]).position == 2
    assert [r.position for r in one.read()] == [1, 2]


def test_concurrent_writers_keep_positions_contiguous(open_journal: Opener) -> None:
    handles = [open_journal() for _ in range(4)]

    def write(journal: JournalBackend, base: int) -> None:
        for i in range(25):
            journal.append_batch([[stored(base + i)]] * (1 + i % 3))

    threads = [threading.Thread(target=write, args=(j, 1000 * n)) for n, j in enumerate(handles)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    positions = [r.position for r in handles[0].read()]
    assert positions == list(range(1, 4 * sum(1 + i % 3 for i in range(25)) + 1))
    report = handles[0].verify()
    assert report.ok and report.records == len(positions)


def _damage(journal: JournalBackend, position: int, pg_url: str | None) -> None:
    """Flip one byte of the record at ``position`` where the backend keeps it."""
    if isinstance(journal, PostgresJournal):
        import psycopg

        assert pg_url is not None
        with psycopg.connect(pg_url, autocommit=True) as conn:
            # XOR, not a byte written: byte 69 (the payload's 14th) is 0x00 in a record whose
            # first event is a memory.stored (its map16 header), so writing 0x00 changed nothing.
            conn.execute(
                "UPDATE ferrex_journal_records SET frame = set_byte(frame, 69, "
                "get_byte(frame, 69) # 255) WHERE position = %s",
                (position,),
            )
        return
    assert isinstance(journal, Journal)
    segment = list_segments(journal.directory)[0][1]
    data = bytearray(segment.read_bytes())
    at = [r for r in journal.read(hashes=True)]
    assert at  # records exist; damage the middle of the segment's bytes
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))


def test_damage_is_found_by_read_and_verify(
    open_journal: Opener, request: pytest.FixtureRequest
) -> None:
    journal = open_journal()
    for i in range(1, 6):
        journal.append([stored(i)])
    url = request.getfixturevalue("pg_url") if isinstance(journal, PostgresJournal) else None
    _damage(journal, 3, url)
    report = journal.verify()
    assert not report.ok and report.problem is not None
    assert report.problem.position is not None and report.problem.position <= 3
    assert journal.verify() == report, "verify reads only: a second run finds the same"
    with pytest.raises(JournalDamaged):
        list(open_journal().read())


def test_compact_redacts_forgotten_bodies_and_keeps_the_chain(open_journal: Opener) -> None:
    journal = open_journal()
    kept = [journal.append([stored(i)]) for i in range(1, 4)]
    forgotten_id = kept[1].events[0].memory_id  # type: ignore[union-attr]
    journal.append([MemoriesForgotten(memory_ids=(forgotten_id,), namespace="default")])
    journal.append([stored(9)])
    before = [(r.position, r.hash) for r in journal.read(hashes=True)]
    assert journal.compact() == 1
    after = list(open_journal().read(hashes=True))
    assert [(r.position, r.hash) for r in after] == before
    bodies = {e.memory_id: e.body for r in after for e in r.events if hasattr(e, "body")}
    assert bodies[forgotten_id] is None
    assert all(body is not None for mid, body in bodies.items() if mid != forgotten_id)
    report = journal.verify()
    assert report.ok and report.redacted_bodies == 1
    assert journal.compact() == 0  # idempotent
    assert [(r.position, r.hash) for r in open_journal().read(hashes=True)] == before


def test_files_and_postgres_hold_the_same_frames(tmp_path: Path, pg_url: str) -> None:
    """Frames moved from files to PostgreSQL read back as the same records, hashes and chain,
    and a record appended after them on PostgreSQL chains to the files' head."""
    with Journal.open(tmp_path / "j") as files, PostgresJournal.open(pg_url) as pg:
        files.append_batch([[stored(i)] for i in range(1, 6)])
        frames = [f for _, f in files.frames()]
        head = pg.append_frames(frames)
        assert (head.position, head.hash) == (files.head.position, files.head.hash)
        assert list(pg.read(hashes=True)) == list(files.read(hashes=True))
        assert [f for _, f in pg.frames()] == frames
        assert pg.append([stored(6)]).prev_hash == files.head.hash
        assert pg.verify().ok


def test_verify_counts_and_names_the_head_on_both_backends(open_journal: Opener) -> None:
    journal = open_journal()
    assert journal.verify().ok and journal.verify().head_position == 0
    journal.append_batch([[stored(i), stored(i + 100)] for i in range(1, 8)])
    report = journal.verify()
    assert report.ok and report.problem is None and report.torn_tail is None
    assert (report.records, report.events, report.redacted_bodies) == (7, 14, 0)
    assert (report.head_position, report.head_hash) == (7, journal.head.hash)
    assert journal.verify(decode=False).records == 7
    assert journal.where


def test_verify_beside_a_writer_sees_a_prefix_of_the_chain(open_journal: Opener) -> None:
    """verify takes no lock: run while another handle appends, every report is a clean
    prefix of the final chain."""
    writer, checker = open_journal(), open_journal()
    writer.append([stored(0)])
    done = threading.Event()
    reports = []

    def append() -> None:
        for i in range(1, 41):
            writer.append([stored(i)])
        done.set()

    thread = threading.Thread(target=append)
    thread.start()
    while not done.is_set() or len(reports) < 2:
        reports.append(checker.verify())
    thread.join()
    hashes = {r.position: r.hash for r in checker.read(hashes=True)}
    for report in reports:
        assert report.ok, report.problem
        assert hashes[report.head_position] == report.head_hash


def test_compact_with_nothing_forgotten_changes_nothing(open_journal: Opener) -> None:
    journal = open_journal()
    journal.append_batch([[stored(i)] for i in range(1, 6)])
    before = list(journal.read(hashes=True))
    assert journal.compact() == 0
    assert list(open_journal().read(hashes=True)) == before
    assert journal.verify().ok
