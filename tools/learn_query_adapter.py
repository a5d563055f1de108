"""Fit the bundled model's query adapter (:mod:`ferrex.models.query_adapter`) and write it.

    python -m tools.learn_query_adapter [--data DIR] [--out FILE] [--check]

Reads LoCoMo and LongMemEval from ``../shared/data`` (never copied), embeds their questions
and turns with the bundled model (through the embedding cache of ``--cache-home``, default
``~/.cache/ferrex-eval``, which ``tools/eval_retrieval.py`` shares), and fits ``W`` on the
*train* split of each (:mod:`tools.splits`): for every question with evidence, its vector
``q`` and a target ``t`` = the mean vector of its evidence turns less
:data:`NEGATIVE_WEIGHT` times the mean of the :data:`NEGATIVES` turns of its haystack closest to
``q`` that are not evidence, made unit length; ``W`` minimises ``|Q W - T|² + λ |W - I|²``
(closed form, λ = :data:`RIDGE`). LoCoMo's adversarial questions (they name the wrong
speaker) are left out. The two constants were chosen on the validation splits (dense
recall@10 by question, alone: LoCoMo 0.474 → 0.574, LongMemEval 0.805 → 0.835).

How far a recall moves its question is ``recall.query_adapter`` (0 to 1, 0 by default: on a
team's notes, ``tools/eval_agent_notes.py``, it did not help). The script prints the dense
figures of every split before and after, at full strength, so a refit shows what it changed.
``--check`` fits and prints without writing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from ferrex.models import Embedder, choose_embedding_model
from ferrex.models.query_adapter import ADAPTER_FILE, QueryAdapter, write_adapter
from tools.eval_retrieval import normalize_evidence
from tools.harness import ROOT
from tools.splits import Split, locomo_split, longmemeval_split

DATA: Final = ROOT.parent / "shared" / "data"
RIDGE: Final = 20.0
NEGATIVE_WEIGHT: Final = 0.5
NEGATIVES: Final = 5
ADVERSARIAL: Final = 5


@dataclass(frozen=True)
class Question:
    """One question: its row in the question matrix, the rows of its haystack's turns in
    the turn matrix, the rows of its evidence among them, and its split."""

    set: str
    row: int
    haystack: NDArray[np.int64]
    evidence: frozenset[int]
    split: Split


def locomo(path: Path) -> tuple[list[str], list[str], list[tuple[str, list[int], set[int], Split]]]:
    """LoCoMo's turns (``Speaker: text``), its questions, and per question (text, haystack
    rows, evidence rows, split); adversarial questions and those without evidence left out."""
    turns: list[str] = []
    asked: list[tuple[str, list[int], set[int], Split]] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation, rows = sample["conversation"], {}
        for key, session in conversation.items():
            if re.fullmatch(r"session_\d+", key):
                for turn in session:
                    rows.update(dict.fromkeys(normalize_evidence([turn["dia_id"]]), len(turns)))
                    turns.append(f"{turn['speaker']}: {turn['text']}")
        split = locomo_split(str(sample["sample_id"]))
        for qa in sample["qa"]:
            evidence = {
                rows[d]
                for e in qa.get("evidence", [])
                for d in normalize_evidence([e])
                if d in rows
            }
            if qa.get("category") != ADVERSARIAL and evidence:
                asked.append((qa["question"], sorted(rows.values()), evidence, split))
    return turns, [q for q, *_ in asked], asked


def longmemeval(
    data: Path,
) -> tuple[list[str], list[str], list[tuple[str, list[int], set[int], Split]]]:
    """LongMemEval's user turns, its questions, and per question (text, haystack rows,
    evidence rows: the ``has_answer`` turns of its evidence sessions, split)."""
    turns: list[str] = []
    by_session: dict[str, list[tuple[int, bool]]] = {}
    with gzip.open(data / "sessions.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            session = json.loads(line)
            for turn in session["user_turns"]:
                by_session.setdefault(session["session_id"], []).append(
                    (len(turns), bool(turn.get("has_answer")))
                )
                turns.append(turn["content"])
    asked: list[tuple[str, list[int], set[int], Split]] = []
    for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        hay = [r for s in q["haystack_session_ids"] for r, _ in by_session.get(s, [])]
        evidence = {r for s in q["answer_session_ids"] for r, has in by_session.get(s, []) if has}
        if evidence:
            asked.append((q["question"], hay, evidence, longmemeval_split(q["question_id"])))
    return turns, [q for q, *_ in asked], asked


def fit(questions: NDArray[np.float32], targets: NDArray[np.float32]) -> NDArray[np.float32]:
    """``argmin |Q W - T|² + λ |W - I|²``: ``(QᵀQ + λI)⁻¹ (QᵀT + λI)``."""
    eye = np.eye(questions.shape[1], dtype=np.float64)
    q, t = questions.astype(np.float64), targets.astype(np.float64)
    return np.linalg.solve(q.T @ q + RIDGE * eye, q.T @ t + RIDGE * eye).astype(np.float32)


def target(
    q: NDArray[np.float32], turns: NDArray[np.float32], item: Question
) -> NDArray[np.float32]:
    """What a question's vector is fitted toward: its evidence, away from its look-alikes."""
    hay = item.haystack
    order = hay[np.argsort(-(turns[hay] @ q))]
    close = [i for i in order[: NEGATIVES * 4] if i not in item.evidence][:NEGATIVES]
    aim = turns[sorted(item.evidence)].mean(0)
    if close:
        aim = aim - NEGATIVE_WEIGHT * turns[close].mean(0)
    unit: NDArray[np.float32] = (aim / np.linalg.norm(aim)).astype(np.float32)
    return unit


Vectors = dict[str, NDArray[np.float32]]


def dense_recall(
    items: Sequence[Question], qs: Vectors, ts: Vectors, adapter: QueryAdapter | None, k: int = 10
) -> float:
    """Mean recall@k of the evidence turns by dense cosine alone, in each haystack."""
    found = []
    for item in items:
        q = qs[item.set][item.row]
        q = q if adapter is None else adapter(q)
        hay = item.haystack
        top = set(hay[np.argsort(-(ts[item.set][hay] @ q))][:k].tolist())
        found.append(len(top & item.evidence) / len(item.evidence))
    return float(np.mean(found)) if found else float("nan")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-home", type=Path,
                        default=Path("~/.cache/ferrex-eval").expanduser())  # fmt: skip
    parser.add_argument("--out", type=Path, default=ADAPTER_FILE)
    parser.add_argument("--check", action="store_true", help="fit and report; write nothing")
    args = parser.parse_args(argv)
    embedder = Embedder(args.cache_home, choose_embedding_model("small", {}))
    qs: Vectors = {}
    ts: Vectors = {}
    items: list[Question] = []
    sources = {
        "locomo": locomo(args.data / "locomo" / "locomo10.json"),
        "longmemeval": longmemeval(args.data / "longmemeval"),
    }
    for name, (turns, texts, asked) in sources.items():
        print(f"{name}: embedding {len(turns)} turns and {len(texts)} questions", flush=True)
        ts[name], qs[name] = embedder.embed_many(turns), embedder.embed_many(texts)
        for row, (_, hay, evidence, split) in enumerate(asked):
            items.append(Question(name, row, np.array(hay), frozenset(evidence), split))
    train = [i for i in items if i.split == "train"]
    targets = np.array([target(qs[i.set][i.row], ts[i.set], i) for i in train])
    matrix = fit(np.array([qs[i.set][i.row] for i in train]), targets)
    adapter = QueryAdapter(matrix, embedder.identity.key)
    print(f"fitted on {len(train)} train questions (ridge {RIDGE}, negatives {NEGATIVE_WEIGHT})")
    print("dense recall@10 alone, before -> after:")
    for name in sources:
        for split in ("train", "validation", "test"):
            chosen = [i for i in items if i.set == name and i.split == split]
            before = dense_recall(chosen, qs, ts, None)
            after = dense_recall(chosen, qs, ts, adapter)
            print(f"  {name:12s} {split:10s} n={len(chosen):4d}  {before:.3f} -> {after:.3f}")
    if not args.check:
        about = {"fitted_on": "train splits of LoCoMo and LongMemEval (tools/splits.py)",
                 "questions": len(train), "ridge": RIDGE, "negative_weight": NEGATIVE_WEIGHT,
                 "negatives": NEGATIVES, "tool": "tools/learn_query_adapter.py"}  # fmt: skip
        write_adapter(args.out, adapter, about)
        print(f"wrote {args.out}")
    embedder.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
