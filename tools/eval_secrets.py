"""How well the store's secret detection works: detection on planted secrets, false positives
on real conversations.

    python -m tools.eval_secrets [--data DIR] [--json] [--verbose]

Every text goes through the very check a store runs (``validate`` with ``secrets="allow"``,
then :func:`ferrex.rules.memory_input.secrets_in`, which scans every text field; plain
conversation turns through :func:`ferrex.rules.secrets.find_secrets`, what that check runs
on one field):

- **planted** (``golden_set/secrets.jsonl``): made-up secrets of every kind, as text or as
  whole store requests (a token in a step, a password in context), each line naming the kinds
  it must be found as; and lines that must stay clean (hashes, UUIDs, ids, base64 of words,
  versions, URLs without a password, prose about passwords). Detection = secret lines whose
  every expected kind is found; a false positive = a clean line with any finding.
- **golden set** (``golden_set/memories.jsonl``): every text field of every memory;
- **LoCoMo** (``DATA/locomo/locomo10.json``): every turn's text and image caption;
- **LongMemEval** (``DATA/longmemeval/sessions.jsonl.gz``): every user turn of the shared part;
- **ferrex's source**: every ``.py`` file of the three packages (``ferrex``, ``journal``,
  ``projections``), line by line and in chunks of :data:`CHUNK_LINES` lines, as an agent
  stores code it works on;
- **code negatives** (``golden_set/secret_code_negatives.jsonl``): what code and notes about
  code carry that is no secret (``pin=13``, hashes, git SHAs, UUIDs, placeholders, prose
  about passwords, Cyrillic, Greek and fullwidth text, percent-encoded URLs, lines that
  end and start with identifiers).

**Shapes** (``golden_set/secret_shapes.jsonl``): one or more made-up secrets of each shape
an issue reported as passing (provider tokens, keyword-value pairs, an AWS secret without
``=``, a token as a namespace or a context key, tokens disguised by zero-width, fullwidth,
homoglyph or percent-encoded characters or an inner newline, passwords in prose, a
credential named by its keyword in prose, a ``creds: user / password`` pair, a fact whose
predicate names a credential), each line naming its shape and the kinds it must be found
as; the report counts them by shape.

Findings on the real sets are false positives unless listed in :data:`REVIEWED` (a real
credential someone pasted into a conversation, checked by hand). Nothing prints a secret: a
finding is shown as its set, place, field, kind and character position.

The entropy section measures the threshold of the ``password=``/``token=`` rule: the Shannon
entropy of every value written after a secret's name, in the planted secrets, the planted
clean lines and the real sets, and how many of each pass
:func:`ferrex.rules.secret_values.looks_random`; then the same counts with the floor's factor
swept from 0.5 to 1.0, beside how many distinct words of 8 or more characters of the real
sets would pass (why the test is applied only after a secret's name).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ferrex.rules.memory_input import Limits, StoreRequest, secrets_in, validate
from ferrex.rules.secret_values import entropy_floor, looks_random, shannon_entropy
from ferrex.rules.secrets import (
    assigned_values,
    find_secrets,
)
from tools.harness import ROOT

PLANTED: Final = ROOT / "golden_set" / "secrets.jsonl"
SHAPES: Final = ROOT / "golden_set" / "secret_shapes.jsonl"
CODE_NEGATIVES: Final = ROOT / "golden_set" / "secret_code_negatives.jsonl"
GOLDEN: Final = ROOT / "golden_set" / "memories.jsonl"
SOURCE_PACKAGES: Final = ("ferrex", "journal", "projections")
CHUNK_LINES: Final = 40
"""Lines of source per chunk, about a function or a screenful: what an agent stores at once."""
# A checkout's data, or the shared one beside the worktrees (/work/wt/NAME → /work/shared).
_DATA_DIRS: Final = (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data")
DATA: Final = next((d for d in _DATA_DIRS if d.is_dir()), _DATA_DIRS[0])
_GOLDEN_OWN: Final = {"key", "supersedes_key", "expect_status", "expect_superseded", "multi_valued"}
_LISTS: Final = {"steps", "conditions", "entities"}
# Real texts can be longer than a store allows; only the secret check is measured here.
_UNLIMITED: Final = Limits(
    content_chars=10**7, field_chars=10**7, step_chars=10**7, source_chars=10**7
)

REVIEWED: Final[dict[str, str]] = {
    "longmemeval/sharegpt_EA02eKe_12/turn 1": "a Docker Hub access token (dckr_pat_…) after "
    "`password:` in a pasted registry configuration: a real credential, rightly caught",
}
"""Findings on the real sets checked by hand and found to be real secrets, by place."""


@dataclass(frozen=True)
class Found:
    where: str
    field: str
    kind: str
    at: int

    def show(self) -> str:
        return f"{self.where} {self.field}: {self.kind} at character {self.at}"


@dataclass
class Corpus:
    name: str
    texts: int = 0
    findings: list[Found] = field(default_factory=list)

    @property
    def false_positives(self) -> list[Found]:
        return [f for f in self.findings if f.where not in REVIEWED]

    def as_dict(self) -> dict[str, Any]:
        return {
            "texts": self.texts,
            "false_positives": len(self.false_positives),
            "reviewed_true_positives": [f.show() for f in self.findings if f.where in REVIEWED],
            "findings": [f.show() for f in self.false_positives],
        }


@dataclass
class Planted:
    secrets: int = 0
    detected: int = 0
    missed: list[str] = field(default_factory=list)
    wrong_kind: list[str] = field(default_factory=list)
    clean: int = 0
    false_positives: list[str] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    """kind → [lines expecting it, lines where it was found]."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "secret_lines": self.secrets,
            "detected": self.detected,
            "detection_rate": round(self.detected / self.secrets, 4) if self.secrets else None,
            "missed": self.missed,
            "extra_kinds": self.wrong_kind,
            "clean_lines": self.clean,
            "false_positives": self.false_positives,
            "by_kind": {k: {"lines": v[0], "found": v[1]} for k, v in sorted(self.by_kind.items())},
        }


def request_of(raw: dict[str, Any]) -> StoreRequest:
    fields: dict[str, Any] = {
        k: tuple(v) if k in _LISTS else v for k, v in raw.items() if k not in _GOLDEN_OWN
    }
    return StoreRequest(**fields)


def request_secrets(request: StoreRequest) -> list[tuple[str, str, int]]:
    """(field, kind, position) of every likely secret in a store request's text fields."""
    valid = validate(request, _UNLIMITED, secrets="allow")
    return [(s.field, s.kind, s.at) for s in secrets_in(valid)]


def text_secrets(text: str) -> list[tuple[str, str, int]]:
    return [("content", f.kind, f.start) for f in find_secrets(text)]


def eval_planted(path: Path) -> tuple[Planted, dict[str, list[str]]]:
    """The planted set's report, and the values written after a secret's name in its secret
    lines (``secret``) and in its clean lines (``clean``)."""
    report = Planted()
    values: dict[str, list[str]] = {"secret": [], "clean": []}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        raw = json.loads(line)
        expect: list[str] = raw["expect"]
        label = f"line {number} ({raw.get('note') or 'no note'})"
        if "text" in raw:
            found = text_secrets(raw["text"])
            named = [v for _, _, v in assigned_values(raw["text"])]
            values["secret" if expect else "clean"] += named
        else:
            found = request_secrets(request_of(raw["request"]))
        kinds = {kind for _, kind, _ in found}
        if not expect:
            report.clean += 1
            if found:
                report.false_positives.append(f"{label}: {sorted(kinds)}")
            continue
        report.secrets += 1
        for kind in expect:
            counts = report.by_kind.setdefault(kind, [0, 0])
            counts[0] += 1
            counts[1] += kind in kinds
        if set(expect) <= kinds:
            report.detected += 1
        else:
            report.missed.append(f"{label}: expected {sorted(expect)}, found {sorted(kinds)}")
        if kinds - set(expect):
            report.wrong_kind.append(f"{label}: also {sorted(kinds - set(expect))}")
    return report, values


@dataclass
class Shapes:
    lines: int = 0
    found: int = 0
    by_shape: dict[str, list[int]] = field(default_factory=dict)
    """shape → [lines, lines found as every expected kind]."""
    missed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "found": self.found,
            "by_shape": {k: {"lines": v[0], "found": v[1]} for k, v in self.by_shape.items()},
            "missed": self.missed,
        }


def eval_shapes(path: Path) -> Shapes:
    """Which lines of the shapes set are found as every kind they name."""
    report = Shapes()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        raw = json.loads(line)
        if "text" in raw:
            found = text_secrets(raw["text"])
        else:
            found = request_secrets(request_of(raw["request"]))
        kinds = {kind for _, kind, _ in found}
        counts = report.by_shape.setdefault(raw["shape"], [0, 0])
        report.lines += 1
        counts[0] += 1
        if set(raw["expect"]) <= kinds:
            report.found += 1
            counts[1] += 1
        else:
            report.missed.append(
                f"line {number} ({raw['shape']}): expected {sorted(raw['expect'])}, "
                f"found {sorted(kinds)}"
            )
    return report


def code_negative_texts(path: Path) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        raw = json.loads(line)
        yield f"code negatives/line {number} ({raw['note']})", raw["text"]


def source_texts(root: Path = ROOT) -> Iterator[tuple[str, str]]:
    """Every line, then every chunk of :data:`CHUNK_LINES` lines, of the packages' sources."""
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            where = str(path.relative_to(root))
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield f"{where}:{number}", line
            for at in range(0, len(lines), CHUNK_LINES):
                chunk = "\n".join(lines[at : at + CHUNK_LINES])
                yield f"{where}:{at + 1}-{at + CHUNK_LINES}", chunk


def golden_texts(path: Path) -> Iterator[tuple[str, StoreRequest]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        raw = json.loads(line)
        yield f"golden/{raw.get('key', number)}", request_of(raw)


def locomo_texts(path: Path) -> Iterator[tuple[str, str]]:
    for sample in json.loads(path.read_text(encoding="utf-8")):
        for session in sample["conversation"].values():
            if not isinstance(session, list):
                continue
            for turn in session:
                where = f"locomo/{sample['sample_id']}/{turn['dia_id']}"
                yield where, f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    yield f"{where} caption", str(turn["blip_caption"])


def longmemeval_texts(path: Path) -> Iterator[tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            session = json.loads(line)
            for turn in session["user_turns"]:
                yield f"longmemeval/{session['session_id']}/turn {turn['turn']}", turn["content"]


def scan(name: str, texts: Iterator[tuple[str, str]], values: list[str], words: set[str]) -> Corpus:
    corpus = Corpus(name)
    for where, text in texts:
        corpus.texts += 1
        values += [v for _, _, v in assigned_values(text)]
        words.update(w for w in (w.strip(_PUNCTUATION) for w in text.split()) if len(w) >= 8)
        corpus.findings += [Found(where, f, k, at) for f, k, at in text_secrets(text)]
    return corpus


_PUNCTUATION: Final = ".,;:!?()[]{}\"'`"
SWEEP: Final = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Factors of ``log2(length)`` tried as the entropy floor (ferrex uses 0.8, capped at 3)."""


def sweep(groups: dict[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    """For each floor factor, how many values of each group pass the randomness test."""
    out: dict[str, dict[str, int]] = {}
    for factor in SWEEP:

        def floor(n: int, factor: float = factor) -> float:
            return min(3.0, factor * math.log2(max(n, 2)))

        out[str(factor)] = {
            name: sum(looks_random(v, floor) for v in values) for name, values in groups.items()
        }
    return out


def entropy_summary(values: Sequence[str]) -> dict[str, Any]:
    entropies = [shannon_entropy(v) for v in values]
    passing = [v for v in values if looks_random(v)]
    return {
        "values": len(values),
        "pass": len(passing),
        "entropy_min": round(min(entropies), 2) if entropies else None,
        "entropy_median": round(statistics.median(entropies), 2) if entropies else None,
        "entropy_max": round(max(entropies), 2) if entropies else None,
        "pass_entropy_min": round(min(map(shannon_entropy, passing)), 2) if passing else None,
    }


def evaluate(data: Path, planted_path: Path = PLANTED) -> dict[str, Any]:
    planted, planted_values = eval_planted(planted_path)
    shapes = eval_shapes(SHAPES)
    real_values: list[str] = []
    words: set[str] = set()
    corpora: list[Corpus] = []
    golden = Corpus("golden set (memories.jsonl)")
    for where, request in golden_texts(GOLDEN):
        golden.texts += 1
        golden.findings += [Found(where, f, k, at) for f, k, at in request_secrets(request)]
        for text in (request.content, request.object, *request.steps):
            if text:
                real_values += [v for _, _, v in assigned_values(text)]
    corpora.append(golden)
    locomo = data / "locomo" / "locomo10.json"
    if locomo.is_file():
        corpora.append(
            scan("LoCoMo (every turn and caption)", locomo_texts(locomo), real_values, words)
        )
    lme = data / "longmemeval" / "sessions.jsonl.gz"
    if lme.is_file():
        corpora.append(
            scan(
                "LongMemEval (every user turn, shared part)",
                longmemeval_texts(lme),
                real_values,
                words,
            )
        )
    corpora.append(scan("ferrex's source (lines and chunks)", source_texts(), [], set()))
    corpora.append(scan("code negatives", code_negative_texts(CODE_NEGATIVES), [], set()))
    return {
        "planted": planted.as_dict(),
        "shapes": shapes.as_dict(),
        "corpora": {c.name: c.as_dict() for c in corpora},
        "false_positives_total": sum(len(c.false_positives) for c in corpora)
        + len(planted.false_positives),
        "entropy": {
            "floor": {str(n): round(entropy_floor(n), 2) for n in (8, 10, 12, 16, 32)},
            "planted_secret_values": entropy_summary(planted_values["secret"]),
            "planted_clean_values": entropy_summary(planted_values["clean"]),
            "real_values": entropy_summary(real_values),
            "words_of_8_or_more": len(words),
            "sweep": sweep(
                {
                    "planted_secret_values": planted_values["secret"],
                    "planted_clean_values": planted_values["clean"],
                    "real_values": real_values,
                    "real_words": sorted(words),
                }
            ),
        },
        "missing_sets": [str(p) for p in (locomo, lme) if not p.is_file()],
    }


def render(report: dict[str, Any], verbose: bool) -> str:
    p = report["planted"]
    out = [
        f"planted secrets: {p['detected']}/{p['secret_lines']} lines detected "
        f"({p['detection_rate']:.1%}); clean lines: {p['clean_lines']}, "
        f"false positives: {len(p['false_positives'])}",
        "  by kind: "
        + ", ".join(f"{k} {v['found']}/{v['lines']}" for k, v in p["by_kind"].items()),
    ]
    out += [f"  missed {m}" for m in p["missed"]]
    out += [f"  false positive {m}" for m in p["false_positives"]]
    if verbose:
        out += [f"  {m}" for m in p["extra_kinds"]]
    s = report["shapes"]
    out.append(f"shapes: {s['found']}/{s['lines']} lines found")
    by_shape = s["by_shape"].items()
    out.append("  by shape: " + ", ".join(f"{k} {v['found']}/{v['lines']}" for k, v in by_shape))
    out += [f"  missed {m}" for m in s["missed"]]
    for name, c in report["corpora"].items():
        out.append(f"{name}: {c['texts']} texts, false positives: {c['false_positives']}")
        out += [f"  false positive {f}" for f in c["findings"]]
        out += [f"  reviewed, a real secret: {f}" for f in c["reviewed_true_positives"]]
    for path in report["missing_sets"]:
        out.append(f"not found, not measured: {path}")
    e = report["entropy"]
    out.append(
        "entropy floor (bits/char) by length: "
        + ", ".join(f"{n}: {v}" for n, v in e["floor"].items())
    )
    for label, key in (
        ("planted secrets", "planted_secret_values"),
        ("planted clean lines", "planted_clean_values"),
        ("real sets", "real_values"),
    ):
        s = e[key]
        out.append(
            f"  values after a secret's name, {label}: {s['values']}, pass {s['pass']}; "
            f"entropy min {s['entropy_min']}, median {s['entropy_median']}, max {s['entropy_max']}"
        )
    out.append(
        "  floor factor sweep (values passing the randomness test: planted secret / planted "
        f"clean / real after a name / distinct real words of 8+ characters, of "
        f"{e['words_of_8_or_more']}):"
    )
    for factor, counts in e["sweep"].items():
        mark = "  <- ferrex" if factor == "0.8" else ""
        out.append(
            f"    {factor}: {counts['planted_secret_values']} / {counts['planted_clean_values']} / "
            f"{counts['real_values']} / {counts['real_words']}{mark}"
        )
    out.append(f"false positives in all: {report['false_positives_total']}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data directory")
    parser.add_argument("--planted", type=Path, default=PLANTED)
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    report = evaluate(args.data, args.planted)
    print(json.dumps(report, indent=2) if args.json else render(report, args.verbose))
    return 0 if report["false_positives_total"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
