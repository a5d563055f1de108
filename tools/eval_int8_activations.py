"""Would 8-bit activations cost recall? The bundled model as ferrex runs it beside the same graph
with every matrix product quantized dynamically (int8 weights, 8-bit activations per tensor).

    python tools/eval_int8_activations.py [--scifact] [--locomo] [--work DIR]

An experiment, not a feature: ferrex does not ship the quantized graph. The quantized graph is
built here by ``onnxruntime.quantization.quantize_dynamic`` (it needs the ``onnx`` package of
the dev extras) from the optimised graph ferrex saved in the user's model cache (so run any
``ferrex`` command once first); both sides embed through :class:`ferrex.models.encoder.OnnxEncoder`.
Dense retrieval only, exhaustive: SciFact's nDCG@10 and recall@10 (title + " " + text, the 300
test claims), LoCoMo's hit@k of the evidence turns ("speaker: text"), searched within each
conversation, questions of categories 1-4. Also the cosine between the two vectors of each
LoCoMo turn. The data are read from ``../shared/data`` (evaluation only). Session 10 measured
SciFact 0.6468 -> 0.6419 nDCG@10 and LoCoMo hit@5 0.427 -> 0.422; speed is for the
benchmarks (one short text about twice as fast, a long one 1.2 times).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path

import numpy as np

from ferrex.models.encoder import OnnxEncoder, SessionSettings

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CACHE = Path.home() / ".cache" / "ferrex" / "models"


def encoders(work: Path) -> dict[str, OnnxEncoder]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = CACHE / "all-MiniLM-L6-v2-int8"
    saved = sorted((CACHE / "optimized").glob("*.onnx"))
    if not source.is_dir() or not saved:
        raise SystemExit(f"no bundled model or optimised graph in {CACHE}: run `ferrex doctor`")
    quantized = work / "int8-activations"
    if not (quantized / "model.onnx").is_file():
        shutil.copytree(source, quantized, dirs_exist_ok=True)
        quantize_dynamic(
            saved[0], quantized / "model.onnx", weight_type=QuantType.QInt8,
            per_channel=False, op_types_to_quantize=["MatMul"],
        )  # fmt: skip
    settings = SessionSettings.for_machine()
    return {
        "fp32": OnnxEncoder(
            source, "model.onnx", mean_pooling=True, settings=settings, optimized=saved[0]
        ),
        "int8": OnnxEncoder(quantized, "model.onnx", mean_pooling=True, settings=settings),
    }


def scifact(coders: dict[str, OnnxEncoder]) -> None:
    where = DATA / "scifact"
    docs = [json.loads(line) for line in (where / "corpus.jsonl").open()]
    relevant: dict[str, set[str]] = {}
    for line in list((where / "qrels-test.tsv").open())[1:]:
        query, doc, _ = line.split("\t")
        relevant.setdefault(query, set()).add(doc)
    claims = [json.loads(line) for line in (where / "queries.jsonl").open()]
    claims = [c for c in claims if c["_id"] in relevant]
    ids = [d["_id"] for d in docs]
    for name, coder in coders.items():
        matrix = coder.run([f"{d['title']} {d['text']}" for d in docs])
        asked = coder.run([c["text"] for c in claims])
        ndcg, recall = [], []
        for row, claim in enumerate(claims):
            top = [ids[j] for j in np.argsort(-(matrix @ asked[row]))[:10]]
            rel = relevant[claim["_id"]]
            dcg = sum(1 / math.log2(rank + 2) for rank, doc in enumerate(top) if doc in rel)
            ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(rel), 10)))
            ndcg.append(dcg / ideal)
            recall.append(len(set(top) & rel) / len(rel))
        print(f"scifact {name}: nDCG@10 {np.mean(ndcg):.4f}, recall@10 {np.mean(recall):.4f}")


def locomo(coders: dict[str, OnnxEncoder]) -> None:
    conversations = json.loads((DATA / "locomo" / "locomo10.json").read_text())
    turns: list[tuple[int, str, str]] = []
    questions: list[tuple[int, str, set[str]]] = []
    for number, conversation in enumerate(conversations):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [(number, t["dia_id"], f"{t['speaker']}: {t['text']}") for t in session]
        questions += [
            (number, q["question"], set(q["evidence"]))
            for q in conversation["qa"]
            if q.get("evidence") and q.get("category") != 5
        ]
    owner = np.array([t[0] for t in turns])
    vectors = {}
    for name, coder in coders.items():
        matrix = coder.run([t[2] for t in turns])
        asked = coder.run([q[1] for q in questions])
        hits = dict.fromkeys((1, 5, 10), 0)
        for row, (number, _, evidence) in enumerate(questions):
            scores = np.where(owner == number, matrix @ asked[row], -9.0)
            order = np.argsort(-scores)[:10]
            for k in hits:
                hits[k] += any(turns[j][1] in evidence for j in order[:k])
        shown = ", ".join(f"hit@{k} {v / len(questions):.4f}" for k, v in hits.items())
        print(f"locomo {name}: {shown} ({len(questions)} questions, {len(turns)} turns)")
        vectors[name] = matrix
    cosine = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    print(
        f"locomo turns, cosine fp32 to int8: median {np.median(cosine):.4f}, "
        f"p1 {np.percentile(cosine, 1):.4f}, min {cosine.min():.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", action="store_true", help="SciFact only (slow: ~10 min)")
    parser.add_argument("--locomo", action="store_true", help="LoCoMo only (~2 min)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ferrex-int8-eval"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    coders = encoders(args.work)
    both = not (args.scifact or args.locomo)
    if args.locomo or both:
        locomo(coders)
    if args.scifact or both:
        scifact(coders)


if __name__ == "__main__":
    main()
