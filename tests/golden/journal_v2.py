"""The golden journal of format v2 (records carry their format version): how it is written.

``python -m tests.golden.journal_v2`` rewrites ``tests/golden/journal-v2/``. Do that only for
a deliberate format change, after freezing this one (bump ``journal.FORMAT_VERSION``, keep
reading it); the tests prove every later ferrex still reads both golden journals.

Its commands are journal v1's, each ``memory.stored`` saying whether its start was given
(``valid_from_given``), as every one has since that field came. It was written again once for
that field, deliberately: the field made every ``memory.stored`` a map of up to 16 keys,
which msgspec heads with a map16 (see ``journal.events.MemoryStored.valid_from_given``).
The record format did not change (an older ferrex decodes the field away), so
``FORMAT_VERSION`` stayed 2. Journal v1, written without the field, is the old journal that
must still open, and the flags here are what the rule for such records reads there.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import msgspec

from journal import Event, MemoryStored
from journal.record import GENESIS_HASH, encode_record
from journal.segment import segment_header, segment_name
from tests.golden import journal_v1
from tests.golden.journal_v1 import T0, salt

DIRECTORY = Path(__file__).parent / "journal-v2"

GIVEN = {"mem_01": False, "mem_02": True, "mem_03": False}
"""Whether each memory's start was given: ``mem_02`` is dated 30 days after its record,
the others' ``t_valid`` is their record's time (or two seconds before it)."""


def commands() -> list[list[Event]]:
    return [
        [
            msgspec.structs.replace(e, valid_from_given=GIVEN[e.memory_id])
            if isinstance(e, MemoryStored)
            else e
            for e in events
        ]
        for events in journal_v1.commands()
    ]


def encode() -> bytes:
    out = bytearray(segment_header())
    prev = GENESIS_HASH
    for i, events in enumerate(commands()):
        frame, record = encode_record(i + 1, T0 + timedelta(seconds=i), prev, events, salt=salt)
        out += frame
        assert record.hash is not None
        prev = record.hash
    return bytes(out)


def main() -> None:
    DIRECTORY.mkdir(exist_ok=True)
    (DIRECTORY / segment_name(1)).write_bytes(encode())
    sys.stdout.write(f"wrote {DIRECTORY}\n")


if __name__ == "__main__":
    main()
