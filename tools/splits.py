"""The train / validation / test splits of the public sets, fixed once for every learned part.

Anything fitted from LoCoMo or LongMemEval (relevance, fusion weights) is fitted on ``train``,
chosen on ``validation`` and reported on ``test``; a figure said to be LoCoMo's or
LongMemEval's in an issue's "Done when" is the test split's. SciFact is never fitted.

- LoCoMo is split by conversation, so no turn of a tested conversation was seen in fitting:
  six conversations train, one validates, three test (639 of the 1,986 questions).
- LongMemEval is split by the first byte of the SHA-256 of ``question_id``, modulo 3:
  0 train (116 of the 313 shared questions), 1 validation (95), 2 test (102).
"""

from __future__ import annotations

import hashlib
from typing import Final, Literal

Split = Literal["train", "validation", "test"]

LOCOMO: Final[dict[str, Split]] = {
    "conv-26": "train",
    "conv-30": "train",
    "conv-41": "train",
    "conv-42": "train",
    "conv-43": "train",
    "conv-44": "train",
    "conv-47": "validation",
    "conv-48": "test",
    "conv-49": "test",
    "conv-50": "test",
}
_BY_REMAINDER: Final[tuple[Split, Split, Split]] = ("train", "validation", "test")


def locomo_split(sample_id: str) -> Split:
    """The split of a LoCoMo conversation; an unknown conversation is an error, never a guess."""
    try:
        return LOCOMO[sample_id]
    except KeyError:
        raise ValueError(f"LoCoMo conversation {sample_id!r} is in no split") from None


def longmemeval_split(question_id: str) -> Split:
    """The split of a LongMemEval question, by a hash of its id."""
    return _BY_REMAINDER[hashlib.sha256(question_id.encode()).digest()[0] % 3]
