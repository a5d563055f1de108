"""Recovery on open: torn tails are cut (and kept), damage is refused, repair is explicit."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from journal import Journal, JournalDamaged, JournalFormatError, plan_repair, repair, verify
from journal.record import check_frame
from journal.segment import HEADER_SIZE, list_segments
from tests.strategies import stored


def build(directory: Path, n: int, segment_bytes: int = 64 * 1024 * 1024) -> list[int]:
    """A journal of n records (some in batches); returns each record's end offset."""
    with Journal.open(directory, segment_bytes=segment_bytes) as journal:
        journal.append_batch([[stored(i, f"text {i} " * (i % 7))] for i in range(1, n // 2)])
        for i in range(n // 2, n + 1):
            journal.append([stored(i)])
        assert journal.head.position == n
    return frame_ends(list_segments(directory)[-1][1])


def frame_ends(segment: Path) -> list[int]:
    data = segment.read_bytes()
    ends, offset = [], HEADER_SIZE
    while offset < len(data):
        info = check_frame(data, offset, len(data))
        assert not isinstance(info, str)
        offset += info.length
        ends.append(offset)
    return ends


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.name != "LOCK"}


@pytest.fixture(scope="module")
def single_segment() -> tuple[bytes, list[int]]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "j"
        ends = build(d, 24)
        return list_segments(d)[0][1].read_bytes(), ends


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_cut_at_any_byte_recovers_exactly_the_complete_records(
    single_segment: tuple[bytes, list[int]], data: st.DataObject
) -> None:
    content, ends = single_segment
    cut = data.draw(st.integers(min_value=0, max_value=len(content)), label="cut")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "j"
        d.mkdir()
        seg = d / "00000000000000000001.seg"
        seg.write_bytes(content[:cut])
        complete = sum(1 for end in ends if end <= cut)
        with Journal.open(d) as journal:
            assert journal.head.position == complete
            assert [r.position for r in journal.read()] == list(range(1, complete + 1))
            torn = cut - (ends[complete - 1] if complete else HEADER_SIZE)
            if cut < HEADER_SIZE:
                assert [t.offset for t in journal.torn_tails] == [0]
            elif torn > 0:
                (tail,) = journal.torn_tails
                assert (
                    tail.length == torn and tail.saved_to.read_bytes() == content[cut - torn : cut]
                )
            else:
                assert journal.torn_tails == []
            nxt = journal.append([stored(1000)])
            assert nxt.position == complete + 1
        assert verify(d).ok


def test_cut_in_the_last_of_several_segments(tmp_path: Path) -> None:
    d = tmp_path / "j"
    build(d, 60, segment_bytes=2048)
    segments = list_segments(d)
    assert len(segments) >= 3
    last_first, last = segments[-1]
    ends = frame_ends(last)
    last.write_bytes(last.read_bytes()[: ends[0] + 5])  # one whole record, then 5 torn bytes
    with Journal.open(d) as journal:
        assert journal.head.position == last_first
        assert len(journal.torn_tails) == 1
        assert journal.append([stored(99)]).position == last_first + 1
    assert verify(d).ok


def test_garbage_after_the_last_record_is_a_torn_tail(tmp_path: Path) -> None:
    d = tmp_path / "j"
    build(d, 10)
    seg = list_segments(d)[0][1]
    with open(seg, "ab") as f:
        f.write(b"\x00" * 700)
    report = verify(d)
    assert report.ok and report.torn_tail is not None and report.torn_tail.length == 700
    with Journal.open(d) as journal:
        assert journal.head.position == 10
        assert journal.torn_tails[0].saved_to.read_bytes() == b"\x00" * 700


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["active", "sealed"])
def test_a_flipped_byte_with_records_after_it_is_damage_not_a_torn_tail(
    tmp_path: Path, where: str
) -> None:
    d = tmp_path / "j"
    build(d, 40, segment_bytes=2048 if where == "sealed" else 64 * 1024 * 1024)
    segments = list_segments(d)
    first, seg = segments[0] if where == "sealed" else segments[-1]
    ends = frame_ends(seg)
    victim_start = ends[1]  # the third record of that segment; more follow it
    victim_position = first + 2
    flip(seg, victim_start + 70)
    before = snapshot(d)

    with pytest.raises(JournalDamaged) as caught:
        Journal.open(d)
    assert caught.value.segment == seg and caught.value.offset == victim_start
    assert seg.name in str(caught.value) and str(victim_start) in str(caught.value)
    assert snapshot(d) == before, "open must not truncate or move anything on damage"

    report = verify(d)
    assert report.problem is not None and report.problem.kind == "frame"
    assert (report.problem.segment, report.problem.offset) == (seg, victim_start)
    assert snapshot(d) == before, "verify is read-only"

    planned = plan_repair(d)
    assert planned is not None and planned.lost_positions == (victim_position, victim_position)
    assert snapshot(d) == before, "a dry run changes nothing"
    done = repair(d)
    assert done is not None and done.lost_positions == (victim_position, victim_position)
    assert done.saved_to is not None and (d / done.saved_to).exists()

    report = verify(d)
    assert report.ok and report.gaps == [victim_position + 1]
    with Journal.open(d) as journal:
        positions = [r.position for r in journal.read()]
        assert positions == [p for p in range(1, 41) if p != victim_position]
        assert journal.append([stored(41)]).position == 41
    assert verify(d).ok


def test_a_rewritten_record_breaks_the_chain(tmp_path: Path) -> None:
    """Swap in a record with a valid checksum from another journal: the chain tells."""
    build(tmp_path / "a", 6)
    with Journal.open(tmp_path / "b") as other:
        other.append_batch([[stored(i, f"other {i}")] for i in range(1, 7)])
    a = list_segments(tmp_path / "a")[0][1]
    b = list_segments(tmp_path / "b")[0][1]
    ea, eb = frame_ends(a), frame_ends(b)
    forged = a.read_bytes()[: ea[2]] + b.read_bytes()[eb[2] : eb[3]] + a.read_bytes()[ea[3] :]
    a.write_bytes(forged)
    report = verify(tmp_path / "a")
    assert report.problem is not None and report.problem.kind == "chain"
    assert report.problem.position == 4
    with pytest.raises(JournalDamaged, match="does not chain"):
        Journal.open(tmp_path / "a")


def test_a_missing_sealed_segment_is_damage(tmp_path: Path) -> None:
    d = tmp_path / "j"
    build(d, 60, segment_bytes=2048)
    segments = list_segments(d)
    segments[1][1].unlink()
    with pytest.raises(JournalDamaged, match="starts at position"):
        Journal.open(d)
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def three_segments() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "j"
        build(d, 30, segment_bytes=2048)
        assert len(list_segments(d)) >= 3
        return snapshot(d)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_open_and_verify_judge_every_damage_alike(
    three_segments: dict[str, bytes], data: st.DataObject
) -> None:
    """Open (which recovers) and verify (which reports) walk the segments by one set of rules
    (``journal.walk``): for a flipped byte, a cut or a missing segment anywhere, verify finds a
    problem exactly where open refuses, and a torn tail exactly where open cuts one."""
    names = sorted(three_segments)
    victim = data.draw(st.sampled_from(names), label="segment")
    size = len(three_segments[victim])
    harm = data.draw(st.sampled_from(["flip", "cut", "drop"]), label="harm")
    at = data.draw(st.integers(min_value=0, max_value=size - 1), label="offset")
    with tempfile.TemporaryDirectory() as tmp:
        checked, opened = Path(tmp) / "checked", Path(tmp) / "opened"
        for d in (checked, opened):
            d.mkdir()
            for name, content in three_segments.items():
                if name == victim and harm == "drop":
                    continue
                if name == victim and harm == "cut":
                    content = content[:at]
                elif name == victim and harm == "flip":
                    flipped = bytearray(content)
                    flipped[at] ^= 0x40
                    content = bytes(flipped)
                (d / name).write_bytes(content)
        report = verify(checked)
        try:
            journal = Journal.open(opened)
        except JournalFormatError as exc:
            assert report.problem is not None and report.problem.kind == "header", exc
            assert report.problem.segment.name in str(exc)
            return
        except JournalDamaged as exc:
            assert report.problem is not None, exc
            assert (report.problem.segment.name, report.problem.offset) == (
                exc.segment.name,
                exc.offset,
            )
            return
        with journal:
            assert report.problem is None, report.problem
            assert (journal.head.position, journal.head.hash) == (
                report.head_position,
                report.head_hash,
            )
            cut = [(t.segment.name, t.offset, t.length) for t in journal.torn_tails]
            noted = report.torn_tail
            assert cut == (
                [] if noted is None else [(noted.segment.name, noted.offset, noted.length)]
            )
