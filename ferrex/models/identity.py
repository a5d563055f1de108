"""What a vector was made by (a model's identity), and where model files live.

Downloaded models live in the data directory (``<home>/models/fastembed``); the default model,
assembled from installed files, lives once per user in :func:`shared_models_dir`.

Every vector is tagged by the :class:`ModelIdentity` (name, dimension, SHA-256 of the model
file, and the variant of the arithmetic, if any) of the model that made it; the cache and the
projections key on that identity, so vectors of two models are never mixed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: The :attr:`ModelIdentity.variant` of a model whose matrix products run on 8-bit
#: activations against its int8 weights (:func:`ferrex.models.graph.int8_matrix_products`),
#: with its attention and GELU each one fused operator. The second such arithmetic:
#: ``int8-activations`` (session 11) had neither fusion and a slower row quantization, whose
#: vectors differ by rounding (cosine median 0.99992); a home built with it re-embeds.
INT8_ACTIVATIONS: Final = "int8-activations-2"

#: Overrides the per-user cache directory (tests point it at a temporary directory).
CACHE_ENV: Final = "FERREX_CACHE_DIR"


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What a vector was made by. Projections store it; vectors of two identities never mix."""

    name: str
    dim: int
    file_sha256: str
    variant: str = ""
    """How the file's weights are computed with, when that changes the vectors (the default
    model's ``int8-activations-2``, see :mod:`ferrex.models.graph`); empty: as the file says."""

    @property
    def key(self) -> str:
        base = f"{self.name}|{self.dim}|{self.file_sha256}"
        return f"{base}|{self.variant}" if self.variant else base


def models_dir(home: Path) -> Path:
    return home / "models"


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def user_cache_dir(env: Mapping[str, str]) -> Path:
    """ferrex's per-user cache: ``$FERREX_CACHE_DIR``, else ``$XDG_CACHE_HOME/ferrex``, else
    ``~/.cache/ferrex`` (created 0700 by whoever writes into it)."""
    explicit = env.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = env.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path("~/.cache")
    return (base.expanduser() / "ferrex").absolute()


def shared_models_dir(env: Mapping[str, str]) -> Path:
    """Where models ferrex assembles itself live, shared by every data directory of the user."""
    return user_cache_dir(env) / "models"
