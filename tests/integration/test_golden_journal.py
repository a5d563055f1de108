"""Today's journals must open in every later version: a golden v1 journal, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from journal import Journal, MemoryStored, verify
from tests.golden.journal_v1 import DIRECTORY, commands, encode

# The hash chain's head over the golden file: pins the hashing rules themselves.
GOLDEN_HEAD = "bee771d077eda0890d61842f37fbf9e2681fd3144ae66f74696067e79dd6e218"


def test_the_byte_format_has_not_drifted() -> None:
    golden = (DIRECTORY / "00000000000000000001.seg").read_bytes()
    assert encode() == golden, (
        "the journal's byte format changed; if deliberate, bump the format version, keep a "
        "reader for v1 and regenerate with `python -m tests.golden.journal_v1`"
    )


def test_the_golden_journal_opens_verifies_and_decodes(tmp_path: Path) -> None:
    copy = tmp_path / "journal"
    shutil.copytree(DIRECTORY, copy)
    report = verify(copy)
    assert report.ok and report.records == 6 and report.events == 9
    assert report.head_hash.hex() == GOLDEN_HEAD
    with Journal.open(copy) as journal:
        records = list(journal.read())
        assert journal.head.hash == report.head_hash
        assert journal.append(commands()[3]).position == 7
    assert [r.position for r in records] == [1, 2, 3, 4, 5, 6]
    for record, expected in zip(records, commands(), strict=True):
        got = [
            msgspec.structs.replace(e, body_hash=None) if isinstance(e, MemoryStored) else e
            for e in record.events
        ]
        assert got == expected
