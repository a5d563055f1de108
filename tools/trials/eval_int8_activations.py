"""Does ferrex's default arithmetic cost recall? The bundled model in float32 (``small-float``)
beside the same model on 8-bit activations (``small``, the default).

    python -m tools.trials.eval_int8_activations [--scifact] [--locomo]

Both sides load through :func:`ferrex.models.load_model` as ferrex loads them (the 8-bit side's
graph is :func:`ferrex.models.graph.int8_matrix_products` of the bundled file: the file's own
int8 weights, each token's activations quantized with a scale of its own), and embed with the
real model, no cache. Dense retrieval only, exhaustive, on :mod:`tools.eval_retrieval`'s
readings of the sets: SciFact's nDCG@10 and recall@10, LoCoMo's hit@k of the evidence turns
(plain lines), searched within each conversation, the adversarial questions left out; and the
cosine between the two vectors of each LoCoMo turn. The data are read from ``../shared/data``
(evaluation only). The hybrid figures, through the real import and recall, are
:mod:`tools.eval_retrieval`'s, run once per tree.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ferrex.models import choose_embedding_model, load_model
from ferrex.models.loading import LoadedModel
from tools import harness
from tools.eval_retrieval import (
    DATA,
    Bench,
    Doc,
    beir_bench,
    locomo_bench,
    ndcg_at,
    recall_at,
)


def encoders(home: Path) -> dict[str, LoadedModel]:
    return {
        name: load_model(choose_embedding_model(tier, {}), home)
        for name, tier in (("float32", "small-float"), ("int8", "small"))
    }


def _text(doc: Doc) -> str:
    """A document's text: every benchmark loader stores one as its memory's content."""
    assert doc.request.content is not None, doc.key
    return doc.request.content


def dense_rankings(coder: LoadedModel, bench: Bench, k: int) -> tuple[np.ndarray, list[list[str]]]:
    """Every document's vector, and each query's first ``k`` document keys by cosine among
    the documents of its own namespace (a LoCoMo conversation; SciFact has one)."""
    matrix = coder.run([_text(doc) for doc in bench.docs], 64)
    asked = coder.run([query.text for query in bench.queries], 64)
    keys = [doc.key for doc in bench.docs]
    spaces = np.array([doc.request.namespace for doc in bench.docs])
    ranked = []
    for row, query in enumerate(bench.queries):
        scores = np.where(spaces == query.namespace, matrix @ asked[row], -9.0)
        ranked.append([keys[j] for j in np.argsort(-scores)[:k]])
    return matrix, ranked


def scifact(coders: dict[str, LoadedModel]) -> None:
    bench = beir_bench(DATA / "scifact")
    for name, coder in coders.items():
        _, ranked = dense_rankings(coder, bench, 10)
        pairs = list(zip(ranked, bench.queries, strict=True))
        ndcg = np.mean([ndcg_at(r, set(q.relevant), 10) for r, q in pairs])
        recall = np.mean([recall_at(r, set(q.relevant), 10) for r, q in pairs])
        print(f"scifact {name}: nDCG@10 {ndcg:.4f}, recall@10 {recall:.4f}")


def locomo(coders: dict[str, LoadedModel]) -> None:
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
    cosine = (vectors["float32"] * vectors["int8"]).sum(axis=1)
    print(
        f"locomo turns, cosine float32 to int8: median {np.median(cosine):.4f}, "
        f"p1 {np.percentile(cosine, 1):.4f}, min {cosine.min():.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", action="store_true", help="SciFact only (slow: ~10 min)")
    parser.add_argument("--locomo", action="store_true", help="LoCoMo only (~2 min)")
    args = parser.parse_args()
    with harness.scratch("ferrex-int8-eval-") as home:
        run(encoders(home), args)


def run(coders: dict[str, LoadedModel], args: argparse.Namespace) -> None:
    both = not (args.scifact or args.locomo)
    if args.locomo or both:
        locomo(coders)
    if args.scifact or both:
        scifact(coders)


if __name__ == "__main__":
    main()
