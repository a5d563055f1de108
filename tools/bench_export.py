"""Git export benchmark: records/s of `ferrex export git` (one fast-import) for a journal
built directly with the journal API (no embeddings needed), then an incremental export of a
few records on top, then `verify --against`. Prints a markdown table; speed is reported,
never asserted.

    python -m tools.bench_export [--records 100000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ferrex.porting.gitexport import export_git
from ferrex.porting.gitverify import verify_against
from journal import (
    EntityCreated,
    Event,
    Journal,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)
from tools import harness
from tools.bench_journal import WORDS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def command(i: int) -> list[Event]:
    """A mix like a real journal: stores with entities, some supersedes and validations."""
    words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(18))
    events: list[Event] = []
    if i % 50 == 0:
        events.append(
            EntityCreated(entity_id=f"ent_{i:08d}", namespace="acme", name=f"service-{i}",
                          normalized=f"service {i}")
        )  # fmt: skip
    events.append(
        MemoryStored(
            memory_id=f"mem_{i:012d}",
            namespace="acme",
            memory_type="episodic",
            t_valid=T0 + timedelta(seconds=i),
            entity_ids=(f"ent_{i // 50 * 50:08d}",),
            agent_id="claude-code",
            body=MemoryBody(content=f"INC-{90000 + i}: {words}.", source="session"),
        )
    )
    if i % 10 == 9:
        events.append(
            MemorySuperseded(memory_id=f"mem_{i - 1:012d}", namespace="acme",
                             t_invalid=T0 + timedelta(seconds=i), superseded_by=f"mem_{i:012d}")
        )  # fmt: skip
    if i % 25 == 0:
        events.append(MemoriesValidated(memory_ids=(f"mem_{i:012d}",), at=T0))
    return events


def build(directory: Path, n: int) -> float:
    start = time.perf_counter()
    with Journal.open(directory) as journal:
        for lo in range(0, n, 10_000):
            journal.append_batch([command(i) for i in range(lo, min(n, lo + 10_000))])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, default=None, help="default: a tmp dir")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    root = args.dir or Path(tempfile.mkdtemp(prefix="ferrex-bench-export-"))
    root.mkdir(parents=True, exist_ok=True)
    journal_dir, target = root / "journal", root / "export"
    shutil.rmtree(journal_dir, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    try:
        built = build(journal_dir, args.records)
        journal_bytes = sum(p.stat().st_size for p in journal_dir.glob("*.seg"))
        with Journal.open(journal_dir) as journal:
            start = time.perf_counter()
            full = export_git(journal, target)
            full_s = time.perf_counter() - start
        with Journal.open(journal_dir) as journal:
            journal.append_batch([command(args.records + k) for k in range(10)])
            start = time.perf_counter()
            incremental = export_git(journal, target)
            incremental_s = time.perf_counter() - start
            start = time.perf_counter()
            report = verify_against(journal, target)
            verify_s = time.perf_counter() - start
        git_bytes = sum(p.stat().st_size for p in (target / ".git").rglob("*") if p.is_file())
        fsck = subprocess.run(
            ["git", "-C", str(target), "fsck", "--strict", "--no-dangling"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        n = full.summary.records
        print(f"| measure ({n:,} records, journal {journal_bytes / 1e6:.1f} MB) | value |")
        print("|---|---|")
        print(f"| build journal (append_batch) | {built:.1f} s |")
        print(f"| full export: one commit | {full_s:.1f} s, **{n / full_s:,.0f} records/s** |")
        print(f"| incremental export: 10 records, 1 commit | {incremental_s:.2f} s "
              f"({len(incremental.commits)} commit) |")  # fmt: skip
        print(f"| verify --against ({report.checked:,} records, ok={report.ok}) | "
              f"{verify_s:.1f} s, {report.checked / verify_s:,.0f} records/s |")  # fmt: skip
        print(f"| .git size | {git_bytes / 1e6:.1f} MB |")
        print(f"| git fsck --strict | {'clean' if fsck.returncode == 0 else fsck.stderr[:200]} |")
        print(f"| load (os.getloadavg) | {' '.join(f'{x:.2f}' for x in os.getloadavg())} |")
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
