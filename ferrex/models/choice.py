"""Which dense embedding model is configured: tiers, model directories, downloads (pure).

Tiers (``FERREX_EMBEDDING_MODEL`` or the ``setting`` argument of
:func:`choose_embedding_model`): ``small`` (default, offline: all-MiniLM-L6-v2 from installed
packages, see :mod:`ferrex.models.bundled`, its matrix products on 8-bit activations),
``small-float`` (the same model in float32, the vectors of ferrex before 8-bit activations),
``mid`` (``BAAI/bge-small-en-v1.5``), ``best``
(``BAAI/bge-base-en-v1.5``), or the path of a model directory holding an ONNX file
(``model.onnx`` or ``onnx/model.onnx``), ``tokenizer.json`` and ``tokenizer_config.json``,
or ``openai:MODEL``, a model on an OpenAI-compatible embeddings server.
``mid`` and ``best`` are fastembed built-ins, downloaded into ``<home>/models/fastembed/`` on a
machine with internet. Nothing here reads the environment or the disk: callers pass both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ferrex.errors import UsageError
from ferrex.models.identity import INT8_ACTIVATIONS

MODEL_ENV: Final = "FERREX_EMBEDDING_MODEL"
DOWNLOAD_ENV: Final = "FERREX_ALLOW_DOWNLOAD"

#: ``openai:MODEL``: a model on an OpenAI-compatible embeddings server
#: (:mod:`ferrex.models.remote`, configured by ``models.embedding_url``).
REMOTE_PREFIX: Final = "openai:"

BUNDLED_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_DIM: Final = 384

#: fastembed built-ins by tier, and the dimension each must produce.
DOWNLOAD_TIERS: Final[Mapping[str, tuple[str, int]]] = {
    "mid": ("BAAI/bge-small-en-v1.5", 384),
    "best": ("BAAI/bge-base-en-v1.5", 768),
}

_TRUE: Final = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class EmbeddingChoice:
    """Which dense model is configured, and where that setting came from."""

    kind: Literal["bundled", "download", "directory", "remote"]
    setting: str
    origin: str
    model_name: str
    expected_dim: int | None = None
    directory: Path | None = None
    variant: str = ""
    """The arithmetic asked of a local model (:attr:`ModelIdentity.variant`): ``small`` runs
    on 8-bit activations, ``small-float`` the same model in float32."""


def choose_embedding_model(setting: str | None, env: Mapping[str, str]) -> EmbeddingChoice:
    """The dense model for ``setting``, else ``env[FERREX_EMBEDDING_MODEL]``, else ``small``.

    Pure: reads only its arguments. ``small``, ``mid`` and ``best`` are tiers (any case); a
    value with a path separator or starting with ``~`` or ``.`` is a model directory (write
    ``./mid`` for a directory named like a tier). Anything else is a :class:`UsageError`.
    """
    if setting is not None and setting.strip():
        value, origin = setting.strip(), "argument"
    elif env.get(MODEL_ENV, "").strip():
        value, origin = env[MODEL_ENV].strip(), MODEL_ENV
    else:
        value, origin = "small", "default"

    tier = value.lower()
    if tier.startswith(REMOTE_PREFIX):
        model = value[len(REMOTE_PREFIX) :].strip()
        if not model:
            raise UsageError(
                f"embedding model {value!r} (from {origin}) names no model",
                hint="write openai:MODEL, the name the embeddings server knows the model by",
            )
        return EmbeddingChoice("remote", value, origin, f"{REMOTE_PREFIX}{model}")
    if tier == "small":
        return EmbeddingChoice(
            "bundled", value, origin, BUNDLED_MODEL, BUNDLED_DIM, variant=INT8_ACTIVATIONS
        )
    if tier == "small-float":
        return EmbeddingChoice("bundled", value, origin, BUNDLED_MODEL, BUNDLED_DIM)
    if tier in DOWNLOAD_TIERS:
        name, dim = DOWNLOAD_TIERS[tier]
        return EmbeddingChoice("download", value, origin, name, dim)
    if "/" in value or os.sep in value or value.startswith(("~", ".")):
        directory = Path(value)
        return EmbeddingChoice("directory", value, origin, directory.name, None, directory)
    raise UsageError(
        f"unknown embedding model {value!r} (from {origin})",
        hint="use small, small-float, mid, best, the path of a model directory, or openai:MODEL",
    )


def downloads_allowed(env: Mapping[str, str]) -> bool:
    """Whether a missing model may be downloaded: ``FERREX_ALLOW_DOWNLOAD`` is set true and the
    user has not forced ``HF_HUB_OFFLINE``."""
    allowed = env.get(DOWNLOAD_ENV, "").strip().lower() in _TRUE
    forced_offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
    return allowed and not forced_offline
