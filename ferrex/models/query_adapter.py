"""A linear map of the bundled model's query vectors toward the memories that answer them.

A question and the note that answers it are worded differently ("when did she go to the
support group?" / "I went to an LGBTQ support group yesterday"); the bundled model embeds
both as it embeds any text. :class:`QueryAdapter` moves a recall's query vector ``q`` to
``q W`` at full strength (then unit length), with ``W`` a 384 x 384 matrix fitted by ridge
regression toward the identity: each training question's vector onto the mean vector of its
evidence, less half the mean of the five closest memories that are not evidence, so that the
map moves a question away from what merely looks like it as well as toward what answers it.
``tools/learn_query_adapter.py`` fits it on the *train* splits of LoCoMo and LongMemEval
(:mod:`tools.splits`: about 1,000 questions with their evidence turns) and chose its two
constants on the validation splits; the test splits and SciFact were not looked at in
fitting. A recall moves its question a share ``s`` of the way (``recall.query_adapter``, 0
to 1, 0 by default: off), ``q ((1 - s) I + s W)``: on a team's notes, unlike chat turns, the
full map lost answers from the first five (``docs/guide.md``).

Only query vectors move: memories keep the vectors they were stored with, so nothing is
embedded again. The dense leg ranks with the moved vector; relevance (fitted on plain
cosines) reads the plain vector's cosines, asked of the engine in the same call
(:func:`ferrex.read.access.dense_legs`). It is fitted to one model's vectors, so it applies
only when the embedder is the model it was fitted with (the identity key in
:data:`ADAPTER_FILE`'s header): a downloaded, local or remote model recalls with its own
query vectors.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

log = logging.getLogger(__name__)

#: The fitted matrix: a JSON header line (the model identity key it was fitted with, and
#: how), then the matrix as float16, row-major (``tools/learn_query_adapter.py`` writes it).
ADAPTER_FILE: Final = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "query_adapter.bin"


class QueryAdapter:
    """``q ↦ q M / |q M|`` for a query vector ``q`` of the model it was fitted with, where
    ``M = (1 - s) I + s W`` moves it a share ``s`` of the way."""

    def __init__(self, matrix: NDArray[np.float32], model_key: str) -> None:
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"a query adapter is a square matrix, not {matrix.shape}")
        self.matrix = matrix
        self.model_key = model_key

    def __call__(self, vector: NDArray[np.float32], strength: float = 1.0) -> NDArray[np.float32]:
        plain = np.asarray(vector, dtype=np.float32)
        moved = (1.0 - strength) * plain + strength * (plain @ self.matrix)
        norm = float(np.linalg.norm(moved))
        return vector if norm == 0.0 else (moved / norm).astype(np.float32)


def read_adapter(path: Path) -> QueryAdapter:
    """The adapter stored at ``path`` (header line, then float16 rows)."""
    data = path.read_bytes()
    end = data.index(b"\n")
    header = json.loads(data[:end])
    dim = int(header["dim"])
    rows = np.frombuffer(data[end + 1 :], dtype="<f2")
    if rows.size != dim * dim:
        raise ValueError(f"{path}: {rows.size} values for a {dim} x {dim} matrix")
    return QueryAdapter(rows.reshape(dim, dim).astype(np.float32), str(header["model"]))


def write_adapter(path: Path, adapter: QueryAdapter, about: dict[str, object]) -> None:
    """Store ``adapter`` at ``path`` with ``about`` (how it was fitted) in its header."""
    header = {"model": adapter.model_key, "dim": adapter.matrix.shape[0], **about}
    body = adapter.matrix.astype("<f2").tobytes()
    path.write_bytes(json.dumps(header, sort_keys=True).encode() + b"\n" + body)


@cache
def _shipped() -> QueryAdapter | None:
    try:
        return read_adapter(ADAPTER_FILE)
    except (OSError, ValueError, KeyError) as exc:  # a broken install: recall as before
        log.warning("query adapter: cannot read %s (%s); recalling without it", ADAPTER_FILE, exc)
        return None


def adapter_for(model_key: str) -> QueryAdapter | None:
    """The shipped adapter if it was fitted with the model of ``model_key``; else None."""
    adapter = _shipped()
    return adapter if adapter is not None and adapter.model_key == model_key else None
