"""A text's vector does not depend on the batch it was embedded in: how many texts share an
ONNX call (``max_batch``) and how far they are padded change the cost, never the vectors, so
the encoder's batch size can be chosen for speed alone (and an import stores the vectors a
store of one text would)."""

from __future__ import annotations

import random

import numpy as np

from ferrex.models import choose_embedding_model
from ferrex.models.encoder import MAX_BATCH, OnnxEncoder, SessionSettings
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
