"""The golden journal of format v2 (records carry their format version): how it is written.

``python -m tests.golden.journal_v2`` rewrites ``tests/golden/journal-v2/``. Do that only for
a deliberate format change, after freezing this one (bump ``journal.FORMAT_VERSION``, keep
reading it); the tests prove every later ferrex still reads both golden journals.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

from journal.record import GENESIS_HASH, encode_record
from journal.segment import segment_header, segment_name
from tests.golden.journal_v1 import T0, commands, salt

DIRECTORY = Path(__file__).parent / "journal-v2"


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
