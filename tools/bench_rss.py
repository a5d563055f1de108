"""A stdio server's memory on a data directory: in all, anonymous, and file-backed (Qdrant's apart).

    python -m tools.bench_rss --home DIR [--calls 30] [--baseline PATH] [--rebuild]
        [--mappings N] [--noisy]

A fresh copy of DIR (say a 10k home ``python -m tools.bench --reuse`` built) is served by ``ferrex``
(this tree's, or ``--ferrex PATH``) through the MCP SDK's stdio client; its memory is read
from ``/proc/PID/smaps`` after the first store, after the first recall, and after ``--calls``
store+recall pairs (new texts; recalls of five words of the benchmark's vocabulary, and every
third one of a single word all the memories of a ``tools/bench.py`` home hold, so that all of
them score alike). Reported: RSS in all, anonymous memory (the heap, ONNX Runtime's
arena and weights, Python), file-backed pages of Qdrant Edge's files under the copy
(mapped segment and WAL files: clean pages the kernel may drop) and the other file-backed
pages (the shared libraries). ``--baseline PATH``: another ``ferrex`` executable measured
right after, on another fresh copy (an A/B in one run). ``--rebuild``: each side first
rebuilds its copy's projections (``ferrex replay``), so that the collections are the ones
that side's version creates (how Qdrant stores a collection is fixed when it is made: a home
made before keeps its old layout until a rebuild). ``--mappings N``: the N largest resident
mappings at the end. Nothing is asserted: it prints.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tools import harness
from tools.bench_journal import WORDS


def memory(pid: int, qdrant: Path) -> dict[str, int]:
    """MB of ``pid``'s resident memory: ``all``, ``anonymous``, ``qdrant_files`` and
    ``other_files``."""
    kb = {"all": 0, "anonymous": 0, "qdrant_files": 0, "other_files": 0}
    path = ""
    prefix = str(qdrant.resolve()) + os.sep
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as smaps:
        for line in smaps:
            head, _, rest = line.partition(" ")
            if "-" in head and not head.endswith(":"):  # a mapping's first line
                fields = rest.split()
                path = fields[4] if len(fields) > 4 else ""
                continue
            value = rest.split()
            if head not in ("Rss:", "Anonymous:"):
                continue
            size = int(value[0])
            kb["all" if head == "Rss:" else "anonymous"] += size
            if path.startswith("/"):  # a file's pages: its Rss less its copied-on-write ones
                kind = "qdrant_files" if path.startswith(prefix) else "other_files"
                kb[kind] += size if head == "Rss:" else -size
    return {key: value // 1024 for key, value in kb.items()}


def mappings(pid: int, root: Path, top: int) -> list[str]:
    """The ``top`` largest resident groups of ``pid``'s mappings, as lines: each file under
    ``root`` by its path there (a segment's directory name cut, so both collections' files
    of one kind stay apart but read alike), every other file by its name, anonymous memory
    as ``[anon]`` (with ``[heap]`` and the stack apart)."""
    kb: dict[str, list[int]] = {}  # name -> [rss, anonymous, size]
    prefix = str(root.resolve()) + os.sep
    name = ""
    with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as smaps:
        for text in smaps:
            head, _, rest = text.partition(" ")
            if "-" in head and not head.endswith(":"):
                fields = rest.split()
                path = fields[4] if len(fields) > 4 else "[anon]"
                if path.startswith(prefix):
                    parts = path[len(prefix) :].split(os.sep)
                    name = os.sep.join(p[:8] if i == 3 else p for i, p in enumerate(parts))
                else:
                    name = Path(path).name if path.startswith("/") else path
                continue
            if head in ("Rss:", "Anonymous:", "Size:"):
                sums = kb.setdefault(name, [0, 0, 0])
                sums[("Rss:", "Anonymous:", "Size:").index(head)] += int(rest.split()[0])
    ranked = sorted(kb.items(), key=lambda item: -item[1][0])[:top]
    return [
        f"    {rss / 1024:7.1f} MB resident ({anon / 1024:.1f} anonymous) of {size / 1024:.1f} MB"
        f" mapped: {name}"
        for name, (rss, anon, size) in ranked
    ]


def line(label: str, mb: dict[str, int]) -> str:
    return (f"{label}: RSS {mb['all']} MB in all; anonymous {mb['anonymous']} MB; "
            f"file-backed: Qdrant's files {mb['qdrant_files']} MB, "
            f"other files {mb['other_files']} MB")  # fmt: skip


def _child_pid() -> int:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            parts = stat.read_text().rsplit(")", 1)[1].split()
            if int(parts[1]) == os.getpid():
                return int(stat.parent.name)
    raise RuntimeError("the ferrex server process was not found")


async def measure(
    ferrex: str, home: Path, calls: int, top: int = 0, *, rebuild: bool = False
) -> None:
    copy = harness.home_copy(home, Path(tempfile.mkdtemp(prefix="ferrex-bench-rss-")))
    if rebuild:
        done = subprocess.run([ferrex, "--home", str(copy), "replay"], capture_output=True,
                              text=True, check=True)  # fmt: skip
        print(f"  rebuilt: {done.stdout.strip() or done.stderr.strip()}")
    params = StdioServerParameters(command=ferrex, args=["--home", str(copy)], env=dict(os.environ))
    rng = random.Random(5)
    try:
        async with Client(params, read_timeout_seconds=600) as client:
            pid = _child_pid()
            qdrant = copy / "qdrant"
            await client.call_tool("store", {"content": f"first note {time.time_ns()}"})
            print(line("  after the first store", memory(pid, qdrant)))
            await client.call_tool("recall", {"query": "what did we decide about the release"})
            print(line("  after the first recall", memory(pid, qdrant)))
            for i in range(calls):
                words = " ".join(rng.choice(WORDS) for _ in range(14))
                await client.call_tool("store", {"content": f"note {i}: {words} {time.time_ns()}"})
                # Every third query is a word each memory of a bench home holds: all tie.
                query = "note" if i % 3 == 2 else " ".join(rng.sample(WORDS, 5))
                await client.call_tool("recall", {"query": query})
            print(line(f"  after {calls} more stores and recalls", memory(pid, qdrant)))
            if top:
                print(f"  the {top} largest resident mappings:")
                print("\n".join(mappings(pid, copy, top)))
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="the data directory to copy")
    parser.add_argument("--calls", type=int, default=30, help="store+recall pairs (default 30)")
    parser.add_argument("--ferrex", default=harness.FERREX, help="the ferrex executable measured")
    parser.add_argument("--baseline", help="another ferrex executable, measured after it")
    parser.add_argument(
        "--rebuild", action="store_true",
        help="rebuild each copy's projections with the side's own ferrex first (ferrex replay)",
    )  # fmt: skip
    parser.add_argument(
        "--mappings", type=int, default=0, metavar="N",
        help="also print the N largest resident mappings at the end (by file; anonymous apart)",
    )  # fmt: skip
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    sides = [("ferrex", args.ferrex)] + ([("baseline", args.baseline)] if args.baseline else [])
    for label, executable in sides:
        print(f"{label} ({executable}) on a copy of {args.home}:")
        asyncio.run(measure(executable, args.home, args.calls, args.mappings, rebuild=args.rebuild))
        print(f"  {harness.load_line()}")


if __name__ == "__main__":
    main()
