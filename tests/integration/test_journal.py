"""The journal on real files: append, group commit, segments, read, reopen, follow."""

from __future__ import annotations

import errno
import itertools
import os
import threading
from datetime import datetime, timedelta
from pathlib import Path

import msgspec
import pytest

import journal.record as record_module
from journal import FORMAT_VERSION, EncodeError, Journal, JournalTooNew, MemoryStored, verify
from journal.segment import list_segments
from tests.strategies import T0, stored


def test_append_read_and_reopen(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        written = [journal.append([stored(i)]) for i in range(1, 21)]
        assert [r.position for r in written] == list(range(1, 21))
        assert journal.head.position == 20 and journal.head.hash == written[-1].hash
        assert list(journal.read(hashes=True)) == written
        assert [r.position for r in journal.read(after=15)] == [16, 17, 18, 19, 20]
        assert list(journal.read(after=20)) == []
    with Journal.open(tmp_path / "j") as reopened:
        assert reopened.head.position == 20 and reopened.head.hash == written[-1].hash
        assert list(reopened.read(hashes=True)) == written
        assert [r.hash for r in reopened.read()] == [None] * 20
        assert reopened.append([stored(21)]).prev_hash == written[-1].hash


def test_batch_is_one_group_commit_with_contiguous_positions(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        journal.append([stored(0)])
        batch = journal.append_batch([[stored(i), stored(i + 1000)] for i in range(1, 101)])
        assert [r.position for r in batch] == list(range(2, 102))
        assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(batch))
        assert [len(r.events) for r in journal.read(after=1)] == [2] * 100
        assert journal.append_batch([]) == []


def test_segments_roll_at_the_size_limit_and_are_named_by_first_position(
    tmp_path: Path,
) -> None:
    with Journal.open(tmp_path / "j", segment_bytes=4096) as journal:
        journal.append_batch([[stored(i, "x" * 300)] for i in range(1, 61)])
        for i in range(61, 81):
            journal.append([stored(i, "y" * 300)])
        segments = list_segments(tmp_path / "j")
        assert len(segments) > 3
        sizes = [path.stat().st_size for _, path in segments]
        # Every sealed segment stopped growing once it passed the limit (one record over).
        assert all(size < 4096 + 600 for size in sizes)
        positions = [r.position for r in journal.read()]
        assert positions == list(range(1, 81))
        starts = {first for first, _ in segments}
        assert {r.position for r in journal.read() if r.position in starts} == starts
        assert [r.position for r in journal.read(after=45)] == list(range(46, 81))
    report = verify(tmp_path / "j")
    assert report.ok and report.records == 80 and report.segments == len(segments)


def test_a_bad_event_in_a_batch_writes_nothing(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        journal.append([stored(1)])
        naive = MemoryStored(
            memory_id="m2", namespace="n", memory_type="episodic", t_valid=datetime(2026, 1, 1)
        )
        size_before = sum(p.stat().st_size for _, p in list_segments(tmp_path / "j"))
        with pytest.raises(EncodeError):
            journal.append_batch([[stored(2)], [naive]])
        size_after = sum(p.stat().st_size for _, p in list_segments(tmp_path / "j"))
        assert size_after == size_before
        assert journal.head.position == 1
        assert journal.append([stored(2)]).position == 2


def test_recorded_at_never_goes_backwards(tmp_path: Path) -> None:
    times = iter([T0, T0 - timedelta(hours=1), T0 + timedelta(seconds=1)])
    with Journal.open(tmp_path / "j", clock=lambda: next(times)) as journal:
        a, b, c = (journal.append([stored(i)]) for i in range(3))
    assert a.recorded_at == T0 and b.recorded_at == T0 and c.recorded_at > T0


def test_two_journal_objects_see_each_others_appends(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as one, Journal.open(tmp_path / "j") as two:
        one.append([stored(1)])
        two.append([stored(2)])  # catches up under the lock before appending
        one.append([stored(3)])
        assert [r.position for r in two.read()] == [1, 2, 3]
        assert two.refresh().position == 3
        assert verify(tmp_path / "j").ok


def test_follow_sees_appends_and_stops_cleanly(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as writer, Journal.open(tmp_path / "j") as reader:
        writer.append([stored(1)])
        stop = threading.Event()
        seen: list[int] = []
        done = threading.Event()

        def consume() -> None:
            for record in reader.follow(after=0, stop=stop, poll_ms=200):
                seen.append(record.position)
                if len(seen) == 4:
                    done.set()
            done.set()

        thread = threading.Thread(target=consume)
        thread.start()
        for i in range(2, 5):
            writer.append([stored(i)])
        assert done.wait(10), f"follower saw only {seen}"
        stop.set()
        thread.join(10)
        assert not thread.is_alive()
        assert seen == [1, 2, 3, 4]


def test_open_refuses_a_file_in_place_of_the_directory(tmp_path: Path) -> None:
    (tmp_path / "j").write_text("not a journal")
    with pytest.raises(Exception, match="not a directory"):
        Journal.open(tmp_path / "j")


def test_a_foreign_file_named_like_a_segment_is_refused(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        journal.append([stored(1)])
    seg = list_segments(tmp_path / "j")[0][1]
    data = seg.read_bytes()
    (tmp_path / "j" / "00000000000000000002.seg").write_bytes(b"hello world, not ours" + data)
    from journal import JournalError

    with pytest.raises(JournalError):
        Journal.open(tmp_path / "j")


def test_empty_journal(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        assert journal.head.position == 0 and list(journal.read()) == []
    assert verify(tmp_path / "j").ok


def test_exclusive_holds_other_writers_off_until_released(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as one, Journal.open(tmp_path / "j") as two:
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
            record = one.append([stored(2)])  # nested append: the lock is re-entrant
            assert record.position == 2
        assert appended.wait(10)
        thread.join()
        assert [r.position for r in one.read()] == [1, 2, 3]
        assert verify(tmp_path / "j").ok


def test_one_hold_walks_the_journal_once_and_again_after_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside one hold of the lock nobody else can append, so the appends after the first
    do not look for other writers' records again; but a write that failed half way left
    bytes that the next append in the same hold must cut before it writes."""
    with Journal.open(tmp_path / "j") as journal:
        journal.append([stored(1)])
        real_write = os.write
        listed = 0

        def counted(directory: Path) -> list[tuple[int, Path]]:
            nonlocal listed
            listed += 1
            return list_segments(directory)

        def half(fd: int, data: bytes | memoryview) -> int:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr("journal.log.list_segments", counted)
        with journal.exclusive():
            journal.append([stored(2)])
            journal.append([stored(3)])
            assert listed == 1  # the hold's first walk only
            monkeypatch.setattr(os, "write", half)
            with pytest.raises(OSError):
                journal.append([stored(4)])
            monkeypatch.setattr(os, "write", real_write)
            assert journal.append([stored(5)]).position == 4
            assert listed == 2 and len(journal.torn_tails) == 1
        journal.append([stored(6)])
        assert listed == 3  # a new hold walks again
    with Journal.open(tmp_path / "j") as reopened:
        assert [r.position for r in reopened.read()] == [1, 2, 3, 4, 5]
        assert reopened.torn_tails == []
    assert verify(tmp_path / "j").ok


def test_a_caught_up_reader_resumes_at_the_head_instead_of_rescanning(tmp_path: Path) -> None:
    """A process that opened the journal and read nothing new still remembers where the head
    record is, so its next ``read(after=head)`` decodes one frame, not the whole segment
    (recall in a fresh server process at 100k memories spent ~100 ms a call rescanning)."""
    with Journal.open(tmp_path / "j") as writer:
        writer.append_batch([[stored(i)] for i in range(50)])
        head = writer.head.position
    reader = Journal.open(tmp_path / "j")
    try:
        assert list(reader.read(after=head)) == []
        cursor = reader._reader._cursor
        assert cursor is not None and cursor[0] == head and cursor[2] > 0
        with Journal.open(tmp_path / "j") as other:
            other.append([stored(99)])
        assert [r.position for r in reader.read(after=head)] == [head + 1]
    finally:
        reader.close()


# --- record format versions -------------------------------------------------------------------


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != "LOCK"}


def _append_as_version(directory: Path, version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Append one record with the real writer, as a ferrex whose format is ``version``."""
    with monkeypatch.context() as patched:
        patched.setattr(record_module, "FORMAT_VERSION", version)
        with Journal.open(directory) as newer:
            assert newer.append([stored(99, "written by a newer ferrex")]).version == version


def test_records_carry_the_format_version(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j") as journal:
        assert journal.newest_version == 0
        assert journal.append([stored(1)]).version == FORMAT_VERSION == 2
        assert journal.newest_version == FORMAT_VERSION
    with Journal.open(tmp_path / "j") as journal:
        assert [r.version for r in journal.read()] == [FORMAT_VERSION]
        assert journal.newest_version == FORMAT_VERSION


def test_a_journal_with_newer_records_is_refused_at_open_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "j"
    with Journal.open(directory) as journal:
        journal.append([stored(1)])
    _append_as_version(directory, FORMAT_VERSION + 1, monkeypatch)
    before = _snapshot(directory)
    with pytest.raises(JournalTooNew) as raised:
        Journal.open(directory)
    error = raised.value
    assert error.code == "too_new"
    assert (error.found, error.supported) == (FORMAT_VERSION + 1, FORMAT_VERSION)
    assert f"format version {FORMAT_VERSION + 1}" in error.message
    assert f"this ferrex's {FORMAT_VERSION}" in error.message
    assert _snapshot(directory) == before
    assert verify(directory).ok  # the chain holds across versions


def test_a_torn_tail_after_newer_records_is_not_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "j"
    _append_as_version(directory, FORMAT_VERSION + 1, monkeypatch)
    (_, segment), *_ = list_segments(directory)
    with segment.open("ab") as f:
        f.write(b"FXRC torn")
    before = _snapshot(directory)
    with pytest.raises(JournalTooNew):
        Journal.open(directory)
    assert _snapshot(directory) == before  # no cut, no .corrupt file


def test_an_open_journal_refuses_to_append_once_newer_records_arrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "j"
    with Journal.open(directory) as journal:
        journal.append([stored(1)])
        _append_as_version(directory, FORMAT_VERSION + 1, monkeypatch)
        with pytest.raises(JournalTooNew):
            journal.append([stored(2)])
        with pytest.raises(JournalTooNew), journal.exclusive():
            pass
        # Reading what it understands still works: the newer record reads as far as it can.
        assert [(r.position, r.version) for r in journal.read()] == [
            (1, FORMAT_VERSION),
            (2, FORMAT_VERSION + 1),
        ]
    assert [p.name for p in sorted(directory.iterdir()) if p.suffix == ".seg"] == [
        "00000000000000000001.seg"
    ]


def test_a_record_of_an_unknown_layout_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "j"
    with Journal.open(directory) as journal:
        journal.append([stored(1)])
    (_, segment), *_ = list_segments(directory)
    with Journal.open(directory) as journal:
        prev = journal.head.hash
    # A checksummed frame whose payload is a map: a layout no format version has.
    head = msgspec.msgpack.encode({"format": "from the future"})
    with segment.open("ab") as f:
        f.write(record_module._frame(2, prev, head, b"\xc0"))
    with pytest.raises(JournalTooNew) as raised:
        Journal.open(directory)
    assert raised.value.found is None
    assert "format this ferrex does not know" in raised.value.message


def test_first_is_the_first_record_with_its_hash(tmp_path: Path) -> None:
    with Journal.open(tmp_path / "j", segment_bytes=1024) as journal:
        assert journal.first() is None
        journal.append_batch([[stored(i, "x" * 200)] for i in range(1, 20)])
        first = journal.first()
        expected = next(iter(journal.read(hashes=True)))
    assert len(list_segments(tmp_path / "j")) > 1
    assert first is not None and first.position == 1
    assert first.hash == expected.hash and first.events == expected.events
