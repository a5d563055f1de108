"""A writer process for the crash and concurrency tests.

Usage: python -m tests.integration.journal_writer DIR NAME COUNT [BATCH]
Appends COUNT records (in batches of BATCH), printing ``NAME POSITION`` for every record
as soon as its append has returned, i.e. once it is acknowledged (fsynced).
"""

from __future__ import annotations

import sys
from pathlib import Path

from journal import Journal, MemoryBody, MemoryStored
from tests.strategies import T0


def main() -> None:
    directory, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    with Journal.open(directory, segment_bytes=16 * 1024) as journal:
        i = 0
        while i < count:
            commands = [
                [
                    MemoryStored(
                        memory_id=f"{name}-{j}",
                        namespace="default",
                        memory_type="episodic",
                        t_valid=T0,
                        body=MemoryBody(content=f"{name} wrote record {j} " + "z" * (j % 50)),
                    )
                ]
                for j in range(i, min(i + batch, count))
            ]
            for record in journal.append_batch(commands):
                event = record.events[0]
                assert isinstance(event, MemoryStored)
                sys.stdout.write(f"{event.memory_id} {record.position}\n")
            sys.stdout.flush()
            i += len(commands)


if __name__ == "__main__":
    main()
