"""Would 8-bit activations cost recall? The bundled model as ferrex runs it beside the same graph
with every matrix product quantized dynamically (int8 weights, 8-bit activations per tensor).

    python -m tools.eval_int8_activations [--scifact] [--locomo] [--work DIR]

An experiment, not a feature: ferrex does not ship the quantized graph. The quantized graph is
built here by ``onnxruntime.quantization.quantize_dynamic`` (it needs the ``onnx`` package of
the dev extras) from the optimised graph ferrex saved in the user's model cache (so run any
``ferrex`` command once first); both sides embed through :class:`ferrex.models.encoder.OnnxEncoder`.
Dense retrieval only, exhaustive, on :mod:`tools.eval_retrieval`'s readings of the sets:
SciFact's nDCG@10 and recall@10, LoCoMo's hit@k of the evidence turns (plain lines), searched
within each conversation, the adversarial questions left out; and the cosine between the two
vectors of each LoCoMo turn. The data are read from ``../shared/data`` (evaluation only).
Session 10 measured SciFact 0.6468 -> 0.6419 nDCG@10 and LoCoMo hit@5 0.428 -> 0.423; speed
is for the benchmarks (one short text about twice as fast, a long one 1.2 times).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np

from ferrex.models.encoder import OnnxEncoder, SessionSettings
from tools.eval_retrieval import DATA, Bench, beir_bench, locomo_bench, ndcg_at, recall_at

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


def dense_rankings(coder: OnnxEncoder, bench: Bench, k: int) -> tuple[np.ndarray, list[list[str]]]:
    """Every document's vector, and each query's first ``k`` document keys by cosine among
    the documents of its own namespace (a LoCoMo conversation; SciFact has one)."""
    matrix = coder.run([doc.request.content for doc in bench.docs])
    asked = coder.run([query.text for query in bench.queries])
    keys = [doc.key for doc in bench.docs]
    spaces = np.array([doc.request.namespace for doc in bench.docs])
    ranked = []
    for row, query in enumerate(bench.queries):
        scores = np.where(spaces == query.namespace, matrix @ asked[row], -9.0)
        ranked.append([keys[j] for j in np.argsort(-scores)[:k]])
    return matrix, ranked


def scifact(coders: dict[str, OnnxEncoder]) -> None:
    bench = beir_bench(DATA / "scifact")
    for name, coder in coders.items():
        _, ranked = dense_rankings(coder, bench, 10)
        pairs = list(zip(ranked, bench.queries, strict=True))
        ndcg = np.mean([ndcg_at(r, set(q.relevant), 10) for r, q in pairs])
        recall = np.mean([recall_at(r, set(q.relevant), 10) for r, q in pairs])
        print(f"scifact {name}: nDCG@10 {ndcg:.4f}, recall@10 {recall:.4f}")


def locomo(coders: dict[str, OnnxEncoder]) -> None:
    whole = locomo_bench(DATA / "locomo" / "locomo10.json", plain=True)
    bench = Bench(
        whole.name, whole.docs, [q for q in whole.queries if q.group != "adversarial"], []
    )
    vectors = {}
    for name, coder in coders.items():
        vectors[name], ranked = dense_rankings(coder, bench, 10)
        pairs = list(zip(ranked, bench.queries, strict=True))
        hits = {
            k: np.mean([recall_at(r, set(q.relevant), k) > 0 for r, q in pairs]) for k in (1, 5, 10)
        }
        shown = ", ".join(f"hit@{k} {share:.4f}" for k, share in hits.items())
        print(f"locomo {name}: {shown} ({len(bench.queries)} questions, {len(bench.docs)} turns)")
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
