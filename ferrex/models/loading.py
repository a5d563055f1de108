"""Loading a dense model, offline unless told otherwise: a local one (the default model, a
model directory) on ferrex's :class:`~ferrex.models.encoder.OnnxEncoder`, a downloaded one
with fastembed (both imported lazily).

Loading never touches the network unless downloads are explicitly allowed
(``FERREX_ALLOW_DOWNLOAD=1``): ``HF_HUB_OFFLINE=1`` is set while fastembed loads, so a missing
model fails in seconds with :class:`~ferrex.errors.ModelUnavailable`. Every loaded model is
probed once, and its vectors are float32 and L2-normalised. Importing this module imports
neither fastembed nor onnxruntime.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, assert_never

import numpy as np
from numpy.typing import NDArray

from ferrex.errors import ModelUnavailable
from ferrex.models.bundled import (
    BUNDLED_DIR_NAME,
    BUNDLED_FASTEMBED_NAME,
    BUNDLED_FILES,
    MAX_TOKENS,
    assemble_bundled_model,
)
from ferrex.models.choice import (
    BUNDLED_DIM,
    DOWNLOAD_ENV,
    MODEL_ENV,
    REMOTE_PREFIX,
    EmbeddingChoice,
)
from ferrex.models.identity import (
    INT8_ACTIVATIONS,
    ModelIdentity,
    models_dir,
    sha256_file,
    shared_models_dir,
)

if TYPE_CHECKING:
    from fastembed import TextEmbedding
    from tokenizers import Tokenizer

    from ferrex.models.encoder import OnnxEncoder, SessionSettings
    from ferrex.models.remote import Circuit, RemoteEncoder, RemoteSettings

log = logging.getLogger(__name__)

_ONNX_CANDIDATES: Final = ("model.onnx", "onnx/model.onnx", "model_optimized.onnx")
_PROBE_TEXT: Final = "ferrex checks that this model loads and embeds."


@contextlib.contextmanager
def hub_offline(offline: bool) -> Iterator[None]:
    """Set ``HF_HUB_OFFLINE=1`` while fastembed loads, so a missing model fails fast.

    huggingface_hub reads the variable once, when it is first imported (by fastembed, inside
    this block); a process that starts offline therefore stays offline for the hub, which is
    what its configuration asked for.
    """
    if not offline:
        yield
        return
    previous = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous


_REGISTRATION_LOCK = threading.Lock()


def _register_dense(name: str, *, model_file: str, dim: int, mean_pooling: bool) -> None:
    """Make a local ONNX model known to fastembed under ``name`` (once per process)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _REGISTRATION_LOCK:
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if name.lower() in known:
            return
        TextEmbedding.add_custom_model(
            name,
            pooling=PoolingType.MEAN if mean_pooling else PoolingType.CLS,
            normalization=True,
            # Never contacted: every registered model is loaded with specific_model_path,
            # which fastembed returns before it considers any source.
            sources=ModelSource(hf=name),
            dim=dim,
            model_file=model_file,
        )


def _uses_mean_pooling(directory: Path) -> bool:
    """A sentence-transformers directory says how it pools; mean pooling is the default."""
    pooling_config = directory / "1_Pooling" / "config.json"
    if not pooling_config.is_file():
        return True
    config = json.loads(pooling_config.read_text(encoding="utf-8"))
    if config.get("pooling_mode_mean_tokens"):
        return True
    return not config.get("pooling_mode_cls_token")


def find_onnx_file(directory: Path) -> str | None:
    """The model file of a model directory, relative to it, or None."""
    for candidate in _ONNX_CANDIDATES:
        if (directory / candidate).is_file():
            return candidate
    return None


#: How many token counts a :class:`TokenCounter` remembers (the texts of the last stores),
#: and of texts how long at most (a store's content is at most 8,000 characters by default).
REMEMBERED_COUNTS: Final = 64
REMEMBERED_CHARS: Final = 8192


class TokenCounter:
    """A model's tokenizer for counting, and its window; needs no ONNX session, so a store is
    validated before (and without) the model loading. ``source`` None: unknown tokenizer."""

    def __init__(self, source: Path | None) -> None:
        self.source = source
        self._tokenizer: Tokenizer | None = None
        self._surely_fits = -1  # set when the tokenizer loads (see :func:`_surely_fitting_length`)
        self._counts: dict[str, int] = {}  # the last texts counted, oldest first
        self._lock = threading.Lock()

    @functools.cached_property
    def window(self) -> int:
        """How many tokens the model reads; the rest of a longer text is cut off.

        Read once: the vector sink asks for it for every long text it splits.
        """
        config = self.source / "tokenizer_config.json" if self.source else None
        if config is not None and config.is_file():
            value = json.loads(config.read_text()).get("model_max_length")
            if isinstance(value, int) and 0 < value < 100_000:
                return value
        return 512 if self.source is None else MAX_TOKENS

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` including the special ones, untruncated; None if unknown.

        The last few counts are remembered: a store's text is counted by the window check,
        then asked about again by the vector projection (whether to embed it in parts)."""
        known = self._counts.get(text)
        if known is not None:
            return known
        tokenizer = self._loaded()
        if tokenizer is None:
            return None
        count = len(tokenizer.encode(text).ids)
        if len(text) > REMEMBERED_CHARS:
            return count
        with self._lock:
            self._counts[text] = count
            while len(self._counts) > REMEMBERED_COUNTS:
                del self._counts[next(iter(self._counts))]  # the oldest
        return count

    def _loaded(self) -> Tokenizer | None:
        with self._lock:
            if self._tokenizer is None:
                path = self.source / "tokenizer.json" if self.source else None
                if path is None or not path.is_file():
                    return None
                from tokenizers import Tokenizer as _Tokenizer

                counter = _Tokenizer.from_file(str(path))
                counter.no_truncation()
                counter.no_padding()
                self._surely_fits = _surely_fitting_length(counter, self.window)
                self._tokenizer = counter
            return self._tokenizer

    def fits(self, text: str) -> bool:
        """Whether the model reads all of ``text`` (unknown tokenizers: assume it does).

        An ASCII text with no more characters other than spaces than
        :func:`_surely_fitting_length` fits without being tokenised (most memories; a replay
        asks for every one)."""
        count = self.count_unless_fits(text)
        return count is None or count <= self.window

    def count_unless_fits(self, text: str) -> int | None:
        """:meth:`count_tokens` for a text that may be longer than the window; None, without
        tokenising, for one that surely fits (see :meth:`fits`), and for unknown tokenizers.

        What a store's window check needs: the model tokenises the text again to embed it,
        so a short memory is tokenised once, not twice."""
        if self._surely_fits < 0:
            self._loaded()  # sets the bound, for a tokenizer whose kind has one
        if text.isascii() and len(text) - text.count(" ") <= self._surely_fits:
            return None
        return self.count_tokens(text)


def _surely_fitting_length(tokenizer: Tokenizer, window: int) -> int:
    """How many ASCII characters besides spaces always fit ``window``; -1: unknown.

    Known for a BERT-style WordPiece tokenizer only (the bundled model's): its normalizer
    maps ASCII to at most as many characters (lowercasing, dropping control characters), its
    pre-tokenizer drops white space and splits on punctuation, and WordPiece cuts every word
    into pieces of at least one character or a single ``[UNK]``. So an ASCII text gives at
    most one token per character other than white space, plus the post-processor's special
    tokens. Other kinds (BPE, Unigram: a prefix mark per word, byte fallback) are always
    tokenised.
    """
    from tokenizers import models, normalizers, pre_tokenizers

    if not isinstance(tokenizer.model, models.WordPiece):
        return -1
    if not isinstance(tokenizer.normalizer, normalizers.BertNormalizer | None):
        return -1
    if not isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer):
        return -1
    processor = tokenizer.post_processor
    specials = 0 if processor is None else processor.num_special_tokens_to_add(False)
    return window - specials


#: Which code runs the model: ferrex's own batching over ONNX Runtime (the default for every
#: local model), or fastembed's ``embed`` (downloaded models; and the previous path, kept for
#: ``tools/bench_embed.py`` and the test that the two give the same vectors).
Runner = Literal["direct", "fastembed"]


class LoadedModel:
    """A loaded dense model: its identity, where its files are, and a batch embed function."""

    def __init__(
        self,
        identity: ModelIdentity,
        source: Path | None,
        engine: OnnxEncoder | TextEmbedding | RemoteEncoder,
        load_seconds: float,
    ) -> None:
        self.identity = identity
        self.source = source
        self.load_seconds = load_seconds
        self.counter = TokenCounter(source)
        self._engine = engine

    @property
    def runner(self) -> Runner:
        from ferrex.models.encoder import OnnxEncoder

        return "direct" if isinstance(self._engine, OnnxEncoder) else "fastembed"

    @property
    def session_settings(self) -> SessionSettings | None:
        """How the ONNX session runs (None: fastembed's defaults)."""
        from ferrex.models.encoder import OnnxEncoder

        return self._engine.settings if isinstance(self._engine, OnnxEncoder) else None

    @property
    def window(self) -> int:
        return self.counter.window

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` including the special ones, untruncated; None if unknown."""
        return self.counter.count_tokens(text)

    def fits(self, text: str) -> bool:
        """Whether the model reads all of ``text`` (unknown tokenizers: assume it does)."""
        return self.counter.fits(text)

    def run(
        self, texts: Sequence[str], batch_size: int, *, query: bool = False
    ) -> NDArray[np.float32]:
        """Embed ``texts`` with the model, no cache: an ``(n, dim)`` float32 array, rows of
        unit length, in the order of ``texts``. ``query``: they are recall queries (only a
        server told so through ``input_type`` embeds them otherwise)."""
        if not texts:
            return np.empty((0, self.identity.dim), dtype=np.float32)
        return _embed_rows(self._engine, texts, batch_size, query)

    @property
    def tells_queries(self) -> bool:
        """Whether queries are embedded otherwise than passages by :meth:`run` itself (a
        server told through its ``input_type`` field)."""
        from ferrex.models.remote import RemoteEncoder

        engine = self._engine
        return isinstance(engine, RemoteEncoder) and bool(engine.settings.input_type)


def _embed_rows(
    engine: OnnxEncoder | TextEmbedding | RemoteEncoder,
    texts: Sequence[str],
    batch_size: int,
    query: bool = False,
) -> NDArray[np.float32]:
    from ferrex.models.encoder import MAX_BATCH, OnnxEncoder
    from ferrex.models.remote import PASSAGE, QUERY, RemoteEncoder

    if isinstance(engine, OnnxEncoder):  # planned by tokens: the encoder's own cap at most
        return engine.run(texts, max_batch=min(batch_size, MAX_BATCH))
    if isinstance(engine, RemoteEncoder):
        return engine.run(texts, batch_size, QUERY if query else PASSAGE)
    matrix = np.asarray(list(engine.embed(list(texts), batch_size=batch_size)), np.float32)
    # fastembed normalises already; this keeps the invariant for any custom directory too.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: NDArray[np.float32] = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def local_source(choice: EmbeddingChoice, *, shared: Path | None = None) -> Path | None:
    """The directory a local model's files are in, without loading it (the default model is
    assembled there first if needed); None for a model that is downloaded."""
    match choice.kind:
        case "bundled":
            shared = shared_models_dir(os.environ) if shared is None else shared
            return assemble_bundled_model(shared / BUNDLED_DIR_NAME)
        case "directory":
            assert choice.directory is not None
            return choice.directory.expanduser().resolve()
        case "download" | "remote":
            return None
        case _:
            assert_never(choice.kind)


def load_model(
    choice: EmbeddingChoice,
    home: Path,
    *,
    allow_download: bool = False,
    threads: int | None = None,
    shared: Path | None = None,
    runner: Runner = "direct",
    remote: RemoteSettings | None = None,
    circuit: Circuit | None = None,
) -> LoadedModel:
    """Load the chosen dense model, or raise :class:`ModelUnavailable` saying what to do.

    The default model is assembled in ``shared`` (the user's :func:`shared_models_dir` unless
    given), once for every data directory; downloads go to ``home``'s own models directory.
    Local models run on ferrex's own :class:`~ferrex.models.encoder.OnnxEncoder` unless
    ``runner`` asks for fastembed; downloaded ones always run on fastembed. A model on an
    embeddings server (``remote``: its settings) is probed with one call, which measures its
    identity; that call's errors (:class:`~ferrex.models.remote.ServerDown` among them)
    are raised as they are, and ``circuit`` (the caller's, kept across loads) remembers a
    server that could not be reached.
    """
    started = time.perf_counter()
    if choice.kind == "remote":
        from ferrex.models.remote import RemoteEncoder, RemoteSettings

        encoder = RemoteEncoder(
            choice.model_name.removeprefix(REMOTE_PREFIX),
            remote or RemoteSettings(),
            os.environ,
            circuit,
        )
        remote_identity = encoder.probe(models_dir(home))
        loaded = LoadedModel(remote_identity, None, encoder, time.perf_counter() - started)
        log.info("probed embedding model %s at %s", remote_identity.key, encoder.url)
        return loaded
    fastembed_cache = models_dir(home) / "fastembed"
    offline = not allow_download
    source: Path | None
    engine: OnnxEncoder | TextEmbedding
    match choice.kind:
        case "bundled":
            source = local_source(choice, shared=shared)
            assert source is not None
            registered = BUNDLED_FASTEMBED_NAME
            file_sha256 = BUNDLED_FILES["model.onnx"]
            variant = bundled_variant(choice, runner)
            engine = _open_local(
                registered, source, "model.onnx", True, fastembed_cache, threads, choice, runner,
                optimized=_optimized_dir(shared), model_sha256=file_sha256, variant=variant,
            )  # fmt: skip
        case "directory":
            source = local_source(choice)
            assert source is not None
            model_file = _check_directory(source, choice)
            file_sha256 = sha256_file(source / model_file)
            variant = ""
            engine = _open_local(
                f"ferrex-dir/{file_sha256[:16]}",
                source,
                model_file,
                _uses_mean_pooling(source),
                fastembed_cache,
                threads,
                choice,
                runner,
                # fastembed wants a dimension up front; the real one is measured below.
                dim=choice.expected_dim or 0,
                optimized=_optimized_dir(shared),
                model_sha256=file_sha256,
            )
        case "download":
            engine = _open_download(choice, fastembed_cache, offline, threads)
            source, file_sha256 = downloaded_model_file(engine.model)
            variant = ""
        case "remote":  # returned above
            raise AssertionError("unreachable")
        case _:
            assert_never(choice.kind)
    try:
        probe = _embed_rows(engine, [_PROBE_TEXT], batch_size=1)
    except Exception as exc:
        raise ModelUnavailable(
            f"embedding model {choice.model_name} loaded but could not embed: {exc}",
            hint="check that the directory holds a text embedding model in ONNX format",
        ) from exc
    dim = int(probe.shape[1])
    if choice.expected_dim is not None and dim != choice.expected_dim:
        raise ModelUnavailable(
            f"embedding model {choice.model_name} produced {dim} dimensions, "
            f"expected {choice.expected_dim}",
        )
    identity = ModelIdentity(choice.model_name, dim, file_sha256, variant)
    loaded = LoadedModel(identity, source, engine, time.perf_counter() - started)
    log.info("loaded embedding model %s in %.2fs", loaded.identity.key, loaded.load_seconds)
    return loaded


def bundled_variant(choice: EmbeddingChoice, runner: Runner) -> str:
    """The arithmetic the default model runs with: what ``choice`` asks
    (:data:`~ferrex.models.identity.INT8_ACTIVATIONS` for ``small``), on ferrex's own
    runner; fastembed runs the file as it is."""
    return choice.variant if runner == "direct" else ""


#: Under the shared models directory: local models' fully optimised ONNX graphs
#: (:func:`ferrex.models.encoder.optimized_path`), built at a model's first load.
OPTIMIZED_DIR_NAME: Final = "optimized"


def _optimized_dir(shared: Path | None) -> Path:
    return (shared_models_dir(os.environ) if shared is None else shared) / OPTIMIZED_DIR_NAME


def _check_directory(directory: Path, choice: EmbeddingChoice) -> str:
    hint = (
        "a model directory holds model.onnx (or onnx/model.onnx), tokenizer.json and "
        f"tokenizer_config.json; set {MODEL_ENV} to such a directory, or to small"
    )
    if not directory.is_dir():
        raise ModelUnavailable(
            f"embedding model directory {directory} (from {choice.origin}) does not exist",
            hint=hint,
        )
    model_file = find_onnx_file(directory)
    if model_file is None:
        raise ModelUnavailable(f"no ONNX model file in {directory}", hint=hint)
    for required in ("tokenizer.json", "tokenizer_config.json"):
        if not (directory / required).is_file():
            raise ModelUnavailable(f"{required} is missing from {directory}", hint=hint)
    return model_file


def _open_local(
    registered: str,
    directory: Path,
    model_file: str,
    mean_pooling: bool,
    fastembed_cache: Path,
    threads: int | None,
    choice: EmbeddingChoice,
    runner: Runner,
    *,
    dim: int = BUNDLED_DIM,
    optimized: Path | None = None,
    model_sha256: str | None = None,
    variant: str = "",
) -> OnnxEncoder | TextEmbedding:
    with hub_offline(True):
        try:
            if runner == "direct":
                from ferrex.models.encoder import OnnxEncoder, SessionSettings, optimized_path

                return OnnxEncoder(
                    directory,
                    model_file,
                    mean_pooling=mean_pooling,
                    settings=SessionSettings.for_machine(threads),
                    optimized=(
                        optimized_path(optimized, model_sha256, variant)
                        if optimized is not None and model_sha256 is not None
                        else None
                    ),
                    int8_activations=variant == INT8_ACTIVATIONS,
                )
            from fastembed import TextEmbedding

            _register_dense(registered, model_file=model_file, dim=dim, mean_pooling=mean_pooling)
            return TextEmbedding(
                registered,
                cache_dir=str(fastembed_cache),
                threads=threads,
                specific_model_path=str(directory),
                local_files_only=True,
            )
        except Exception as exc:
            raise ModelUnavailable(
                f"embedding model {choice.model_name} in {directory} could not be loaded: {exc}",
                hint=f"check the files in {directory}",
            ) from exc


def _open_download(
    choice: EmbeddingChoice, fastembed_cache: Path, offline: bool, threads: int | None
) -> TextEmbedding:
    with hub_offline(offline):
        from fastembed import TextEmbedding

        try:
            return TextEmbedding(
                choice.model_name,
                cache_dir=str(fastembed_cache),
                threads=threads,
                local_files_only=offline,
            )
        except Exception as exc:
            if offline:
                raise ModelUnavailable(
                    f"embedding model {choice.model_name} (tier {choice.setting}, from "
                    f"{choice.origin}) is not in {fastembed_cache} and downloads are off",
                    hint=(
                        f"on a machine with internet run `{DOWNLOAD_ENV}=1 "
                        f"{MODEL_ENV}={choice.setting} ferrex doctor` and copy its "
                        f"models/fastembed directory to {fastembed_cache}; or set {DOWNLOAD_ENV}=1 "
                        f"here if this machine can reach huggingface.co; or set {MODEL_ENV} to a "
                        "model directory; or use small, which ships with ferrex"
                    ),
                ) from exc
            raise ModelUnavailable(
                f"embedding model {choice.model_name} could not be downloaded into "
                f"{fastembed_cache}: {exc}",
                hint=f"check the network, or set {MODEL_ENV}=small to use the bundled model",
            ) from exc


def downloaded_model_file(inner: object) -> tuple[Path | None, str]:
    """Where fastembed put a downloaded model, and the SHA-256 of its ONNX file.

    fastembed keeps both on its inner model object (``TextEmbedding.model``: ``_model_dir``,
    ``model_description``), not in its public API; without them the file hash is "unknown".
    """
    model_dir = getattr(inner, "_model_dir", None)
    description = getattr(inner, "model_description", None)
    model_file = getattr(description, "model_file", None)
    if isinstance(model_dir, Path) and isinstance(model_file, str):
        path = model_dir / model_file
        if path.is_file():
            return model_dir, sha256_file(path)
    return None, "unknown"
