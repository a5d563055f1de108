"""Running a local ONNX text encoder directly: tokenize once, batch by token length, pool.

fastembed (the previous path, still used for downloaded models) pads each batch of texts in the
order given and runs ONNX Runtime with its default threads (spinning workers, which steal a
busy machine's cores from everything else). Here texts are tokenized in one batched call,
sorted by their token count, cut into batches whose padded size stays under a token budget
(short texts in big batches, long ones in small), padded to each batch's longest, and the
outputs put back in input order. The session runs one inter-op thread and as many intra-op
threads as the process may use cores, without spinning, and the batches of one call run on as
many threads at once (:meth:`SessionSettings.for_machine`); its memory arena is shrunk back after a
batch of long texts, so their activations are not kept for the process's life.

The tokenizer is read from the model directory as fastembed reads it (the same truncation
window, special tokens and pad token), so the token ids, and therefore the vectors, are those
of the previous path; the pooling (mean over the attention mask, or the first token) and the
L2 normalisation are computed in float32.

Importing this module imports neither onnxruntime nor tokenizers; using it never imports
fastembed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

#: Padded tokens (batch rows times the batch's longest text) per ONNX call: small enough that
#: a batch of long texts stays within about 200 MB of activations (attention's scores grow
#: with rows x length squared).
TOKEN_BUDGET: Final = 2048
#: The most texts in one ONNX call, however short. Short texts sorted by length make more,
#: narrower batches (less padding, activations that stay in cache): 2,000 short notes cost
#: some 5-10% less model CPU in batches of 16 than of 64, with the same vectors bit for bit
#: (a text's vector does not depend on its batch).
MAX_BATCH: Final = 16
#: A batch whose longest text has more tokens than this gives its arena memory back after.
SHRINK_ABOVE: Final = 64


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class SessionSettings:
    """How the ONNX session runs: what :func:`open_session` sets, and what ``stats`` shows."""

    intra_op_threads: int
    inter_op_threads: int = 1
    spinning: bool = False
    memory_arena: bool = True
    memory_pattern: bool = False
    """ONNX Runtime's memory patterns: a plan of every intermediate tensor's place, made and
    kept per input shape, with one block sized for the whole run taken from the arena. Texts
    come in many lengths, so the plans and blocks pile up (about 70 MB after a few hundred
    batches of 32 tokens) for no gain in speed on this model: off."""
    shrink_arena: bool = True
    """Give the arena's memory back after a run of long texts (see :data:`SHRINK_ABOVE`): such
    a batch would otherwise keep hundreds of MB of activations for the life of the process.
    Short batches keep theirs: giving it back and taking it again costs them a fifth of their
    speed."""

    callers: int = 1
    """How many threads run the planned batches of one :meth:`OnnxEncoder.run` at once, each
    batch one session run in its thread (ONNX Runtime lets go of the GIL while it runs, and
    one session serves concurrent runs)."""

    @classmethod
    def for_machine(cls, threads: int | None = None) -> SessionSettings:
        """``threads`` intra-op threads, or one per usable core (at least one), and as many
        threads running a call's batches: a single text's operators are split over the
        cores (a store waits for it), while a batch of 16 short texts is small work to split
        at each of its operators (every split wakes the other thread and waits for it), so
        the batches of a call also run side by side, to keep free cores on the model."""
        cores = max(1, threads if threads else usable_cores())
        return cls(intra_op_threads=cores, callers=cores)


def open_session(
    model_path: Path,
    settings: SessionSettings,
    *,
    optimized: Path | None = None,
    int8_activations: bool = False,
) -> ort.InferenceSession:
    """An ONNX Runtime CPU session over ``model_path`` with ``settings``, fully optimised.

    ``int8_activations``: the matrix products with int8 weights run on 8-bit activations
    (:func:`ferrex.models.graph.int8_matrix_products`: other vectors, a model identity of
    their own); ``optimized`` must then be a path for that graph (:func:`optimized_path` with
    the variant).

    ``optimized``: where the fully optimised graph is kept (see :func:`optimized_path`). If
    that file is there it is loaded as it is, without optimising again; if it is missing, or
    cannot be loaded (a torn or foreign file), the model is optimised and the result saved
    there for the next start, best effort (a cache that cannot be written only costs the
    optimisation at every start)."""
    import onnxruntime as ort

    if optimized is not None and optimized.is_file():
        try:
            return _session(ort, optimized, settings, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
        except Exception as exc:  # not loadable: build it again below
            log.warning(
                "the optimised model %s cannot be loaded (%s); rebuilding it", optimized, exc
            )
            with contextlib.suppress(OSError):
                optimized.unlink()
    if optimized is None:
        model = _rewritten(model_path, int8_activations)
        return _session(
            ort, model, settings, ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
            disabled=_disabled(int8_activations),
        )  # fmt: skip
    return _build_optimized(ort, model_path, settings, optimized, int8_activations)


def _rewritten(model_path: Path, int8_activations: bool) -> bytes:
    """The model's graph as it is optimised: int8 embedding tables kept int8 (see
    :mod:`ferrex.models.graph`; the same vectors, some 35 MB less memory for the bundled
    model), and with ``int8_activations`` the int8 weights' matrix products on 8-bit
    activations, each self-attention as one ``Attention`` and each GELU as one ``Gelu``."""
    from ferrex.models.graph import (
        fused_attention,
        fused_gelu,
        int8_embedding_lookups,
        int8_matrix_products,
    )

    model, _ = int8_embedding_lookups(model_path.read_bytes())
    if int8_activations:
        model, _ = int8_matrix_products(model)
        model, _ = fused_attention(model)
        model, _ = fused_gelu(model)
    return model


#: ONNX Runtime optimisers the 8-bit variant is built without. Its fused
#: ``SkipLayerNormalization`` (the residual sum and the layer norm in one operator) took
#: longer than the two operators it replaces: one short text 5.4 against 5.1 ms, a batch of
#: 16 1.56 against 1.47 s for 400 texts (a 2-core AMD EPYC, ONNX Runtime 1.32).
_SLOWER_FUSIONS: Final = ("SkipLayerNormFusion",)


def _disabled(int8_activations: bool) -> tuple[str, ...]:
    return _SLOWER_FUSIONS if int8_activations else ()


def _session(
    ort: Any,
    model: Path | bytes,
    settings: SessionSettings,
    level: Any,
    save_to: Path | None = None,
    disabled: Sequence[str] = (),
) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = settings.intra_op_threads
    options.inter_op_num_threads = settings.inter_op_threads
    options.enable_cpu_mem_arena = settings.memory_arena
    options.enable_mem_pattern = settings.memory_pattern
    spin = "1" if settings.spinning else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    options.add_session_config_entry("session.inter_op.allow_spinning", spin)
    # Errors only: ONNX Runtime's warnings are notes on the graph for whoever made it (a
    # saved graph suits only this machine, which its file's name, keyed by the CPU, already
    # answers; initializers the rewrite's fusions left unused are dropped), and a server
    # that optimises in memory at every start (its cache not writable) would print them
    # each time. Its errors still raise.
    options.log_severity_level = 3
    if save_to is not None:
        options.optimized_model_filepath = str(save_to)
    source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(
        source, sess_options=options, providers=["CPUExecutionProvider"],
        disabled_optimizers=list(disabled) or None,
    )  # fmt: skip


def _build_optimized(
    ort: Any,
    model_path: Path,
    settings: SessionSettings,
    optimized: Path,
    int8_activations: bool,
) -> ort.InferenceSession:
    """Optimise ``model_path`` fully, saving the graph to ``optimized`` (written under a
    temporary name and renamed, so a reader never meets half a file); older optimised files
    of the same model and variant (another ONNX Runtime, another CPU) are removed."""
    level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = _rewritten(model_path, int8_activations)
    disabled = _disabled(int8_activations)
    try:
        optimized.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = optimized.with_name(f".{optimized.name}.{os.getpid()}.tmp")
    except OSError as exc:
        log.warning("cannot keep the optimised model in %s: %s", optimized.parent, exc)
        return _session(ort, model, settings, level, disabled=disabled)
    try:
        session = _session(ort, model, settings, level, save_to=temporary, disabled=disabled)
        os.replace(temporary, optimized)
    except Exception as exc:  # ONNX Runtime's own error type when it cannot write the file
        log.warning("cannot keep the optimised model in %s: %s", optimized.parent, exc)
        with contextlib.suppress(OSError):
            temporary.unlink()
        return _session(ort, model, settings, level, disabled=disabled)
    prefix = optimized.name.split("-ort", 1)[0] + "-ort"  # the same model and variant
    for other in optimized.parent.glob(f"{prefix}*.onnx"):
        if other != optimized:
            with contextlib.suppress(OSError):
                other.unlink()
    return session


def optimized_path(directory: Path, model_sha256: str, variant: str = "") -> Path:
    """Where the fully optimised graph of the model whose file hashes to ``model_sha256`` is
    kept in ``directory``: one file per model, variant of its arithmetic (``variant``, see
    :attr:`~ferrex.models.identity.ModelIdentity.variant`), ONNX Runtime version and CPU (a
    graph optimised at the highest level may use kernels of this CPU's instruction set) and
    version of ferrex's own rewrite of the graph, so a change of any is a new file, built at
    the next start."""
    import onnxruntime as ort

    from ferrex.models.graph import REWRITE_VERSION

    version = re.sub(r"[^0-9A-Za-z.]+", "_", ort.__version__)
    kind = f"-{variant}" if variant else ""
    name = f"{model_sha256[:24]}{kind}-ort{version}-{cpu_key()}-g{REWRITE_VERSION}.onnx"
    return directory / name


def cpu_key() -> str:
    """A short digest of the CPU's model name and instruction-set flags (Linux; elsewhere
    the machine type)."""
    import hashlib
    import platform

    seen: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for row in cpuinfo:
                name, _, value = row.partition(":")
                name = name.strip()
                if name in ("model name", "flags", "Features") and name not in seen:
                    seen[name] = value.strip()
    except OSError:
        pass
    described = "|".join(f"{k}={v}" for k, v in sorted(seen.items())) or platform.machine()
    return hashlib.sha256(described.encode()).hexdigest()[:12]


def run_options(settings: SessionSettings) -> ort.RunOptions:
    """The options of a run of long texts: shrink the CPU arena back at its end if asked."""
    import onnxruntime as ort

    options = ort.RunOptions()
    if settings.memory_arena and settings.shrink_arena:
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def load_tokenizer(directory: Path) -> tuple[Tokenizer, int]:
    """The model's tokenizer, truncating as fastembed's does, without padding; and the pad
    token's id (padding is done per planned batch).

    As fastembed reads a model directory: the window is the smaller of ``model_max_length``
    and ``max_length`` in ``tokenizer_config.json``; the special tokens of
    ``special_tokens_map.json`` are added; the pad id comes from ``tokenizer.json``'s padding,
    else ``config.json``'s ``pad_token_id``, else the pad token's id. (fastembed itself is not
    imported: it costs a server some 35 MB.)
    """
    import json

    from tokenizers import AddedToken
    from tokenizers import Tokenizer as _Tokenizer

    def read(name: str) -> dict[str, Any]:
        path = directory / name
        loaded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        return loaded if isinstance(loaded, dict) else {}

    config, model_config = read("tokenizer_config.json"), read("config.json")
    tokenizer = _Tokenizer.from_file(str(directory / "tokenizer.json"))
    limits = [
        value
        for value in (config.get("model_max_length"), config.get("max_length"))
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000
    ]
    if not limits:
        raise ValueError(f"tokenizer_config.json in {directory} gives no model_max_length")
    direction = config.get("truncation_side") or (tokenizer.truncation or {}).get("direction")
    tokenizer.enable_truncation(max_length=min(limits), direction=direction or "right")
    for token in _special_tokens(read("special_tokens_map.json")):
        if isinstance(token, str):
            tokenizer.add_special_tokens([token])
        elif isinstance(token, dict):
            tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_id = padding.get("pad_id", model_config.get("pad_token_id"))
    if pad_id is None:
        pad_token = padding.get("pad_token") or config.get("pad_token")
        pad_id = tokenizer.token_to_id(pad_token) if isinstance(pad_token, str) else None
    if not isinstance(pad_id, int):
        raise ValueError(f"the tokenizer in {directory} names no pad token")
    tokenizer.no_padding()
    return tokenizer, pad_id


def _special_tokens(tokens_map: dict[str, Any]) -> list[Any]:
    tokens: list[Any] = []
    for value in tokens_map.values():
        tokens.extend(value if isinstance(value, list) else [value])
    return tokens


def release_freed_memory() -> None:
    """Hand memory the C heap holds but no longer uses back to the system (glibc only).

    Optimising the session folds the int8 weights into float32 copies; the intermediate
    copies are freed into glibc's heap, which keeps them (about 60 MB) unless trimmed.
    """
    from ferrex import heap

    heap.trim()


def plan_batches(
    lengths: Sequence[int], *, budget: int = TOKEN_BUDGET, max_batch: int = MAX_BATCH
) -> list[list[int]]:
    """Indices of ``lengths`` grouped into batches, shortest first: each batch's rows times its
    longest length stays within ``budget`` (a single text longer than that runs alone), and
    no batch has more than ``max_batch`` rows. Every index appears exactly once."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending: this text is the longest of the batch if it joins.
        if current and (len(current) >= max_batch or (len(current) + 1) * lengths[index] > budget):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def padded_feed(
    ids: Sequence[Sequence[int]], pad_id: int, inputs: set[str]
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.int64]]:
    """One batch's model inputs, padded to its longest text, and its attention mask (the
    inputs the model does not take are left out)."""
    longest = max(len(i) for i in ids)
    input_ids = np.full((len(ids), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), longest), dtype=np.int64)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    feed: dict[str, NDArray[np.int64]] = {"input_ids": input_ids}
    if "attention_mask" in inputs:
        feed["attention_mask"] = mask
    if "token_type_ids" in inputs:
        feed["token_type_ids"] = np.zeros_like(input_ids)
    return feed, mask


class OnnxEncoder:
    """A local BERT-like ONNX encoder: texts to unit float32 vectors, in input order."""

    def __init__(
        self,
        directory: Path,
        model_file: str,
        *,
        mean_pooling: bool,
        settings: SessionSettings,
        optimized: Path | None = None,
        int8_activations: bool = False,
    ) -> None:
        self.settings = settings
        self.mean_pooling = mean_pooling
        self.optimized = optimized
        """Where the optimised graph is kept (None: optimised at every start)."""
        self._tokenizer, self._pad_id = load_tokenizer(directory)
        self._session = open_session(
            directory / model_file,
            settings,
            optimized=optimized,
            int8_activations=int8_activations,
        )
        self._run_options = run_options(settings)
        release_freed_memory()
        self._inputs = {node.name for node in self._session.get_inputs()}

    def run(
        self, texts: Sequence[str], *, budget: int = TOKEN_BUDGET, max_batch: int = MAX_BATCH
    ) -> NDArray[np.float32]:
        """An ``(n, dim)`` float32 array, row ``i`` the unit vector of ``texts[i]``.

        With more than one caller (:attr:`SessionSettings.callers`) the batches are shared
        out as each thread finishes its last, and each batch is planned within its share of
        ``budget``, so the activations of the batches in flight together stay within it."""
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = [encoding.ids for encoding in encodings]
        rows: list[NDArray[np.float32]] = [np.empty(0, np.float32)] * len(ids)
        callers = self.settings.callers
        lengths = [len(i) for i in ids]
        if callers > 1 and len(ids) > max_batch:
            budget = max(1, budget // callers)
        batches = plan_batches(lengths, budget=budget, max_batch=max_batch)

        def run_batch(batch: list[int]) -> None:
            vectors = self._run_batch([ids[i] for i in batch])
            for row, index in enumerate(batch):
                rows[index] = vectors[row]

        if callers > 1 and len(batches) > 1:
            _shared_out(batches, run_batch, min(callers, len(batches)))
        else:
            for batch in batches:
                run_batch(batch)
        return np.stack(rows) if rows else np.empty((0, 0), np.float32)

    def _run_batch(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        feed, mask = padded_feed(ids, self._pad_id, self._inputs)
        options = self._run_options if mask.shape[1] > SHRINK_ABOVE else None
        output: NDArray[Any] = np.asarray(
            self._session.run(None, feed, options)[0], dtype=np.float32
        )
        pooled = _pool(output, mask) if self.mean_pooling else _first(output)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def _shared_out(batches: list[list[int]], run: Callable[[list[int]], None], threads: int) -> None:
    """``run`` every batch once, on ``threads`` threads (this one and ``threads - 1`` more),
    each taking the next batch left when it is done with its last; the first error is
    raised here once every thread has stopped (the others take no new batch after it)."""
    left = iter(batches)
    taking = threading.Lock()
    failed: list[BaseException] = []

    def drain() -> None:
        while not failed:
            with taking:
                batch = next(left, None)
            if batch is None:
                return
            try:
                run(batch)
            except BaseException as exc:
                failed.append(exc)
                return

    helpers = [
        threading.Thread(target=drain, name=f"ferrex-encode-{n}", daemon=True)
        for n in range(1, threads)
    ]
    for helper in helpers:
        helper.start()
    drain()
    for helper in helpers:
        helper.join()
    if failed:
        raise failed[0]


def _pool(hidden: NDArray[np.float32], mask: NDArray[np.int64]) -> NDArray[np.float32]:
    if hidden.ndim == 2:  # the model pools itself
        return hidden
    weights = mask.astype(np.float32)
    summed = np.einsum("bt,btd->bd", weights, hidden)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1e-9)
    pooled: NDArray[np.float32] = summed / counts
    return pooled


def _first(hidden: NDArray[np.float32]) -> NDArray[np.float32]:
    first: NDArray[np.float32] = hidden if hidden.ndim == 2 else hidden[:, 0]
    return first
