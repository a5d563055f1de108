"""What :func:`ferrex.rules.slot_outcomes.slot_match` makes of two facts, in one word, for the
unit tests that weigh many pairs: ``same``, ``possible`` or None (other slots)."""

from __future__ import annotations

from ferrex.rules.slot_outcomes import slot_match


def outcome(
    new_predicate: str,
    new_object: str,
    old_predicate: str,
    old_object: str,
    phrase_cosine: float,
    *,
    news: bool = False,
) -> str | None:
    found = slot_match(new_predicate, new_object, old_predicate, old_object, phrase_cosine,
                       news=news)  # fmt: skip
    return None if found is None else found.outcome
