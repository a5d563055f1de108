"""A writer process for the PostgreSQL fault tests.

Usage: python -m tests.journal.pg_writer URL NAME BATCHES BATCH
Appends BATCHES batches of BATCH records. For each it prints ``TRY k id,id,…`` before the
append, then ``ACK k position,…`` once the append has returned (committed), or ``ERR k``
when it failed (PostgreSQL away: the writer waits a little and goes on with new ids).
"""

from __future__ import annotations

import sys
import time

from journal import JournalError, MemoryBody, MemoryStored
from journal.postgres import PostgresJournal
from tests.strategies import T0


def main() -> None:
    url, name, batches, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    journal = PostgresJournal.open(url)
    for k in range(batches):
        ids = [f"{name}-{k}-{j}" for j in range(size)]
        commands = [
            [MemoryStored(memory_id=i, namespace="default", memory_type="episodic", t_valid=T0,
                          body=MemoryBody(content=f"{i} " + "z" * (k % 40)))]
            for i in ids
        ]  # fmt: skip
        print(f"TRY {k} {','.join(ids)}", flush=True)
        try:
            records = journal.append_batch(commands)
        except JournalError:
            print(f"ERR {k}", flush=True)
            time.sleep(0.2)
            continue
        print(f"ACK {k} {','.join(str(r.position) for r in records)}", flush=True)
    journal.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
