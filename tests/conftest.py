"""Fixtures shared across the suites: the real default model, loaded once per session."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ferrex.models import Embedder, choose_embedding_model
from ferrex.models.identity import CACHE_ENV
from ferrex.parts import build_encoders
from projections.vector_sink import Encoders


@pytest.fixture(scope="session", autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The per-user cache (where the default model is assembled) of every test and every
    process a test starts: a temporary directory, never the real ~/.cache."""
    path = tmp_path_factory.mktemp("user-cache")
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(path)
    yield path
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


@pytest.fixture(scope="session")
def model_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the assembled default model and an embedding cache."""
    return tmp_path_factory.mktemp("model-home")


@pytest.fixture(scope="session")
def shared_embedder(model_home: Path) -> Iterator[Embedder]:
    embedder = Embedder(model_home, choose_embedding_model("small", {}))
    embedder.model()
    yield embedder
    embedder.close()


@pytest.fixture(scope="session")
def encoders(shared_embedder: Embedder) -> Encoders:
    """The real encoders, as the composition root builds them."""
    return build_encoders(shared_embedder)


def _sigint_disposition() -> tuple[object, bool, bool]:
    """How this process treats SIGINT: Python's handler, and whether the calling thread
    ignores or blocks it at the C level (what a child started now inherits through exec)."""
    proc = Path("/proc/thread-self/status")
    status = proc.read_text().splitlines() if proc.exists() else []
    bits = {k: int(v, 16) for k, _, v in (line.partition(":\t") for line in status)
            if k in ("SigIgn", "SigBlk")}  # fmt: skip
    mask = 1 << (signal.SIGINT - 1)
    return (
        signal.getsignal(signal.SIGINT),
        bool(bits.get("SigIgn", 0) & mask),
        bool(bits.get("SigBlk", 0) & mask),
    )


@pytest.fixture(autouse=True)
def sigint_kept() -> Iterator[None]:
    """No test leaves SIGINT ignored, blocked or handled otherwise than it found it: an
    ignored or blocked SIGINT survives exec, so every later child of this worker (the
    Ctrl-C test's import, say) would not stop on Ctrl-C."""
    before = _sigint_disposition()
    yield
    after = _sigint_disposition()
    assert after == before, f"SIGINT (handler, ignored, blocked) was {before}, left {after}"
