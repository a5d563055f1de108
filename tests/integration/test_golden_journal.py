"""Today's journals must open in every later version: golden journals, byte for byte.

``journal-v1`` was written before records carried a format version (and before a stored
memory said whether its start was given); ``journal-v2`` holds the same commands in today's
format, with that flag. Both must open, verify, decode and accept appends, and v1's memories
read as v2's say they were stored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from journal import FORMAT_VERSION, Journal, MemoryStored, verify
from journal.events import start_given
from projections.rows import Memory
from projections.sqlite import ReadModel
from tests.golden import journal_v1, journal_v2

# The hash chain's heads over the golden files: pin the hashing rules themselves.
GOLDEN_HEADS = {
    1: "bee771d077eda0890d61842f37fbf9e2681fd3144ae66f74696067e79dd6e218",
    2: "a996b6ba4970e571a03baf416e7cf45eaf2f16b1efe0cb5805ae07d53df45f6c",
}
DIRECTORIES = {1: journal_v1.DIRECTORY, 2: journal_v2.DIRECTORY}
COMMANDS = {1: journal_v1.commands, 2: journal_v2.commands}


def test_the_byte_format_has_not_drifted() -> None:
    assert FORMAT_VERSION == 2
    golden = (journal_v2.DIRECTORY / "00000000000000000001.seg").read_bytes()
    assert journal_v2.encode() == golden, (
        "the journal's byte format changed; if deliberate, bump journal.FORMAT_VERSION, keep "
        "a reader for every older version and add a golden journal of the new one"
    )


@pytest.mark.parametrize("version", [1, 2])
def test_a_golden_journal_opens_verifies_and_decodes(tmp_path: Path, version: int) -> None:
    copy = tmp_path / "journal"
    shutil.copytree(DIRECTORIES[version], copy)
    report = verify(copy)
    assert report.ok and report.records == 6 and report.events == 9
    assert report.head_hash.hex() == GOLDEN_HEADS[version]
    with Journal.open(copy) as journal:
        records = list(journal.read())
        assert journal.head.hash == report.head_hash
        assert journal.newest_version == version
        appended = journal.append(COMMANDS[version]()[3])
        assert appended.position == 7 and appended.version == FORMAT_VERSION
        assert journal.newest_version == FORMAT_VERSION
    assert [r.position for r in records] == [1, 2, 3, 4, 5, 6]
    assert {r.version for r in records} == {version}
    for record, expected in zip(records, COMMANDS[version](), strict=True):
        got = [
            msgspec.structs.replace(e, body_hash=None) if isinstance(e, MemoryStored) else e
            for e in record.events
        ]
        assert got == expected
    # An older record followed by a newer one: the chain holds across the versions.
    assert verify(copy).ok
    with Journal.open(copy) as journal:
        assert [r.version for r in journal.read(after=5)] == [version, FORMAT_VERSION]


def test_memories_of_a_journal_without_the_flag_read_as_they_were_stored(tmp_path: Path) -> None:
    """Journal v1's memories carry no ``valid_from_given``: the rule for such records reads
    mem_01 (``t_valid`` its record's time) and mem_03 (two seconds before it) as undated and
    mem_02 (30 days after it) as dated, which is what v2 records of the same stores."""
    copy = tmp_path / "journal"
    shutil.copytree(journal_v1.DIRECTORY, copy)
    with Journal.open(copy) as journal:
        records = list(journal.read())
    old = [
        (e, r.recorded_at.timestamp())
        for r in records
        for e in r.events
        if isinstance(e, MemoryStored)
    ]
    assert all(e.valid_from_given is None for e, _ in old)
    read = {e.memory_id: start_given(e, at) for e, at in old}
    assert read == journal_v2.GIVEN == {"mem_01": False, "mem_02": True, "mem_03": False}
    rows = {
        e.memory_id: Memory.from_event(e, position=1, created_at=at, predicate_normalized=None)
        for e, at in old
    }
    assert {k: m.valid_from_given for k, m in rows.items()} == journal_v2.GIVEN
    # Replayed into a read model (mem_03 was forgotten by the journal's last record).
    model = ReadModel.open(tmp_path / "rm.sqlite")
    model.apply(records)
    replayed = {k: m.valid_from_given for k in journal_v2.GIVEN if (m := model.get(k)) is not None}
    model.close()
    assert replayed == {"mem_01": False, "mem_02": True}
