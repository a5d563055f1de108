"""Cross-encoder reranking of recall's top candidates: optional, and never fatal.

A cross-encoder reads the query and one candidate together and scores the pair; recall uses
it to reorder its best :data:`DEFAULT_POOL` candidates after fusion. Configured with
``FERREX_RERANKER`` (or the ``setting`` argument of :func:`choose_reranker`):

- ``none`` (the default; ``off`` is the same): no reranking.
- ``ms-marco-MiniLM`` (``Xenova/ms-marco-MiniLM-L-6-v2``, small and fast) or
  ``bge-reranker-base`` (``BAAI/bge-reranker-base``, larger, better): fastembed built-ins,
  downloaded into ``<home>/models/fastembed/`` when downloads are allowed
  (``FERREX_ALLOW_DOWNLOAD=1``), looked up there only otherwise.
- ``late``: late interaction (MaxSim over token vectors) with the bundled dense model, no
  download (:mod:`ferrex.models.late`); its score is blended with the fused one
  (``recall.late_weight``).
- the path of a directory holding an ONNX cross-encoder (``model.onnx`` or
  ``onnx/model.onnx``, whose first output is ``(batch, n)`` logits, column 0 the relevance)
  with ``tokenizer.json`` and ``tokenizer_config.json``.

The default is ``none`` because no package ships a reranker's weights: a fresh install has
none, and a default that is always "unavailable" would only be noise. A user who asks for a
reranker gets it, or, when its files are missing, a :class:`RerankStage` whose status says
``unavailable: <reason>`` (shown by ``ferrex doctor`` and ``stats``) while recall goes on
with the fused order. Loading never raises for a missing model.

Importing this module imports neither fastembed nor onnxruntime.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from ferrex.errors import UsageError
from ferrex.models.choice import DOWNLOAD_ENV
from ferrex.models.identity import models_dir, sha256_file
from ferrex.models.loading import downloaded_model_file, find_onnx_file, hub_offline

if TYPE_CHECKING:
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    from ferrex.models.late import LateInteraction

RERANKER_ENV: Final = "FERREX_RERANKER"
DEFAULT_POOL: Final = 20
DEFAULT_RERANKER: Final = "none"

#: fastembed built-in cross-encoders by the names ferrex accepts (any case).
RERANKERS: Final[Mapping[str, str]] = {
    "ms-marco-minilm": "Xenova/ms-marco-MiniLM-L-6-v2",
    "bge-reranker-base": "BAAI/bge-reranker-base",
}
_OFF: Final = frozenset({"none", "off"})


@dataclass(frozen=True, slots=True)
class RerankerChoice:
    """Which reranker is configured, and where that setting came from."""

    kind: Literal["off", "download", "directory", "late"]
    setting: str
    origin: str
    model_name: str | None = None
    directory: Path | None = None


def choose_reranker(setting: str | None, env: Mapping[str, str]) -> RerankerChoice:
    """The reranker for ``setting``, else ``env[FERREX_RERANKER]``, else ``none``.

    Pure: reads only its arguments. A value with a path separator or starting with ``~`` or
    ``.`` is a model directory; an unknown name is a :class:`UsageError`.
    """
    if setting is not None and setting.strip():
        value, origin = setting.strip(), "argument"
    elif env.get(RERANKER_ENV, "").strip():
        value, origin = env[RERANKER_ENV].strip(), RERANKER_ENV
    else:
        value, origin = DEFAULT_RERANKER, "default"

    name = value.lower()
    if name in _OFF:
        return RerankerChoice("off", value, origin)
    if name in RERANKERS:
        return RerankerChoice("download", value, origin, RERANKERS[name])
    if name == "late":
        return RerankerChoice("late", value, origin, "late")
    if "/" in value or os.sep in value or value.startswith(("~", ".")):
        directory = Path(value)
        return RerankerChoice("directory", value, origin, directory.name, directory)
    raise UsageError(
        f"unknown reranker {value!r} (from {origin})",
        hint="use none, late, ms-marco-MiniLM, bge-reranker-base, or the path of a model directory",
    )


def rerank_order(scores: Sequence[float]) -> list[int]:
    """Positions ordered by descending score; equal scores keep their incoming order."""
    return sorted(range(len(scores)), key=lambda position: (-scores[position], position))


@dataclass(frozen=True)
class CrossEncoder:
    """A loaded cross-encoder: scores (query, document) pairs, higher is more relevant."""

    name: str
    source: Path | None
    file_sha256: str
    encoder: TextCrossEncoder = field(repr=False)
    load_seconds: float

    def rerank(self, query: str, docs: Sequence[str]) -> list[float]:
        """One relevance score per document, in the order given."""
        if not docs:
            return []
        return [float(score) for score in self.encoder.rerank(query, list(docs))]


@dataclass(frozen=True, slots=True)
class RerankStage:
    """The rerank step of recall as configured: ready, off, or unavailable with a reason."""

    choice: RerankerChoice
    encoder: CrossEncoder | LateInteraction | None = None
    reason: str | None = None

    @property
    def state(self) -> Literal["off", "ready", "unavailable"]:
        if self.encoder is not None:
            return "ready"
        return "off" if self.choice.kind == "off" else "unavailable"

    @property
    def status(self) -> str:
        """``ready``, ``off``, or ``unavailable: <reason>``, as doctor and stats show it."""
        if self.state == "unavailable":
            return f"unavailable: {self.reason}"
        return self.state

    def rerank_top(
        self,
        query: str,
        docs: Sequence[str],
        pool: int = DEFAULT_POOL,
        fused: Sequence[float] | None = None,
    ) -> list[tuple[int, float | None]]:
        """The candidates' new order as ``(incoming position, rerank score)`` pairs.

        The first ``pool`` candidates are scored and reordered; the rest keep their places
        after them with no score. Without a ready encoder the order is unchanged. With
        ``fused`` (the candidates' fused scores) a late-interaction stage blends its score
        with them (:func:`ferrex.models.late.blend`); a cross-encoder's replaces them.
        """
        if self.encoder is None or pool <= 0:
            return [(position, None) for position in range(len(docs))]
        head = list(docs[:pool])
        scores = self.encoder.rerank(query, head)
        weight = getattr(self.encoder, "weight", None)
        if weight is not None and fused is not None:
            from ferrex.models.late import blend

            scores = [blend(fused[i], score, weight) for i, score in enumerate(scores)]
        reordered: list[tuple[int, float | None]] = [
            (position, scores[position]) for position in rerank_order(scores)
        ]
        reordered.extend((position, None) for position in range(len(head), len(docs)))
        return reordered


_REGISTRATION_LOCK = threading.Lock()


def load_reranker(
    choice: RerankerChoice,
    home: Path,
    *,
    allow_download: bool = False,
    threads: int | None = None,
    late_weight: float | None = None,
) -> RerankStage:
    """Load the chosen reranker; a missing or broken one gives an unavailable stage."""
    if choice.kind == "off":
        return RerankStage(choice)
    if choice.kind == "late":
        from ferrex.models.late import DEFAULT_WEIGHT, load_late

        weight = DEFAULT_WEIGHT if late_weight is None else late_weight
        if not 0.0 <= weight <= 1.0:
            raise UsageError(
                f"recall.late_weight is {weight}", hint="set it to a number from 0 to 1"
            )
        try:
            return RerankStage(choice, load_late(weight, threads=threads))
        except Exception as exc:
            return RerankStage(choice, reason=f"late interaction could not be loaded: {exc}")
    started = time.perf_counter()
    fastembed_cache = models_dir(home) / "fastembed"
    offline = not allow_download
    # The whole load is the edge where fastembed's and onnxruntime's errors become a reason.
    try:
        if choice.kind == "directory":
            assert choice.directory is not None
            directory = choice.directory.expanduser().resolve()
            problem = _directory_problem(directory)
            model_file = find_onnx_file(directory)
            if problem is not None or model_file is None:
                return RerankStage(choice, reason=problem)
            file_sha256 = sha256_file(directory / model_file)
            registered = f"ferrex-reranker-dir/{file_sha256[:16]}"
            _register_cross_encoder(registered, model_file)
            encoder = _open(registered, fastembed_cache, threads, True, directory)
            source: Path | None = directory
        else:
            assert choice.model_name is not None
            encoder = _open(choice.model_name, fastembed_cache, threads, offline, None)
            source, file_sha256 = downloaded_model_file(encoder.model)
    except Exception as exc:
        return RerankStage(choice, reason=_reason(choice, exc, fastembed_cache, offline))
    name = choice.model_name or choice.setting
    loaded = CrossEncoder(name, source, file_sha256, encoder, time.perf_counter() - started)
    return RerankStage(choice, loaded)


def _directory_problem(directory: Path) -> str | None:
    if not directory.is_dir():
        return f"reranker directory {directory} does not exist"
    if find_onnx_file(directory) is None:
        return f"no ONNX model file (model.onnx or onnx/model.onnx) in {directory}"
    for required in ("tokenizer.json", "tokenizer_config.json"):
        if not (directory / required).is_file():
            return f"{required} is missing from {directory}"
    return None


def _reason(choice: RerankerChoice, exc: Exception, cache: Path, offline: bool) -> str:
    if choice.kind == "download" and offline:
        return (
            f"{choice.model_name} is not in {cache} and downloads are off "
            f"(set {DOWNLOAD_ENV}=1 on a machine with internet, or point {RERANKER_ENV} "
            "to a model directory)"
        )
    return f"{choice.model_name or choice.setting} could not be loaded: {exc}"


def _register_cross_encoder(name: str, model_file: str) -> None:
    """Make a local ONNX cross-encoder known to fastembed under ``name`` (once per process)."""
    from fastembed.common.model_description import ModelSource
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    with _REGISTRATION_LOCK:
        known = {m["model"].lower() for m in TextCrossEncoder.list_supported_models()}
        if name.lower() in known:
            return
        # The source is never contacted: the model is loaded with specific_model_path.
        TextCrossEncoder.add_custom_model(name, sources=ModelSource(hf=name), model_file=model_file)


def _open(
    model_name: str,
    fastembed_cache: Path,
    threads: int | None,
    offline: bool,
    directory: Path | None,
) -> TextCrossEncoder:
    with hub_offline(offline):
        from fastembed.rerank.cross_encoder import TextCrossEncoder

        if directory is not None:
            return TextCrossEncoder(
                model_name,
                cache_dir=str(fastembed_cache),
                threads=threads,
                specific_model_path=str(directory),
                local_files_only=True,
            )
        return TextCrossEncoder(
            model_name,
            cache_dir=str(fastembed_cache),
            threads=threads,
            local_files_only=offline,
        )
