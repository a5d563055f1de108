"""The Embedder: texts to unit vectors with the configured model, through the cache.

The model loads on first use (an MCP server must answer ``initialize`` fast, and a command that
embeds nothing loads none), or in the background when a server asks it to
(:meth:`Embedder.load_in_background`); texts already in the cache are not embedded again.
Counting tokens (what validating a store needs) takes only the tokenizer, never the model.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ferrex.models.bundled import BUNDLED_FILES
from ferrex.models.cache import UNWRITABLE, CacheStats, EmbeddingCache, cache_path, text_key
from ferrex.models.choice import (
    BUNDLED_DIM,
    BUNDLED_MODEL,
    EmbeddingChoice,
    choose_embedding_model,
    downloads_allowed,
)
from ferrex.models.identity import ModelIdentity
from ferrex.models.loading import (
    LoadedModel,
    Runner,
    TokenCounter,
    bundled_variant,
    load_model,
    local_source,
)
from ferrex.models.remote import (
    Circuit,
    RemoteSettings,
    ServerDown,
    identity_name,
    mismatch_error,
)

log = logging.getLogger(__name__)

QUERY_VARIANT = "query"
"""What the embedding cache files a server's query vectors under (the model's identity with
this variant), when the server is told which texts are queries: a text's query vector and its
passage vector differ."""


class Embedder:
    """Embeds texts with the chosen model through the cache; the model loads on first use.

    Safe to share between threads: the model loads once, under a lock.
    """

    def __init__(
        self,
        home: Path,
        choice: EmbeddingChoice,
        *,
        allow_download: bool = False,
        use_cache: bool = True,
        batch_size: int = 64,
        threads: int | None = None,
        before_load: Callable[[], None] | None = None,
        runner: Runner = "direct",
        remote: RemoteSettings | None = None,
        recorded: ModelIdentity | None = None,
    ) -> None:
        self.home = home
        self.choice = choice
        self.allow_download = allow_download
        self.batch_size = batch_size
        self.threads = threads
        self.runner: Runner = runner
        """Which code runs a local model (see :data:`~ferrex.models.loading.Runner`)."""
        self._use_cache = use_cache
        self._cache: EmbeddingCache | None = None
        self._model: LoadedModel | None = None
        self._counter: TokenCounter | None = None
        self._lock = threading.Lock()  # the model's: held while it loads
        self._cache_lock = threading.Lock()  # the cache's: close() never waits for a load
        self._loader: threading.Thread | None = None
        self.before_load = before_load
        """Called once, just before the model loads (the CLI says "loading model…")."""
        self.remote = remote if choice.kind == "remote" else None
        """An embeddings server's settings (``openai:MODEL`` only)."""
        if self.remote is None and choice.kind == "remote":
            self.remote = RemoteSettings()
        self._circuit = Circuit() if self.remote is not None else None
        """Whether the server is worth asking: kept across the model's loads, so that a
        server that hangs is waited for once, not at every call (each load probes it)."""
        self.recorded = recorded
        """The identity the projections were built with, if known (a server's model: what
        :attr:`identity` answers while the server cannot be reached, so that the stores
        open and recall can fall back on BM25)."""
        self._assumed: ModelIdentity | None = None

    @classmethod
    def from_env(
        cls,
        home: Path,
        setting: str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        use_cache: bool = True,
        batch_size: int = 64,
        threads: int | None = None,
        remote: RemoteSettings | None = None,
        recorded: ModelIdentity | None = None,
    ) -> Embedder:
        """The embedder that ``setting`` or the environment (``os.environ`` by default) asks for
        (``remote``: the embeddings server's settings, for ``openai:MODEL``)."""
        environ: Mapping[str, str] = os.environ if env is None else env
        return cls(
            home,
            choose_embedding_model(setting, environ),
            allow_download=downloads_allowed(environ),
            use_cache=use_cache,
            batch_size=batch_size,
            threads=threads,
            remote=remote,
            recorded=recorded,
        )

    @property
    def is_remote(self) -> bool:
        return self.choice.kind == "remote"

    def model(self) -> LoadedModel:
        """The loaded model, loading it now if needed."""
        with self._lock:
            if self._model is None:
                if self.before_load is not None:
                    self.before_load()
                model = load_model(
                    self.choice,
                    self.home,
                    allow_download=self.allow_download,
                    threads=self.threads,
                    runner=self.runner,
                    remote=self.remote,
                    circuit=self._circuit,
                )
                assumed = self._assumed
                if assumed is not None and assumed != model.identity:
                    # The stores were opened on the recorded identity while the server was
                    # away; it now serves another model: never mix the two.
                    raise mismatch_error(assumed, model.identity, self.choice.setting)
                if self._counter is not None:  # one tokenizer for counting, not two
                    model.counter = self._counter
                self._model = model
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def wait_for_model(self) -> float:
        """Load the model now if it is not loaded (or wait for the background load to end);
        the seconds this call waited, 0.0 if the model was already there. Raises what
        :meth:`model` raises."""
        if self._model is not None:
            return 0.0
        started = time.perf_counter()
        self.model()
        waited = time.perf_counter() - started
        log.info("waited %.1f s for the embedding model %s", waited, self.choice.model_name)
        return waited

    def load_in_background(self) -> None:
        """Start loading the model on a daemon thread, if it is neither loaded nor loading.

        A failure is only logged: the model stays unloaded, and the next call that needs it
        loads it again and reports the error to its caller.
        """

        def load() -> None:
            try:
                self.model()
            except Exception as exc:  # reported again by the call that needs the model
                log.warning("loading the embedding model in the background failed: %s", exc)

        with self._lock:
            if self._model is not None or (self._loader is not None and self._loader.is_alive()):
                return
            self._loader = threading.Thread(target=load, name="ferrex-model-load", daemon=True)
            self._loader.start()

    def join_loader(self) -> None:
        """Wait for a background load (:meth:`load_in_background`) to end, if one runs."""
        loader = self._loader
        if loader is not None:
            loader.join()

    def counter(self) -> TokenCounter:
        """The model's token counter and window, without loading the model where its files are
        local (the default model, a model directory); a downloaded model is loaded first."""
        if self._model is not None:
            return self._model.counter
        if self._counter is None and self.is_remote:
            self._counter = TokenCounter(None)  # the server's tokenizer is not known here
        if self._counter is None:
            source = local_source(self.choice)
            if source is None:
                return self.model().counter
            self._counter = TokenCounter(source)
        return self._counter

    def known_identity(self) -> ModelIdentity | None:
        """The model's identity if it is known without loading the model: always for the
        default model (its ONNX file's hash is pinned, and checked when it loads), else only
        once loaded."""
        if self._model is not None:
            return self._model.identity
        if self.choice.kind == "bundled":
            variant = bundled_variant(self.choice, self.runner)
            return ModelIdentity(BUNDLED_MODEL, BUNDLED_DIM, BUNDLED_FILES["model.onnx"], variant)
        return None

    @property
    def identity(self) -> ModelIdentity:
        """The model's identity; loads the model only when that is the only way to know it.

        A server's model that cannot be reached answers the :attr:`recorded` identity if it
        is of the same model name (the stores open; embedding still fails until the server
        answers, and then with a mismatch error if the server's model changed meanwhile)."""
        known = self.known_identity()
        if known is not None:
            return known
        if self._assumed is not None:  # the next embedding call checks it against the server
            return self._assumed
        try:
            return self.model().identity
        except ServerDown:
            recorded, remote = self.recorded, self.remote
            if (
                recorded is None
                or remote is None
                or recorded.name
                != identity_name(
                    self.choice.model_name.split(":", 1)[1],
                    remote.passage_prefix,
                    remote.input_type,
                )
            ):
                raise
            if self._assumed is None:
                log.warning(
                    "embeddings server unreachable: opening the stores on the recorded model %s",
                    recorded.key,
                )
            self._assumed = recorded
            return recorded

    def fits(self, text: str) -> bool:
        """Whether the model reads all of ``text`` (loads a local model; a server's model is
        assumed to read everything, as its tokenizer is not known here)."""
        if self.is_remote:
            return True
        return self.model().fits(text)

    def cache(self) -> EmbeddingCache | None:
        with self._cache_lock:
            if self._cache is None and self._use_cache:
                path = cache_path(self.home)
                try:
                    self._cache = EmbeddingCache(path)
                except (*UNWRITABLE, OSError) as exc:
                    # A full or read-only disk: every vector can be made again, so this
                    # process embeds without the cache rather than failing.
                    log.warning(
                        "embedding cache: cannot open %s (%s); embedding without it", path, exc
                    )
                    self._use_cache = False
            return self._cache

    def embed(self, text: str) -> NDArray[np.float32]:
        """The vector of one text as a passage (a memory, a name, a phrase)."""
        vectors: NDArray[np.float32] = self.embed_many([text])[0]
        return vectors

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The vector of a recall's query: with a server's ``query_prefix`` if one is set, or
        sent as a query through its ``input_type`` field (asymmetric models), else as
        :meth:`embed`."""
        remote = self.remote
        if remote is None or not (remote.query_prefix or remote.input_type):
            return self.embed(text)
        if remote.input_type:
            vectors: NDArray[np.float32] = self._embed_many([text], query=True)[0]
        else:
            vectors = self._embed_many([remote.query_prefix + text])[0]
        return vectors

    def embed_many(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """An ``(n, dim)`` float32 array, row ``i`` the unit vector of ``texts[i]`` (passages:
        with a server's ``passage_prefix`` if one is set).

        Cached texts are not embedded again; the rest are embedded in batches of similar
        length (less padding) and added to the cache.
        """
        if self.remote is not None and self.remote.passage_prefix:
            texts = [self.remote.passage_prefix + text for text in texts]
        return self._embed_many(texts)

    def _embed_many(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        model = self.model()
        identity = model.identity
        result = np.empty((len(texts), identity.dim), dtype=np.float32)
        if query and model.tells_queries:  # the same text's query vector is another vector
            identity = dataclasses.replace(identity, variant=QUERY_VARIANT)
        if not texts:
            return result
        keys = [text_key(text) for text in texts]
        cache = self.cache()
        vectors = cache.get_many(identity, keys) if cache is not None else {}
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in vectors}
        if missing:
            ordered = sorted(missing.items(), key=lambda item: len(item[1]))
            fresh = model.run([text for _, text in ordered], self.batch_size, query=query)
            new = {key: fresh[row] for row, (key, _) in enumerate(ordered)}
            if cache is not None:
                cache.put_many(identity, new.items())
            vectors.update(new)
        for row, key in enumerate(keys):
            result[row] = vectors[key]
        return result

    def cache_stats(self) -> CacheStats:
        cache = self._cache
        return cache.stats() if cache is not None else CacheStats(0, 0)

    def close(self) -> None:
        """Close the vector cache. A model still loading in the background is not waited for:
        it holds nothing that needs closing."""
        with self._cache_lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None
