"""The meaning rule on the dedup pair set, without a model: whatever the similarity, no
different statement of ``golden_set/dedup_pairs.jsonl`` may read as a repeat, and no true
duplicate may be kept apart by the rule (``tools/eval_dedup.py`` adds the model's cosine)."""

from __future__ import annotations

from collections import Counter

from ferrex.rules.dedup import meaning_difference
from tools.eval_dedup import load_pairs


def test_the_pair_set_covers_every_kind() -> None:
    pairs = load_pairs()
    kinds = Counter(p["kind"] for p in pairs if not p["duplicate"])
    assert len(pairs) >= 150
    for kind in ("direction", "negation", "number", "version", "date", "duration",
                 "identifier", "name", "opposite"):  # fmt: skip
        assert kinds[kind] >= 8, kind
    same = Counter(p["kind"] for p in pairs if p["duplicate"])
    assert set(same) == {"case", "whitespace", "punctuation", "rewording"}


def test_no_different_statement_reads_as_a_repeat() -> None:
    missed = [
        (p["a"], p["b"])
        for p in load_pairs()
        if not p["duplicate"]
        and (
            meaning_difference(p["b"], p["a"]) is None or meaning_difference(p["a"], p["b"]) is None
        )
    ]
    assert missed == []


def test_no_true_duplicate_is_kept_apart_by_the_rule() -> None:
    kept = [
        (p["a"], p["b"], meaning_difference(p["b"], p["a"]))
        for p in load_pairs()
        if p["duplicate"] and meaning_difference(p["b"], p["a"]) is not None
    ]
    assert kept == []
