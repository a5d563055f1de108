"""Models that run inside ferrex, offline: dense embeddings, BM25 sparse vectors, reranking.

One job per module:

- :mod:`~ferrex.models.choice`: which dense model is configured (pure).
- :mod:`~ferrex.models.identity`: what a vector was made by, where model files live.
- :mod:`~ferrex.models.bundled`: the default model, assembled from installed packages.
- :mod:`~ferrex.models.loading`: loading a model (lazily imported runtimes), the token counter.
- :mod:`~ferrex.models.encoder`: running a local model on ONNX Runtime, batched by token length.
- :mod:`~ferrex.models.cache`: the persistent vector cache.
- :mod:`~ferrex.models.embedder`: the :class:`Embedder` that ties them together.
- :mod:`~ferrex.models.sparse` and :mod:`~ferrex.models.rerank`: BM25 and cross-encoders;
  :mod:`~ferrex.models.late`: late-interaction reranking with the bundled model.

Importing this package imports neither fastembed nor onnxruntime.
"""

from ferrex.models.bundled import BUNDLED_DIR_NAME, MAX_TOKENS, assemble_bundled_model
from ferrex.models.cache import CacheStats, EmbeddingCache, cache_path, text_key
from ferrex.models.choice import (
    BUNDLED_DIM,
    BUNDLED_MODEL,
    DOWNLOAD_ENV,
    MODEL_ENV,
    EmbeddingChoice,
    choose_embedding_model,
    downloads_allowed,
)
from ferrex.models.embedder import Embedder
from ferrex.models.identity import ModelIdentity, models_dir
from ferrex.models.loading import LoadedModel, load_model

__all__ = [
    "BUNDLED_DIM",
    "BUNDLED_DIR_NAME",
    "BUNDLED_MODEL",
    "DOWNLOAD_ENV",
    "MAX_TOKENS",
    "MODEL_ENV",
    "CacheStats",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingChoice",
    "LoadedModel",
    "ModelIdentity",
    "assemble_bundled_model",
    "cache_path",
    "choose_embedding_model",
    "downloads_allowed",
    "load_model",
    "models_dir",
    "text_key",
]
