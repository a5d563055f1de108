"""ferrex's own ONNX path against fastembed's: the same vectors in float32, close ones on 8-bit
activations (under their own identity), in input order whatever the batch, sane threads;
and the first store's wait for the model (a bad store does not wait; a good one says it did)."""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path

import numpy as np
import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import UsageError
from ferrex.models import Embedder, choose_embedding_model, load_model
from ferrex.models.encoder import SessionSettings, open_session, usable_cores
from ferrex.models.identity import INT8_ACTIVATIONS
from ferrex.models.loading import LoadedModel
from ferrex.rules.memory_input import StoreRequest

WORDS = (
    *("the", "deploy", "failed", "after", "migration", "Priya", "owns", "ledger-api"),
    *("written", "in", "Rust", "cache", "key", "changed", "Tuesday", "release", "staging"),
    *("eu-west-1", "runbook", "ünïcødé", "東京", "emoji", "🚀", "PR", "#260"),
)


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 220))) for _ in range(count)]
    return [*texts, "", "x", " ".join(["apple"] * 400)]  # empty, one token, past the window


@pytest.fixture(scope="module")
def both(model_home: Path) -> tuple[LoadedModel, LoadedModel]:
    """The default model on ferrex's runner (8-bit activations), and on fastembed's."""
    choice = choose_embedding_model("small", {})
    return load_model(choice, model_home), load_model(choice, model_home, runner="fastembed")


def test_the_float_direct_path_gives_the_previous_paths_vectors(
    both: tuple[LoadedModel, LoadedModel], model_home: Path
) -> None:
    _, previous = both
    direct = load_model(choose_embedding_model("small-float", {}), model_home)
    assert (direct.runner, previous.runner) == ("direct", "fastembed")
    assert direct.identity == previous.identity and not direct.identity.variant
    texts = _texts(80, seed=17)
    new, old = direct.run(texts, 64), previous.run(texts, 64)
    assert new.shape == old.shape == (len(texts), 384)
    cosines = np.sum(new * old, axis=1)
    assert float(cosines.min()) >= 0.9999, (float(cosines.min()), texts[int(cosines.argmin())])
    assert np.allclose(np.linalg.norm(new, axis=1), 1.0, atol=1e-5)


def test_eight_bit_activations_stay_close_to_the_float_vectors_under_their_own_identity(
    both: tuple[LoadedModel, LoadedModel],
) -> None:
    direct, previous = both
    assert direct.identity.variant == INT8_ACTIVATIONS
    assert previous.identity.variant == ""  # fastembed runs the file as it is
    assert direct.identity.key == previous.identity.key + "|" + INT8_ACTIVATIONS
    texts = _texts(80, seed=17)
    new, old = direct.run(texts, 64), previous.run(texts, 64)
    cosines = np.sum(new * old, axis=1)
    # Close (the quantization moves each vector a little) but not the same vectors.
    assert float(np.median(cosines)) >= 0.995, float(np.median(cosines))
    assert float(cosines.min()) >= 0.97, (float(cosines.min()), texts[int(cosines.argmin())])
    assert float(np.median(cosines)) < 0.99999
    assert np.allclose(np.linalg.norm(new, axis=1), 1.0, atol=1e-5)


def test_outputs_come_back_in_input_order_and_a_vector_does_not_depend_on_its_batch(
    both: tuple[LoadedModel, LoadedModel],
) -> None:
    direct, _ = both  # 8-bit activations: each token's row has a scale of its own
    texts = _texts(40, seed=3)
    random.Random(5).shuffle(texts)  # lengths in no order: the batches are planned by length
    together = direct.run(texts, 8)
    for row, text in enumerate(texts):
        alone = direct.run([text], 1)[0]
        assert float(together[row] @ alone) >= 0.9999, (row, text)
    # Not trivially so: different texts give clearly different vectors.
    assert float(together[0] @ together[1]) < 0.999


def test_the_session_runs_one_thread_per_usable_core_without_spinning(
    both: tuple[LoadedModel, LoadedModel],
) -> None:
    direct, _ = both
    settings = direct.session_settings
    assert settings is not None
    assert settings.intra_op_threads == len(os.sched_getaffinity(0)) == usable_cores()
    assert settings.callers == usable_cores()  # a call's batches, on as many threads
    assert (settings.inter_op_threads, settings.spinning) == (1, False)
    assert SessionSettings.for_machine(1).callers == 1
    assert SessionSettings.for_machine(1).intra_op_threads == 1
    assert SessionSettings.for_machine(0).intra_op_threads == usable_cores()
    assert direct.source is not None
    session = open_session(direct.source / "model.onnx", SessionSettings(intra_op_threads=1))
    options = session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_an_embedder_with_threads_passes_them_to_the_session(model_home: Path) -> None:
    embedder = Embedder(model_home, choose_embedding_model("small", {}), threads=1)
    settings = embedder.model().session_settings
    assert settings is not None and (settings.intra_op_threads, settings.callers) == (1, 1)
    embedder.close()


def test_a_bad_store_does_not_wait_for_the_model_and_the_first_good_one_says_it_waited(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = App(home=tmp_path / "home", config=load(tmp_path / "home", env={}))
    try:
        writer = app.writer()
        assert not app.embedder().loaded
        with pytest.raises(UsageError):
            writer.store(StoreRequest(content="   "))
        # Past the model's window: counting its tokens takes the tokenizer, not the model.
        too_long = " ".join(["word"] * 400)
        with pytest.raises(UsageError, match="window"):
            writer.store(StoreRequest(type="episodic", content=too_long))
        assert not app.embedder().loaded  # refused before the model was needed
        assert list(app.journal().read()) == []
        # A handler on ferrex's own logger: an earlier in-process `serve` may have stopped it
        # propagating to the root logger that caplog listens on.
        logger = logging.getLogger("ferrex")
        logger.addHandler(caplog.handler)
        level = logger.level
        logger.setLevel(logging.INFO)
        # The model loads from a warm cache in well under the 0.1 s a store reports, so the
        # load is made slow here: what is tested is that a long wait is said.
        app.embedder().before_load = lambda: time.sleep(0.3)
        try:
            first = writer.store(StoreRequest(content="The first note of a fresh server."))
        finally:
            logger.removeHandler(caplog.handler)
            logger.setLevel(level)
        assert first.status == "stored" and app.embedder().loaded
        waited = [w for w in first.warnings if "for the embedding model" in w]
        assert len(waited) == 1 and waited[0].startswith("waited "), first.warnings
        seconds = float(waited[0].split()[1])
        assert seconds >= 0.3
        assert any("waited" in r.getMessage() for r in caplog.records)
        second = writer.store(StoreRequest(content="A second note, the model already loaded."))
        assert not [w for w in second.warnings if "embedding model" in w]
    finally:
        app.close()


def test_a_background_load_is_waited_for_not_repeated(model_home: Path) -> None:
    embedder = Embedder(model_home, choose_embedding_model("small", {}), use_cache=False)
    embedder.load_in_background()
    embedder.load_in_background()  # already loading: no second thread, no second model
    embedder.wait_for_model()
    model = embedder.model()
    assert embedder.loaded and embedder.wait_for_model() == 0.0
    embedder.load_in_background()
    assert embedder.model() is model
    embedder.close()
