"""Planning embedding batches by token length: every text once, little padding, in budget."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from ferrex.models.encoder import plan_batches


@given(
    st.lists(st.integers(min_value=1, max_value=600), max_size=300),
    st.integers(min_value=1, max_value=5000),
    st.integers(min_value=1, max_value=100),
)
def test_every_text_is_planned_once_within_the_budget(
    lengths: list[int], budget: int, max_batch: int
) -> None:
    batches = plan_batches(lengths, budget=budget, max_batch=max_batch)
    planned = [i for batch in batches for i in batch]
    assert sorted(planned) == list(range(len(lengths)))
    for batch in batches:
        assert 0 < len(batch) <= max_batch
        longest = max(lengths[i] for i in batch)
        # Over budget only as a text that is too long on its own.
        assert len(batch) * longest <= budget or len(batch) == 1
    # Shortest first: a batch's texts are never longer than the next batch's.
    for earlier, later in itertools.pairwise(batches):
        assert max(lengths[i] for i in earlier) <= min(lengths[i] for i in later)


def test_short_texts_share_a_batch_and_long_ones_do_not_pad_them() -> None:
    lengths = [200, 10, 12, 11, 250, 9]
    batches = plan_batches(lengths, budget=600, max_batch=64)
    assert batches == [[5, 1, 3, 2], [0, 4]]
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    # In the given order, one batch would pad every text to 250 tokens.
    assert padded == 4 * 12 + 2 * 250 < len(lengths) * 250
