"""A text's vector does not depend on the batch it was embedded in: how many texts share an
ONNX call (``max_batch``) and how far they are padded change the cost, never the vectors, so
the encoder's batch size can be chosen for speed alone (and an import stores the vectors a
store of one text would)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from ferrex.models import choose_embedding_model
from ferrex.models.encoder import MAX_BATCH, OnnxEncoder, SessionSettings, plan_batches
from ferrex.models.loading import local_source

WORDS = ("the", "staging", "database", "moved", "to", "rack", "4", "Priya", "owns", "東京")


def test_batches_of_any_size_give_the_same_vectors_bit_for_bit() -> None:
    source = local_source(choose_embedding_model("small", {}))
    assert source is not None
    encoder = OnnxEncoder(source, "model.onnx", mean_pooling=True,
                          settings=SessionSettings.for_machine())  # fmt: skip
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) for _ in range(80)]
    default = encoder.run(texts)
    for max_batch in (1, 7, 64):
        assert np.array_equal(encoder.run(texts, max_batch=max_batch), default), max_batch
    assert len(texts) > MAX_BATCH  # the default run was split into several batches


def test_batches_run_on_several_threads_or_with_two_intra_op_threads_give_the_same_vectors() -> (
    None
):
    """Batches run on several threads at once give the vectors, bit for bit, of one thread
    running every batch, with one or two intra-op threads: a cache or a home filled with
    either holds the vectors the other would make."""
    source = local_source(choose_embedding_model("small", {}))
    assert source is not None

    def encoder(settings: SessionSettings) -> OnnxEncoder:
        return OnnxEncoder(source, "model.onnx", mean_pooling=True, settings=settings)

    rng = random.Random(9)
    # Short and long texts (long ones: batches planned within each thread's share of the
    # token budget), in no order of length.
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 200))) for _ in range(120)]
    alone = encoder(SessionSettings(intra_op_threads=1)).run(texts)
    shared = encoder(SessionSettings(intra_op_threads=1, callers=3))
    assert np.array_equal(shared.run(texts), alone)
    assert np.array_equal(shared.run(texts[:1]), alone[:1])  # one text: the caller's thread
    split = encoder(SessionSettings(intra_op_threads=2)).run(texts)
    assert np.array_equal(split, alone)
    both = encoder(SessionSettings(intra_op_threads=2, callers=2)).run(texts)
    assert np.array_equal(both, alone)


def test_an_error_in_one_of_the_threads_is_raised_by_the_run() -> None:
    source = local_source(choose_embedding_model("small", {}))
    assert source is not None
    encoder = OnnxEncoder(source, "model.onnx", mean_pooling=True,
                          settings=SessionSettings(intra_op_threads=1, callers=2))  # fmt: skip
    texts = [" ".join(WORDS[: 1 + n % 9]) for n in range(100)]
    real = encoder._run_batch
    calls: list[int] = []

    def failing(ids: Any) -> Any:
        calls.append(len(ids))
        if len(calls) == 3:
            raise RuntimeError("the third batch failed")
        return real(ids)

    encoder._run_batch = failing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="third batch"):
        encoder.run(texts)
    planned = plan_batches([len(t) for t in encoder._tokenizer.encode_batch(texts)])
    assert len(planned) >= 6
    assert len(calls) <= 4  # the third, and at most one the other thread had begun
