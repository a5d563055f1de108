"""Today's journals must open in every later version: golden journals, byte for byte.

``journal-v1`` was written before records carried a format version; ``journal-v2`` holds the
same commands in today's format. Both must open, verify, decode and accept appends.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from journal import FORMAT_VERSION, Journal, MemoryStored, verify
from tests.golden import journal_v1, journal_v2
from tests.golden.journal_v1 import commands

# The hash chain's heads over the golden files: pin the hashing rules themselves.
GOLDEN_HEADS = {
    1: "bee771d077eda0890d61842f37fbf9e2681fd3144ae66f74696067e79dd6e218",
    2: "1e4876ce1f2da8c0d125a6287d5c49e95ec122c90ffd0dd7c00f48e894980d52",
}
DIRECTORIES = {1: journal_v1.DIRECTORY, 2: journal_v2.DIRECTORY}


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
        appended = journal.append(commands()[3])
        assert appended.position == 7 and appended.version == FORMAT_VERSION
        assert journal.newest_version == FORMAT_VERSION
    assert [r.position for r in records] == [1, 2, 3, 4, 5, 6]
    assert {r.version for r in records} == {version}
    for record, expected in zip(records, commands(), strict=True):
        got = [
            msgspec.structs.replace(e, body_hash=None) if isinstance(e, MemoryStored) else e
            for e in record.events
        ]
        assert got == expected
    # An older record followed by a newer one: the chain holds across the versions.
    assert verify(copy).ok
    with Journal.open(copy) as journal:
        assert [r.version for r in journal.read(after=5)] == [version, FORMAT_VERSION]
