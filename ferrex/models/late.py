"""Late-interaction reranking with the bundled MiniLM: no downloaded weights needed.

No cross-encoder ships in any package, but the bundled dense model's last hidden state holds
one vector per token. Late interaction (ColBERT's MaxSim) scores a candidate by taking, for
each query token, the best cosine with any of the candidate's tokens, and averaging over the
query's tokens (:func:`maxsim`): a query word that the candidate has, or a near synonym of,
counts even when the pooled vectors of the two texts are far apart. Token vectors are L2
normalised; ``[CLS]``, ``[SEP]`` and padding are left out of both sides.

Selected with ``models.reranker = "late"`` (or ``FERREX_RERANKER=late``). The score recall
uses is a blend, ``(1 - w) · fused + w · maxsim`` with ``w`` = ``recall.late_weight``
(:data:`DEFAULT_WEIGHT`): fused scores are in [0, 1] and so is MaxSim in practice, and a
blend keeps what the legs knew. ``w = 1`` replaces the fused score, as a cross-encoder does.

Documents' token vectors are kept in an in-memory LRU (:class:`TokenCache`) keyed by the
SHA-256 of the text and bounded in bytes (float16 rows), so a memory recalled again costs no
model run. A persistent cache would need the model's identity (the hash of ``model.onnx``)
in its key, a store beside the read model whose rows are dropped when a memory is forgotten
or purged (token vectors are as sensitive as the text), and a rebuild on a model change;
this step keeps none on disk.

Importing this module imports neither onnxruntime nor tokenizers.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    from ferrex.models.encoder import SessionSettings

#: The MaxSim share of the blended score when ``recall.late_weight`` is not set.
DEFAULT_WEIGHT: Final = 0.3
#: Bytes of token vectors the in-memory cache keeps (float16; a 40-token text is ~30 KB).
DEFAULT_CACHE_BYTES: Final = 64 * 1024 * 1024
LATE_NAME: Final = "late"


def unit_rows(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """``vectors`` with every row scaled to length 1 (a zero row stays zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    scaled: NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return scaled


def maxsim(query: NDArray[np.float32], document: NDArray[np.float32]) -> float:
    """The mean over ``query``'s rows of their best dot product with any of ``document``'s.

    Both are ``(tokens, dim)`` arrays of unit rows (so a dot product is a cosine); either
    side empty scores 0.
    """
    if query.shape[0] == 0 or document.shape[0] == 0:
        return 0.0
    if query.shape[1] != document.shape[1]:
        widths = f"{query.shape[1]} and {document.shape[1]}"
        raise ValueError(f"query and document rows have {widths} dims")
    similarities = query.astype(np.float32) @ document.astype(np.float32).T
    return float(similarities.max(axis=1).mean())


def blend(fused: float, late: float, weight: float) -> float:
    """``(1 - weight) · fused + weight · late``."""
    return (1.0 - weight) * fused + weight * late


class TokenCache:
    """An LRU of texts' token vectors (float16), keyed by the SHA-256 of the text, bounded by
    the bytes it holds. Thread-safe."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"a cache of {max_bytes} bytes")
        self.max_bytes = max_bytes
        self._rows: OrderedDict[bytes, NDArray[np.float16]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, text: str) -> NDArray[np.float32] | None:
        key = self.key(text)
        with self._lock:
            rows = self._rows.get(key)
            if rows is None:
                self.misses += 1
                return None
            self._rows.move_to_end(key)
            self.hits += 1
        return rows.astype(np.float32)

    def put(self, text: str, rows: NDArray[np.float32]) -> None:
        stored = rows.astype(np.float16)
        if stored.nbytes > self.max_bytes:
            return
        key = self.key(text)
        with self._lock:
            old = self._rows.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._rows[key] = stored
            self._bytes += stored.nbytes
            while self._bytes > self.max_bytes:
                _, evicted = self._rows.popitem(last=False)
                self._bytes -= evicted.nbytes


class TokenEncoder:
    """The bundled model's token vectors: one ``(tokens, dim)`` array of unit rows per text,
    without its special tokens, in input order."""

    def __init__(self, directory: Path, settings: SessionSettings) -> None:
        from ferrex.models.encoder import load_tokenizer, open_session

        self.settings = settings
        self._tokenizer: Tokenizer
        self._tokenizer, self._pad_id = load_tokenizer(directory)
        self._session: ort.InferenceSession = open_session(directory / "model.onnx", settings)
        self._inputs = {node.name for node in self._session.get_inputs()}

    def run(self, texts: Sequence[str]) -> list[NDArray[np.float32]]:
        from ferrex.models.encoder import plan_batches

        encodings = self._tokenizer.encode_batch(list(texts))
        ids = [encoding.ids for encoding in encodings]
        keep = [[not special for special in e.special_tokens_mask] for e in encodings]
        rows: list[NDArray[np.float32]] = [np.empty((0, 0), np.float32)] * len(ids)
        for batch in plan_batches([len(i) for i in ids]):
            hidden = self._hidden([ids[i] for i in batch])
            for row, index in enumerate(batch):
                tokens = hidden[row, : len(ids[index])][np.asarray(keep[index], dtype=bool)]
                rows[index] = unit_rows(tokens)
        return rows

    def _hidden(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        from ferrex.models.encoder import padded_feed

        feed, _ = padded_feed(ids, self._pad_id, self._inputs)
        output: NDArray[Any] = np.asarray(self._session.run(None, feed)[0], dtype=np.float32)
        if output.ndim != 3:
            raise ValueError("the model gives no per-token output (it pools itself)")
        return output


class LateInteraction:
    """A loaded late-interaction scorer: MaxSim of a query against documents, with the
    documents' token vectors cached. Scores are in [-1, 1], higher is more relevant."""

    def __init__(
        self,
        encoder: TokenEncoder,
        source: Path,
        load_seconds: float,
        *,
        weight: float = DEFAULT_WEIGHT,
        cache: TokenCache | None = None,
    ) -> None:
        from ferrex.models.bundled import BUNDLED_FILES

        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"late_weight {weight} is not within [0, 1]")
        self.name = LATE_NAME
        self.source: Path | None = source
        self.file_sha256 = BUNDLED_FILES["model.onnx"]
        self.load_seconds = load_seconds
        self.weight = weight
        self.cache = cache if cache is not None else TokenCache()
        self._encoder = encoder

    def with_weight(self, weight: float) -> LateInteraction:
        """The same scorer (one model session, one cache) blending with another weight."""
        return LateInteraction(
            self._encoder, self.source or Path(), self.load_seconds, weight=weight,
            cache=self.cache,
        )  # fmt: skip

    def token_vectors(self, docs: Sequence[str]) -> list[NDArray[np.float32]]:
        """Each document's token vectors, from the cache or one batched model run."""
        found: list[NDArray[np.float32] | None] = [self.cache.get(doc) for doc in docs]
        missing = [i for i, rows in enumerate(found) if rows is None]
        if missing:
            for i, rows in zip(missing, self._encoder.run([docs[i] for i in missing]), strict=True):
                self.cache.put(docs[i], rows)
                found[i] = rows
        return [rows if rows is not None else np.empty((0, 0), np.float32) for rows in found]

    def rerank(self, query: str, docs: Sequence[str]) -> list[float]:
        """One MaxSim score per document, in the order given (the query is not cached)."""
        if not docs:
            return []
        query_rows = self._encoder.run([query])[0]
        return [maxsim(query_rows, rows) for rows in self.token_vectors(docs)]


def load_late(weight: float = DEFAULT_WEIGHT, *, threads: int | None = None) -> LateInteraction:
    """The late-interaction scorer over the bundled model (assembled first if needed)."""
    from ferrex.models.bundled import BUNDLED_DIR_NAME, assemble_bundled_model
    from ferrex.models.encoder import SessionSettings
    from ferrex.models.identity import shared_models_dir

    started = time.perf_counter()
    directory = assemble_bundled_model(shared_models_dir(os.environ) / BUNDLED_DIR_NAME)
    encoder = TokenEncoder(directory, SessionSettings.for_machine(threads))
    return LateInteraction(encoder, directory, time.perf_counter() - started, weight=weight)
