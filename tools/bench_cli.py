"""Cold start of each ``ferrex`` command, on a small home, with and without a running server.

Each command is run as a fresh process (what a person at a shell gets) a few times; the table
gives the median wall time and whether the process loaded the embedding model. "With a server"
means an MCP server on stdio owns the data directory, so the tool commands forward their call
to it. Times are reported, never asserted.

    nice .venv/bin/python -m tools.bench_cli                      # this checkout's ferrex
    nice .venv/bin/python -m tools.bench_cli --ferrex /other/venv/bin/ferrex --runs 3

The model's user cache is a temporary directory unless ``FERREX_CACHE_DIR`` is set, so the
first command that needs the model pays for assembling it once (not counted: a warm-up runs
first). The bytecode of the packages the executable runs is written first, as an install
writes it: where ``PYTHONDONTWRITEBYTECODE`` is set (as here), every cold start of a source
checkout would otherwise compile the modules changed since their last bytecode again.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TypedDict

from tools import harness

SEED = [
    "The staging database moved to Postgres 16 on 2024-03-02.",
    "Alice prefers tabs over spaces in Go code.",
    "Deploys happen from the release branch, never from main.",
    "The on-call rotation changes every Monday at 09:00 UTC.",
    "INC-4411: the cache stampede was fixed by request coalescing.",
]

# Distinct texts, so no store of the benchmark is a duplicate of another.
TOPICS = [
    "The build cache lives in /var/cache/ci on every runner.",
    "Grafana dashboards are provisioned from the ops repository.",
    "Marta reviews every schema migration before it ships.",
    "The mobile app pins TLS certificates since version 4.2.",
    "Nightly backups are copied to a second region at 02:00.",
    "The search index is rebuilt from scratch every Sunday.",
    "Feature flags older than 90 days are removed in cleanup week.",
    "Payroll exports run on the last Friday of each month.",
    "The VPN gateway in Frankfurt was retired in October.",
    "Customer support escalations go to the #sev channel first.",
    "Design reviews need two approvals from the platform team.",
    "Log retention for audit trails is seven years.",
    "The load balancer drains connections for 30 seconds on deploy.",
    "Interns get read-only access to production dashboards.",
    "Kafka topics are partitioned by tenant identifier.",
    "The quarterly roadmap is drafted by product and engineering together.",
    "Office plants are watered by the facilities team on Wednesdays.",
    "Python services are linted with ruff in the pre-commit hook.",
    "The billing service retries failed charges three times.",
    "Laptops are replaced every four years unless they fail earlier.",
    "Incident postmortems are published within five business days.",
]

# (label, arguments); {n} is the run number, {tmp} a scratch directory.
COMMANDS: list[tuple[str, list[str]]] = [
    ("--help", ["--help"]),
    ("stats", ["stats"]),
    ("stats --detailed", ["stats", "--detailed"]),
    ("reflect", ["reflect"]),
    ("forget", ["forget", "{forget_id}"]),
    # needs the data directory to itself: "failed" with a server running, by design
    ("export jsonl", ["export", "jsonl", "{tmp}/dump-{n}.jsonl"]),
    ("journal verify", ["journal", "verify"]),
    ("journal show", ["journal", "show", "--limit", "5"]),
    ("config show", ["config", "show"]),
    ("doctor --quick", ["doctor", "--quick"]),
    ("store", ["store", "--content", "{topic}"]),
    ("recall", ["recall", "where does the build cache live?"]),
]


def run(ferrex: str, home: Path, args: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    started = time.perf_counter()
    done = subprocess.run(
        [ferrex, "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    return time.perf_counter() - started, done.stdout + done.stderr, done.returncode


def store_ids(ferrex: str, home: Path, env: dict[str, str], count: int) -> list[str]:
    ids = []
    for i in range(count):
        _, out, code = run(
            ferrex, home, ["store", "--content", f"Disposable bench memory {i}.", "--json"], env
        )
        if code != 0:
            raise SystemExit(f"seeding failed: {out}")
        ids.append(json.loads(out[: out.rindex("}") + 1])["id"])
    return ids


def start_server(ferrex: str, home: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    server = subprocess.Popen(
        [ferrex, "--home", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    owner = home / "run" / "owner.json"
    deadline = time.monotonic() + 120
    while not owner.exists():
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            raise SystemExit("the server did not take the data directory")
        time.sleep(0.1)
    time.sleep(0.5)
    return server


def compiled(ferrex: str) -> None:
    """Write the bytecode of the ``ferrex``, ``journal`` and ``projections`` packages that the
    executable ``ferrex`` imports (its virtual environment's interpreter beside it), as
    ``pip install`` does."""
    python = Path(ferrex).parent / "python"
    if not python.exists():
        print(f"no interpreter beside {ferrex}: its bytecode is left as it is", file=sys.stderr)
        return
    code = (
        "import compileall, pathlib, ferrex, journal, projections\n"
        "for m in (ferrex, journal, projections):\n"
        "    compileall.compile_dir(pathlib.Path(m.__file__).parent, quiet=1)\n"
    )
    subprocess.run([str(python), "-c", code], check=True, stdin=subprocess.DEVNULL)


class Timing(TypedDict):
    """One command's result: its median over the counted runs, or why it failed."""

    median_s: float | None
    failed: str | None


def bench(
    ferrex: str, runs: int, home: Path, tmp: Path, env: dict[str, str], offset: int = 0
) -> dict[str, Timing]:
    forget_ids = store_ids(ferrex, home, env, runs + 1)
    results: dict[str, Timing] = {}
    for label, template in COMMANDS:
        times: list[float] = []
        failed = ""
        for n in range(runs + 1):  # the first run warms the page cache and is not counted
            args = [
                a.format(
                    n=n,
                    tmp=tmp,
                    topic=TOPICS[(n + offset) % len(TOPICS)],
                    forget_id=forget_ids[n] if n < len(forget_ids) else "",
                )
                for a in template
            ]
            seconds, out, code = run(ferrex, home, args, env)
            if code != 0:
                failed = out.strip().splitlines()[-1] if out.strip() else f"exit {code}"
                break
            if n:
                times.append(seconds)
        results[label] = {"median_s": statistics.median(times) if times else None,
                          "failed": failed or None}  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ferrex", default=str(Path(sys.executable).parent / "ferrex"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    harness.add_arguments(parser)
    options = parser.parse_args()
    if 2 * (options.runs + 1) > len(TOPICS):  # every store of the two passes a new text
        parser.error(f"--runs is at most {len(TOPICS) // 2 - 1}")
    harness.begin(options)
    compiled(options.ferrex)

    with tempfile.TemporaryDirectory(prefix="ferrex-bench-cli-") as scratch:
        tmp = Path(scratch)
        env = {
            **os.environ,
            "FERREX_CACHE_DIR": os.environ.get("FERREX_CACHE_DIR", str(tmp / "cache")),
        }
        home = tmp / "home"
        for text in SEED:
            _, out, code = run(options.ferrex, home, ["store", "--content", text], env)
            if code != 0:
                raise SystemExit(f"seeding failed: {out}")
        alone = bench(options.ferrex, options.runs, home, tmp, env)
        server = start_server(options.ferrex, home, env)
        try:
            served = bench(options.ferrex, options.runs, home, tmp, env, offset=options.runs + 1)
        finally:
            server.stdin.close()  # type: ignore[union-attr]
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()

    if options.json:
        print(json.dumps({"ferrex": options.ferrex, "runs": options.runs,
                          "alone": alone, "with_server": served}, indent=2))  # fmt: skip
        return
    print(f"ferrex: {options.ferrex}; median of {options.runs} cold starts, seconds")
    print(f"{'command':<18} {'no server':>10} {'server':>10}")
    for label, _ in COMMANDS:
        cells = []
        for table in (alone, served):
            entry = table[label]
            cells.append("failed" if entry["failed"] else f"{entry['median_s']:.2f}")
        print(f"{label:<18} {cells[0]:>10} {cells[1]:>10}")
    for title, table in (("no server", alone), ("server", served)):
        for label, entry in table.items():
            if entry["failed"]:
                print(f"  {title}: {label} failed: {entry['failed']}")


if __name__ == "__main__":
    main()
