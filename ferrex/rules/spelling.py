"""The declared name nearest to a misspelt one, for "did you mean …?" hints.

Distance is optimal string alignment (Levenshtein plus swapping two neighbours as one
edit), because the usual slip is a transposition: ``contnet`` is one edit from ``content``
and two from ``context``.
"""

from __future__ import annotations

from collections.abc import Iterable


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and adjacent swaps turning ``a`` into ``b``."""
    before: list[int] | None = None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        before, previous = previous, current
    return previous[-1]


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, if close enough to be a slip (else None).

    Close enough: at most a third of the longer name's letters changed (at least one).
    Ties go to the alphabetically first name, so the hint is stable.
    """
    best: tuple[int, str] | None = None
    lowered = name.lower()
    for candidate in sorted(set(known)):
        distance = edit_distance(lowered, candidate.lower())
        if distance <= max(1, max(len(name), len(candidate)) // 3) and (
            best is None or distance < best[0]
        ):
            best = (distance, candidate)
    return best[1] if best else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean content?)"`` for the nearest known name, or ``""``."""
    close = nearest(name, known)
    return f" (did you mean {close}?)" if close else ""
