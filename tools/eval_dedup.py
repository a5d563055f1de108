"""How the duplicate rule decides, on our pair set and on imported conversations.

    python -m tools.eval_dedup pairs   [--verbose] [--json FILE]
    python -m tools.eval_dedup imports [--questions N] [--again] [--json FILE]

``pairs`` reads ``golden_set/dedup_pairs.jsonl`` (lines ``{"a", "b", "duplicate", "kind"}``,
described in ``golden_set/README.md``) and runs every pair through the real store path: a
fresh data directory with the real bundled embedding model; each pair gets a namespace of
its own; every ``a`` is stored (one ``store_many``), then every ``b``. A pair counts as
*refused* when the store of ``b`` is refused as ``duplicate`` (the real cosine of the two
texts and the real rule decided it). Duplicate precision is refused-and-duplicate over
refused (1.0: no different statement refused), recall refused-and-duplicate over duplicate.
The cosine of every pair is printed by kind, with the stores the near tier noted (the
``similar`` answer), which is how ``store.near_threshold`` was chosen.

``imports`` writes conversations as plain import lines (``{"content", "namespace"}``: no
source, no time, the protocol in which repeated turns collide) and imports each through
``ferrex import --json`` in a fresh data directory, counting the outcome of every line:

- LoCoMo (``../shared/data/locomo/locomo10.json``): every turn, ``"Speaker: text"``, one
  namespace per conversation (what ``tools/eval_retrieval.py``'s plain protocol stores);
- LongMemEval (``../shared/data/longmemeval``): the user turns of the haystacks of the first
  ``--questions`` questions (default 12) of ``questions.jsonl``, one namespace per question
  (the set's protocol: one store per question), in the haystack's order.

``--again`` imports each file a second time into the same directory and counts what that
stored (idempotency: it should store nothing). The tool only runs the ``ferrex`` command of
the Python it runs under, so the same file measures an older checkout (run it with that
checkout first on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from tools.harness import ROOT

PAIRS: Final = ROOT / "golden_set" / "dedup_pairs.jsonl"
DATA: Final = ROOT.parent / "shared" / "data"


# -- pairs -----------------------------------------------------------------------------------


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        pair = json.loads(line)
        if not isinstance(pair.get("duplicate"), bool) or not pair.get("a") or not pair.get("b"):
            raise SystemExit(f"{path}:{number}: a pair needs a, b and a boolean duplicate")
        pairs.append(pair)
    return pairs


def run_pairs(home: Path, pairs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Store every ``a``, then every ``b``, each pair in its own namespace; the outcome of
    each ``b`` with the cosine the model gives the two texts."""
    from ferrex.app import App
    from ferrex.config import load
    from ferrex.errors import FerrexError
    from ferrex.rules.memory_input import StoreRequest

    app = App(home=home, config=load(home, env={}))
    try:
        writer = app.writer()
        firsts = [StoreRequest(content=p["a"], namespace=f"pair-{i}") for i, p in enumerate(pairs)]
        for i, outcome in enumerate(writer.store_many(firsts)):
            if isinstance(outcome, FerrexError):
                raise SystemExit(f"pair {i}: storing a was refused: {outcome}")
        seconds = [StoreRequest(content=p["b"], namespace=f"pair-{i}") for i, p in enumerate(pairs)]
        outcomes = writer.store_many(seconds)
        model = writer.embedder
        vectors_a = model.embed_many([p["a"] for p in pairs])
        vectors_b = model.embed_many([p["b"] for p in pairs])
    finally:
        app.close()
    rows = []
    for pair, outcome, va, vb in zip(pairs, outcomes, vectors_a, vectors_b, strict=True):
        cosine = float(sum(x * y for x, y in zip(va, vb, strict=True)))
        row: dict[str, Any] = {**pair, "cosine": round(cosine, 4)}
        if isinstance(outcome, FerrexError):
            row["outcome"] = outcome.code
        else:
            answer = outcome.as_dict()
            row["outcome"] = "stored"
            if "similar" in answer:
                row["similar"] = answer["similar"]
        rows.append(row)
    return rows


def score(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    refused = [r for r in rows if r["outcome"] == "duplicate"]
    duplicates = [r for r in rows if r["duplicate"]]
    hits = [r for r in refused if r["duplicate"]]
    near = [r for r in rows if r["outcome"] == "stored" and "similar" in r]
    return {
        "pairs": len(rows),
        "duplicates": len(duplicates),
        "different": len(rows) - len(duplicates),
        "refused": len(refused),
        "precision": round(len(hits) / len(refused), 4) if refused else 1.0,
        "recall": round(len(hits) / len(duplicates), 4) if duplicates else 1.0,
        "wrongly_refused": [(r["a"], r["b"]) for r in refused if not r["duplicate"]],
        "near_noted": {
            "duplicate": sum(1 for r in near if r["duplicate"]),
            "different": sum(1 for r in near if not r["duplicate"]),
        },
    }


def by_kind(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds: dict[str, dict[str, Any]] = {}
    for row in rows:
        kind = kinds.setdefault(
            row["kind"], {"pairs": 0, "refused": 0, "duplicate": row["duplicate"], "cosines": []}
        )
        kind["pairs"] += 1
        kind["refused"] += row["outcome"] == "duplicate"
        kind["cosines"].append(row["cosine"])
    for kind in kinds.values():
        cosines = sorted(kind.pop("cosines"))
        kind["cosine_min"] = cosines[0]
        kind["cosine_median"] = cosines[len(cosines) // 2]
        kind["cosine_max"] = cosines[-1]
    return kinds


def thresholds(rows: Sequence[dict[str, Any]]) -> list[tuple[float, int, int]]:
    """For candidate near thresholds: the stored pairs (not refused) at or above it, split
    into true duplicates and different statements."""
    stored = [r for r in rows if r["outcome"] != "duplicate"]
    table = []
    for t in (0.75, 0.80, 0.85, 0.88, 0.90, 0.92):
        table.append(
            (
                t,
                sum(1 for r in stored if r["duplicate"] and r["cosine"] >= t),
                sum(1 for r in stored if not r["duplicate"] and r["cosine"] >= t),
            )
        )
    return table


# -- imports ---------------------------------------------------------------------------------


def locomo_lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        sessions = sorted(
            (k for k in conversation if re.fullmatch(r"session_\d+", k)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            for turn in conversation[key]:
                lines.append(
                    {
                        "content": f"{turn['speaker']}: {turn['text']}",
                        "namespace": f"locomo-{sample['sample_id']}",
                    }
                )
    return lines


def longmemeval_lines(folder: Path, questions: int) -> list[dict[str, Any]]:
    chosen = [
        json.loads(line)
        for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ][:questions]
    wanted = {s for q in chosen for s in q["haystack_session_ids"]}
    sessions: dict[str, Any] = {}
    with gzip.open(folder / "sessions.jsonl.gz", "rt", encoding="utf-8") as file:
        for line in file:
            session = json.loads(line)
            if session["session_id"] in wanted:
                sessions[session["session_id"]] = session
    lines = []
    for q in chosen:
        for session_id in q["haystack_session_ids"]:
            for turn in sessions.get(session_id, {"user_turns": []})["user_turns"]:
                lines.append(
                    {
                        "content": turn["content"],
                        "namespace": f"lme-{q['question_id']}",
                        "split_long": True,
                    }
                )
    return lines


def ferrex_import(home: Path, file: Path) -> dict[str, Any]:
    command = [sys.executable, "-c", "from ferrex.cli import main; main()"]
    done = subprocess.run(
        [*command, "--home", str(home), "import", "--json", str(file)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    if done.returncode not in (0, 2, 7):  # 2, 7: some lines invalid or refused
        raise SystemExit(f"ferrex import failed ({done.returncode}): {done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def summary(document: dict[str, Any], lines: Sequence[dict[str, Any]]) -> dict[str, Any]:
    refused = [o for o in document["lines"] if o["status"] == "refused"]
    codes = Counter(o["code"] for o in refused)
    examples = [lines[o["line"] - 1]["content"][:60] for o in refused if o["code"] == "duplicate"]
    similar = [o["similar"] for o in document["lines"] if "similar" in o]
    return {
        "lines": len(lines),
        "counts": document["counts"],
        "kept_beside_a_near_copy": sum(1 for s in similar if "kept_because" in s),
        "noted_near": sum(1 for s in similar if "kept_because" not in s),
        "refused_by_code": dict(codes),
        "duplicate_examples": Counter(examples).most_common(8),
    }


def run_imports(
    workdir: Path, data: Path, cache: Path, questions: int, again: bool, progress: Any
) -> dict[str, Any]:
    sets = {
        "locomo": locomo_lines(data / "locomo" / "locomo10.json"),
        f"longmemeval ({questions} questions)": longmemeval_lines(data / "longmemeval", questions),
    }
    report: dict[str, Any] = {}
    for name, lines in sets.items():
        home = workdir / re.sub(r"\W+", "-", name)
        home.mkdir(parents=True)
        for sub in ("models", "cache"):
            (cache / sub).mkdir(parents=True, exist_ok=True)
            (home / sub).symlink_to(cache / sub, target_is_directory=True)
        file = workdir / f"{home.name}.jsonl"
        file.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        progress(f"importing {name}: {len(lines)} lines")
        report[name] = summary(ferrex_import(home, file), lines)
        if again:
            progress(f"importing {name} again")
            second = ferrex_import(home, file)
            report[name]["again"] = second["counts"]
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["pairs", "imports"], nargs="?", default="pairs")
    parser.add_argument("--verbose", action="store_true", help="print every pair")
    parser.add_argument("--questions", type=int, default=12, help="LongMemEval questions")
    parser.add_argument("--again", action="store_true", help="import every file twice")
    parser.add_argument(
        "--cache-home",
        type=Path,
        default=Path.home() / ".cache" / "ferrex-eval",
        help="the assembled model and the embedding cache, kept across runs",
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--json", type=Path, help="write the report here")
    args = parser.parse_args(argv)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="ferrex-dedup-") as scratch:
        if args.what == "imports":
            report = run_imports(
                Path(scratch), args.data, args.cache_home, args.questions, args.again, progress
            )
            print(json.dumps(report, indent=2))
        else:
            home = Path(scratch) / "home"
            home.mkdir()
            for sub in ("models", "cache"):
                (args.cache_home / sub).mkdir(parents=True, exist_ok=True)
                (home / sub).symlink_to(args.cache_home / sub, target_is_directory=True)
            rows = run_pairs(home, load_pairs())
            report = {"score": score(rows), "kinds": by_kind(rows)}
            report["near_thresholds"] = thresholds(rows)
            if args.verbose:
                for row in rows:
                    mark = "REFUSED" if row["outcome"] == "duplicate" else row["outcome"]
                    print(f"{row['cosine']:.4f} {row['kind']:<14} {mark:<9} "
                          f"{row['a']!r} / {row['b']!r}")  # fmt: skip
            print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
