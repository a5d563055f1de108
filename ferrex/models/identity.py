"""What a vector was made by (a model's identity), and where model files live.

Every vector is tagged by the :class:`ModelIdentity` (name, dimension, SHA-256 of the model
file) of the model that made it; the cache and the projections key on that identity, so
vectors of two models are never mixed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What a vector was made by. Projections store it; vectors of two identities never mix."""

    name: str
    dim: int
    file_sha256: str

    @property
    def key(self) -> str:
        return f"{self.name}|{self.dim}|{self.file_sha256}"


def models_dir(home: Path) -> Path:
    return home / "models"


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
