"""Precision and recall of predicate normalization and entity resolution on our pair sets.

    python tools/eval_pairs.py [--no-model] [--json] [--verbose]

The sets (``golden_set/predicate_pairs.jsonl`` and ``golden_set/entity_pairs.jsonl``,
described in ``golden_set/README.md``) are lines ``{"a", "b", "same", "note"}``: two ways of
saying a relation (or naming an entity) and whether they are the same one.

A pair counts as *merged* by a stage when:

- predicates, ``normalization``: ``normalize_predicate(a) == normalize_predicate(b)``;
- predicates, ``+ match_known``: merged by normalization, or ``match_known`` places the
  normalized ``a`` on the normalized ``b`` (``b`` is the subject's one known predicate);
- predicates, ``+ unplaced_neighbour``: merged by the above, or ``unplaced_neighbour`` finds
  ``b`` for ``a`` with the real bundled model's cosine over the phrases (``_`` as a space).
  This stage does not merge in the store (the lead refuses with ``conflict_ambiguous``), so
  its precision is how often such a refusal would be right;
- entities, ``fuzzy``: ``resolve_entity(a, [b])`` without embeddings is not ``new``;
- entities, ``+ embedding``: the same with the real model's cosine of the names, as the
  store computes it, at the default embedding threshold.

The subject set (``golden_set/subject_pairs.jsonl``) labels each pair ``same``,
``different`` or ``possible`` (``{"a", "b", "label", "note"}``): two spellings of a fact's
subject. Its stages are ``case/hyphen folding`` (the rule before subjects were entities:
equal ``subject_key``), ``subject rules`` (:func:`ferrex.rules.subjects.subject_outcome`
without a model) and ``+ embedding`` (with the bundled model's cosine). *Merge precision*
counts a merged ``possible`` pair as a wrong merge; *recall* is over the ``same`` pairs;
the *possible tier* line says which share of the ``different`` pairs (at most 10% is the
target) and of the ``possible`` pairs each stage flags as possibly the same.

Precision is merged-and-same over merged, recall merged-and-same over same. For predicate
pairs that the first two stages leave apart, the cosine of every pair is printed (positives
and negatives side by side, with what the guard says) and a table of thresholds, which is
how :data:`ferrex.rules.predicates.PREDICATE_EMBEDDING_THRESHOLD` was chosen.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ferrex.models import Embedder, choose_embedding_model  # noqa: E402
from ferrex.rules.entities import Candidate, normalize_entity, resolve_entity  # noqa: E402
from ferrex.rules.predicates import (  # noqa: E402
    PREDICATE_EMBEDDING_THRESHOLD,
    match_known,
    may_reword,
    normalize_predicate,
    predicate_phrase,
    unplaced_neighbour,
)
from ferrex.rules.subjects import Outcome, subject_outcome  # noqa: E402
from projections.documents import subject_key  # noqa: E402

PREDICATE_PAIRS: Final = ROOT / "golden_set" / "predicate_pairs.jsonl"
ENTITY_PAIRS: Final = ROOT / "golden_set" / "entity_pairs.jsonl"
SUBJECT_PAIRS: Final = ROOT / "golden_set" / "subject_pairs.jsonl"

Similarity = Callable[[str, Sequence[str]], list[float]]


@dataclass(frozen=True, slots=True)
class Pair:
    a: str
    b: str
    same: bool
    note: str


@dataclass(frozen=True, slots=True)
class Score:
    """One stage's confusion counts over a pair set."""

    true_merges: int
    false_merges: int
    missed: int
    kept_apart: int

    @property
    def precision(self) -> float:
        merged = self.true_merges + self.false_merges
        return self.true_merges / merged if merged else 1.0

    @property
    def recall(self) -> float:
        same = self.true_merges + self.missed
        return self.true_merges / same if same else 1.0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "true_merges": self.true_merges,
            "false_merges": self.false_merges,
            "missed": self.missed,
            "kept_apart": self.kept_apart,
        }


def load_pairs(path: Path) -> list[Pair]:
    """The pairs of a set; a malformed line is an error naming the file and the line."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if (
            not isinstance(row, dict)
            or set(row) != {"a", "b", "same", "note"}
            or not isinstance(row["a"], str)
            or not isinstance(row["b"], str)
            or not isinstance(row["same"], bool)
            or not isinstance(row["note"], str)
        ):
            raise ValueError(f"{path}:{number}: expected {{a, b, same, note}}, got {line!r}")
        pairs.append(Pair(row["a"], row["b"], row["same"], row["note"]))
    return pairs


def score(pairs: Sequence[Pair], merged: Callable[[Pair], bool]) -> Score:
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for pair in pairs:
        counts[(merged(pair), pair.same)] += 1
    return Score(counts[True, True], counts[True, False], counts[False, True], counts[False, False])


# --- predicates -----------------------------------------------------------------------------


def normalized_alike(pair: Pair) -> bool:
    return normalize_predicate(pair.a) == normalize_predicate(pair.b)


def known_match(pair: Pair) -> bool:
    """Merged by normalization or by the typo step against ``b`` as the one known predicate."""
    a, b = normalize_predicate(pair.a), normalize_predicate(pair.b)
    return a == b or match_known(a, [b]) == b


def neighbour_match(
    pair: Pair, similarity: Similarity, threshold: float = PREDICATE_EMBEDDING_THRESHOLD
) -> bool:
    """Merged by the two steps above, or ``unplaced_neighbour`` names ``b`` for ``a``."""
    if known_match(pair):
        return True
    a, b = normalize_predicate(pair.a), normalize_predicate(pair.b)
    return unplaced_neighbour(a, [b], similarity, threshold) is not None


@dataclass(frozen=True, slots=True)
class Unplaced:
    """A pair the first two stages leave apart: its cosine and whether the guard allows it."""

    pair: Pair
    a: str
    b: str
    cosine: float
    allowed: bool


def unplaced_pairs(pairs: Sequence[Pair], similarity: Similarity) -> list[Unplaced]:
    out = []
    for pair in pairs:
        if known_match(pair):
            continue
        a, b = normalize_predicate(pair.a), normalize_predicate(pair.b)
        (cosine,) = similarity(predicate_phrase(a), [predicate_phrase(b)])
        out.append(Unplaced(pair, a, b, cosine, a != b and may_reword(a, b)))
    return sorted(out, key=lambda u: -u.cosine)


def threshold_table(unplaced: Sequence[Unplaced], thresholds: Sequence[float]) -> list[str]:
    """Precision and recall of the neighbour stage alone, on the unplaced pairs, by threshold."""

    def merged_above(threshold: float) -> Callable[[Pair], bool]:
        return lambda p: any(u.pair is p and u.allowed and u.cosine > threshold for u in unplaced)

    lines = []
    for threshold in thresholds:
        result = score([u.pair for u in unplaced], merged_above(threshold))
        lines.append(f"  > {threshold:.2f}: {_counts(result)}")
    return lines


# --- entities -------------------------------------------------------------------------------


def _candidate(name: str) -> Candidate:
    return Candidate("e1", name, normalize_entity(name))


def entity_merged(
    pair: Pair,
    embedding_scores: Callable[[str, Sequence[Candidate]], Sequence[float]] | None = None,
) -> bool:
    return resolve_entity(pair.a, [_candidate(pair.b)], embedding_scores=embedding_scores).kind != (
        "new"
    )


# --- subjects -------------------------------------------------------------------------------

Label = Outcome


@dataclass(frozen=True, slots=True)
class SubjectPair:
    a: str
    b: str
    label: Label
    note: str


def load_subject_pairs(path: Path = SUBJECT_PAIRS) -> list[SubjectPair]:
    """The subject pairs; a malformed line is an error naming the file and the line."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if (
            not isinstance(row, dict)
            or set(row) != {"a", "b", "label", "note"}
            or row["label"] not in ("same", "different", "possible")
            or not all(isinstance(row[k], str) for k in ("a", "b", "note"))
        ):
            raise ValueError(f"{path}:{number}: expected {{a, b, label, note}}, got {line!r}")
        pairs.append(SubjectPair(row["a"], row["b"], row["label"], row["note"]))
    return pairs


@dataclass(frozen=True, slots=True)
class SubjectScore:
    """One stage over the subject pairs: merge precision and recall, and the possible tier."""

    outcomes: tuple[tuple[SubjectPair, Outcome], ...]

    def _count(self, label: str, outcome: str) -> int:
        return sum(1 for p, o in self.outcomes if p.label == label and o == outcome)

    @property
    def precision(self) -> float:
        merged = sum(1 for _, o in self.outcomes if o == "same")
        return self._count("same", "same") / merged if merged else 1.0

    @property
    def recall(self) -> float:
        same = sum(1 for p, _ in self.outcomes if p.label == "same")
        return self._count("same", "same") / same if same else 1.0

    def possible_share(self, label: str) -> float:
        total = sum(1 for p, _ in self.outcomes if p.label == label)
        return self._count(label, "possible") / total if total else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "wrong_merges": sum(1 for p, o in self.outcomes if o == "same" and p.label != "same"),
            "possible_of_different": round(self.possible_share("different"), 4),
            "possible_of_possible": round(self.possible_share("possible"), 4),
            "possible_of_same": round(self.possible_share("same"), 4),
        }

    def lines(self, name: str, verbose: bool) -> list[str]:
        out = [
            f"  {name:<28} merge precision {self.precision:.3f}  recall {self.recall:.3f}  "
            f"possible tier: {self.possible_share('different'):.1%} of different, "
            f"{self.possible_share('possible'):.0%} of possible, "
            f"{self.possible_share('same'):.0%} of same"
        ]
        if verbose:
            for pair, outcome in self.outcomes:
                if outcome != pair.label:
                    out.append(f"    {pair.label:>9} -> {outcome:<9} {pair.a!r} / {pair.b!r}")
        return out


def folded_outcome(pair: SubjectPair) -> Outcome:
    """The rule before subjects were entities: only case and separators folded."""
    return "same" if subject_key(pair.a) == subject_key(pair.b) else "different"


def subject_score(
    pairs: Sequence[SubjectPair], outcome: Callable[[SubjectPair], Outcome]
) -> SubjectScore:
    return SubjectScore(tuple((p, outcome(p)) for p in pairs))


# --- the real model -------------------------------------------------------------------------


@contextmanager
def bundled_embedder() -> Iterator[Embedder]:
    """The default (offline, bundled) model in a throw-away data directory."""
    with tempfile.TemporaryDirectory(prefix="ferrex-pairs-") as home:
        embedder = Embedder(Path(home), choose_embedding_model("small", {}))
        try:
            yield embedder
        finally:
            embedder.close()


def cosine_similarity(embedder: Embedder) -> Similarity:
    """``similarity(text, others)``: cosine of the text's vector to each of the others'."""

    def similarity(text: str, others: Sequence[str]) -> list[float]:
        vectors = embedder.embed_many([text, *others])
        return [_clamp(float(np.dot(vectors[0], v))) for v in vectors[1:]]

    return similarity


def entity_cosine(embedder: Embedder) -> Callable[[str, Sequence[Candidate]], list[float]]:
    """The store's embedding scores: the name against each candidate's spelling."""
    similarity = cosine_similarity(embedder)
    return lambda name, candidates: similarity(name, [c.name for c in candidates])


def entity_cosines(
    pairs: Sequence[Pair], scores_of: Callable[[str, Sequence[Candidate]], list[float]]
) -> list[tuple[float, Pair]]:
    """The cosine of every pair the fuzzy tier leaves apart, highest first."""
    apart = [p for p in pairs if not entity_merged(p)]
    scored = [(scores_of(p.a, [_candidate(p.b)])[0], p) for p in apart]
    return sorted(scored, key=lambda item: -item[0])


def _clamp(value: float) -> float:
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else 0.0


# --- report ---------------------------------------------------------------------------------


def _counts(result: Score) -> str:
    return (
        f"precision {result.precision:.3f}  recall {result.recall:.3f}  "
        f"({result.true_merges} merged right, {result.false_merges} wrong, "
        f"{result.missed} missed)"
    )


def _line(name: str, result: Score) -> str:
    return f"  {name:<28} {_counts(result)}"


def _misses(pairs: Sequence[Pair], merged: Callable[[Pair], bool]) -> list[str]:
    out = []
    for pair in pairs:
        if merged(pair) != pair.same:
            kind = "WRONG MERGE" if not pair.same else "missed"
            out.append(f"    {kind:<11} {pair.a!r} / {pair.b!r}  ({pair.note})")
    return out


def _open_subject(pair: SubjectPair) -> bool:
    from ferrex.rules.short_forms import spelled_out
    from ferrex.rules.subjects import compare_words

    left = spelled_out(normalize_entity(pair.a))
    right = spelled_out(normalize_entity(pair.b))
    return compare_words(left, right) is None and not set(left) & set(right)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-model", action="store_true", help="skip the embedding stages")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--verbose", action="store_true", help="list every wrong outcome")
    args = parser.parse_args(argv)

    predicate_pairs = load_pairs(PREDICATE_PAIRS)
    entity_pairs = load_pairs(ENTITY_PAIRS)
    predicate_stages: dict[str, Callable[[Pair], bool]] = {
        "normalization": normalized_alike,
        "+ match_known": known_match,
    }
    entity_stages: dict[str, Callable[[Pair], bool]] = {"fuzzy": entity_merged}
    subject_pairs = load_subject_pairs()
    subject_stages: dict[str, Callable[[SubjectPair], Outcome]] = {
        "case/hyphen folding (before)": folded_outcome,
        "subject rules": lambda p: subject_outcome(p.a, p.b),
    }

    with bundled_embedder() as embedder:
        unplaced: list[Unplaced] = []
        if not args.no_model:
            similarity = cosine_similarity(embedder)
            stage = f"+ unplaced_neighbour ({PREDICATE_EMBEDDING_THRESHOLD})"
            predicate_stages[stage] = lambda p: neighbour_match(p, similarity)
            unplaced = unplaced_pairs(predicate_pairs, similarity)
            scores_of = entity_cosine(embedder)
            entity_stages["+ embedding (0.92)"] = lambda p: entity_merged(p, scores_of)

            def cosine(a: str, b: str) -> float:
                return similarity(a, [b])[0]

            subject_stages["+ embedding (0.92)"] = lambda p: subject_outcome(
                p.a, p.b, cosine=cosine
            )
        results = {
            "predicates": {n: score(predicate_pairs, f) for n, f in predicate_stages.items()},
            "entities": {n: score(entity_pairs, f) for n, f in entity_stages.items()},
        }
        subjects = {n: subject_score(subject_pairs, f) for n, f in subject_stages.items()}
        if args.json:
            doc: dict[str, dict[str, dict[str, float | int]]] = {
                kind: {name: r.as_dict() for name, r in stages.items()}
                for kind, stages in results.items()
            }
            doc["subjects"] = {name: r.as_dict() for name, r in subjects.items()}
            print(json.dumps(doc, indent=2))
            return 0
        for kind, pairs, stages in (
            ("predicates", predicate_pairs, predicate_stages),
            ("entities", entity_pairs, entity_stages),
        ):
            same = sum(p.same for p in pairs)
            print(f"{kind}: {len(pairs)} pairs ({same} same, {len(pairs) - same} different)")
            for name, merged in stages.items():
                print(_line(name, results[kind][name]))
                if args.verbose:
                    print("\n".join(_misses(pairs, merged)))
        counts = {label: sum(p.label == label for p in subject_pairs) for label in
                  ("same", "different", "possible")}  # fmt: skip
        print(
            f"subjects: {len(subject_pairs)} pairs ({counts['same']} same, "
            f"{counts['different']} different, {counts['possible']} possible)"
        )
        for name, result in subjects.items():
            print("\n".join(result.lines(name, args.verbose)))
        if unplaced:
            print(
                "\npredicate pairs the first two stages leave apart, by cosine "
                "(+ same, - different; guard: ok or REFUSED):"
            )
            for u in unplaced:
                sign = "+" if u.pair.same else "-"
                guard = "ok" if u.allowed else "REFUSED"
                print(f"  {u.cosine:.3f} {sign} {guard:<7} {u.a} / {u.b}")
            print("\nthe neighbour stage alone (guard, then cosine) on those pairs, by threshold:")
            print("\n".join(threshold_table(unplaced, [0.6 + 0.025 * i for i in range(15)])))
            print("\nentity pairs the fuzzy tier leaves apart, by cosine (+ same, - different):")
            for value, pair in entity_cosines(entity_pairs, scores_of):
                print(f"  {value:.3f} {'+' if pair.same else '-'} {pair.a} / {pair.b}")
            print("\nsubject pairs sharing no word that the rules leave open, by cosine:")
            for value, spair in sorted(
                ((cosine(p.a, p.b), p) for p in subject_pairs if _open_subject(p)),
                key=lambda item: -item[0],
            ):
                print(f"  {value:.3f} {spair.label:<9} {spair.a} / {spair.b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
