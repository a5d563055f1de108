"""The write side of the JSON API under ``/api/v1``, and its OpenAPI document.

``POST /api/v1/memories`` (store; ``{"memories": [...]}`` stores a batch), ``POST
/api/v1/recall``, ``DELETE /api/v1/memories/{id}`` (forget, ``?cascade=true``) and ``POST
/api/v1/confirm`` call the MCP tools of the same names through the hub, as the caller the
request's token grants, so answers, error codes and privacy are the tools' own. Arguments are
checked by the tool's own strict argument model (:class:`~ferrex.server.mcp_server.ToolInput`)
before the call: an unknown field, a wrong type or a value out of range is the same
``invalid_input`` the MCP tool answers, and nothing is written.

Who may call them:

- With a token table, only ``Authorization: Bearer`` (the ``/mcp`` tokens: an agent's token
  acts as that agent, the operator's as the operator). A dashboard session cookie is refused
  (401): a browser adds cookies by itself, never a bearer token.
- On an open loopback server (``auth.open_loopback``, no tokens) a request that carries an
  ``Origin`` header (every browser's cross-site POST and DELETE does) must come from the
  dashboard's own origin.
- The Host check of the dashboard applies to every route, ``openapi.json`` included (that one
  needs no token: it says nothing about any memory).

A POST body must be ``application/json`` (so a browser page of another site cannot send one
without a CORS preflight, which is never granted), UTF-8 (UTF-16 and UTF-32 are refused),
at most :data:`MAX_BODY` bytes and nested at most :data:`MAX_DEPTH` levels; anything else is
a JSON ``invalid_input`` (400), never a plain-text 500. A query parameter a route does not
take is refused (400) as an unknown field of a body is, and a boolean in a query is ``true``
or ``false``, nothing else (:class:`Param`, :func:`check_query`: one spec per route, which
the OpenAPI document renders too).

Every error answer is ``{"error": {"kind", "code", "message", "hint", ...details}}`` with
the one status :data:`~ferrex.server.dashboard.edge.ERRORS` gives its code (a 503 also says
``Retry-After``); the OpenAPI document lists each code with its status and kind, and each
operation the statuses of the codes it can answer.

``Idempotency-Key`` (store, forget, confirm): a write sent again with the same key by the same
principal gets the first answer (``Idempotent-Replayed: true``) and is not run again; the same
key with another body is refused (422, ``idempotency_key_reused``). A retry arriving while the
first is still running waits for its answer. The serving process keeps the keys
(:class:`IdempotencyKeys`: :data:`KEY_SECONDS`, at most :data:`KEY_COUNT` per principal, so
no other principal's requests push out one's keys) in memory and in
``<home>/run/api-idempotency.jsonl`` (:data:`KEY_FILE`), so a retry after a restart is
answered too. A keyed store also journals a hash of principal and key with the memory (its
import key, :data:`~ferrex.rules.memory_input.REQUEST_KEY_PREFIX`): when the process died
after the write and before the key was saved, the retry finds that memory and is answered
``stored`` with its id (``recovered: true``, ``Idempotent-Replayed: true``), not 409. A
forget or confirm journals no key: retried after such a crash it runs again (a forget of
what it already forgot answers 404). Each ``ferrex
serve`` process keeps its own: a retry must go to the server that had the first attempt. An
answer of 5xx (the backend was down, the disk full) is not kept: a retry runs again. A recall
takes no key (the header is ignored).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ferrex import __version__
from ferrex.core.decide.store import NEW_MEMORY
from ferrex.errors import FerrexError, Internal, MethodNotAllowed, NotFound, Refused, UsageError
from ferrex.errors import KeyReused as KeyReused
from ferrex.rules.memory_input import CONTEXT_DEPTH, REQUEST_KEY_PREFIX
from ferrex.rules.spelling import did_you_mean
from ferrex.server.dashboard.edge import (
    ERRORS,
    HEADERS,
    RETRY_AFTER_SECONDS,
    Gate,
    Unauthorized,
    error_body,
    error_headers,
    status_of,
)
from ferrex.server.dashboard.schemas import ANSWERS, for_generators, ref
from ferrex.server.service import Caller
from journal.files import make_private_dir, open_private, replace_durably

if TYPE_CHECKING:
    from ferrex.server.mcp_server import ToolInput

log = logging.getLogger("ferrex.api")

#: The largest request body taken (bytes); a batch of many long memories fits.
MAX_BODY = 4 * 1024 * 1024
#: The most memories one ``POST /api/v1/memories`` batch may hold.
MAX_BATCH = 100
#: How long an idempotency key is remembered, how many one principal (the operator, or one
#: agent) keeps at most, and how many all principals keep at most.
KEY_SECONDS = 24 * 3600
KEY_COUNT = 10_000
KEY_TOTAL = 50_000
#: Where the kept answers of idempotency keys live, under the data directory.
KEY_FILE = Path("run") / "api-idempotency.jsonl"
#: The longest idempotency key taken.
MAX_KEY = 200
#: Tests only: when this environment variable is "1", the serving process kills itself
#: (SIGKILL) after a keyed write is done and before its key is saved, as a crash would.
KILL_BEFORE_KEY_SAVED = "FERREX_TEST_KILL_BEFORE_KEY_SAVED"
#: How deep a body's arrays and objects may nest: a batch's frame (body, list, item) around
#: a context nested as deep as the store takes, and a margin, so that a context too deep is
#: the store's own refusal, naming where.
MAX_DEPTH = CONTEXT_DEPTH + 8


class TooLarge(UsageError):
    """A body over :data:`MAX_BODY` bytes (``invalid_input``)."""


Answer = tuple[int, dict[str, Any]]


@dataclass
class _Entry:
    fingerprint: str
    expires: float  # wall-clock seconds (kept entries outlive the process)
    principal: str  # a hash of who sent it: its keys are counted against its own cap
    done: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None


class IdempotencyKeys:
    """(principal, key) → the first answer of a write, bounded in time and count.

    Each principal keeps at most :attr:`count` keys (its oldest dropped first), so another
    principal's many keyed requests never push out its keys; beyond :attr:`total` in all,
    the oldest key of the principal holding the most is dropped.

    With ``path`` (``<home>/run/api-idempotency.jsonl``, mode 0600) every kept answer is also
    appended there (fsynced before the answer is sent) and read back at start, so a retry
    after a restart is still answered from it. The file holds a hash of principal and key,
    the request's fingerprint, the expiry and the answer (ids, entity names, error codes: a
    write's answer, never a memory's text); it is rewritten without the expired entries when
    it has grown to twice the keys kept. If it cannot be written (a read-only home),
    the keys stay in memory only.
    """

    def __init__(
        self,
        seconds: float = KEY_SECONDS,
        count: int = KEY_COUNT,
        path: Path | None = None,
        total: int = KEY_TOTAL,
    ) -> None:
        self._lock = threading.Lock()
        self._file_lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._of: dict[str, OrderedDict[str, None]] = {}  # principal → its names, oldest first
        self.seconds = seconds
        self.count = count
        self.total = max(total, count)
        self.path = path
        self._lines = 0
        if path is not None:
            self._load(path)

    def __len__(self) -> int:
        return len(self._entries)

    def run(
        self, principal: str, key: str, fingerprint: str, work: Callable[[], Answer]
    ) -> tuple[Answer, bool]:
        """The answer for this key (and whether it is a replay of an earlier one): ``work``
        runs only if no request with the key ran before or is running now."""
        name = hashlib.sha256(f"{principal}\0{key}".encode()).hexdigest()
        who = hashlib.sha256(f"principal\0{principal}".encode()).hexdigest()[:32]
        while True:
            entry, mine = self._claim(name, who, fingerprint)
            if mine:
                break
            entry.done.wait()
            if entry.answer is not None:
                return entry.answer, True
            # The first attempt failed in a way worth retrying (5xx): try it ourselves.
        answer: Answer | None = None
        try:
            answer = work()
            if os.environ.get(KILL_BEFORE_KEY_SAVED) == "1":
                os.kill(os.getpid(), signal.SIGKILL)  # tests only: the write done, no key kept
            return answer, False
        finally:
            kept = answer is not None and answer[0] < 500
            with self._lock:
                if kept:
                    entry.answer = answer
                elif self._entries.get(name) is entry:
                    self._drop(name)
            if kept:
                self._append(name, entry)
            entry.done.set()

    def _claim(self, name: str, who: str, fingerprint: str) -> tuple[_Entry, bool]:
        now = time.time()
        with self._lock:
            self._expire(now)
            entry = self._entries.get(name)
            if entry is not None:
                if entry.fingerprint != fingerprint:
                    raise KeyReused(
                        "this Idempotency-Key was already used for a different request",
                        hint="use a new key for each new write; reuse a key only to retry "
                        "the very same request",
                    )
                return entry, False
            entry = _Entry(fingerprint, now + self.seconds, who)
            self._add(name, entry)
            return entry, True

    def _add(self, name: str, entry: _Entry) -> None:
        """Keep ``entry``; drop its principal's oldest beyond :attr:`count`, and the oldest
        of the principal holding the most beyond :attr:`total`."""
        self._drop(name)
        self._entries[name] = entry
        mine = self._of.setdefault(entry.principal, OrderedDict())
        mine[name] = None
        while len(mine) > self.count:
            self._drop(next(iter(mine)))
        while len(self._entries) > self.total:
            busiest = max(self._of.values(), key=len)
            self._drop(next(iter(busiest)))

    def _drop(self, name: str) -> None:
        entry = self._entries.pop(name, None)
        if entry is None:
            return
        names = self._of[entry.principal]
        names.pop(name, None)
        if not names:
            del self._of[entry.principal]

    def _expire(self, now: float) -> None:
        while self._entries:
            name, oldest = next(iter(self._entries.items()))
            if oldest.expires > now:
                break
            self._drop(name)

    # -- the file ---------------------------------------------------------------------------

    def _load(self, path: Path) -> None:
        if not path.exists():
            return  # made by the first kept answer
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._give_up(exc)
            return
        now = time.time()
        for line in text.splitlines():
            try:
                raw = json.loads(line)
                name, fingerprint = str(raw["n"]), str(raw["f"])
                expires, status, doc = float(raw["e"]), int(raw["s"]), dict(raw["a"])
                who = str(raw.get("p", ""))  # "": a line written before keys had owners
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line, or not ours: skipped
            if expires <= now:
                continue
            entry = _Entry(fingerprint, expires, who, answer=(status, doc))
            entry.done.set()
            self._add(name, entry)
        self._rewrite()

    def _append(self, name: str, entry: _Entry) -> None:
        assert entry.answer is not None
        line = _line(name, entry)
        with self._file_lock:
            if self.path is None:
                return
            try:
                make_private_dir(self.path.parent)
                fd = open_private(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                try:
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                self._give_up(exc)
                return
            self._lines += 1
        if self._lines >= max(2 * len(self._entries), self.count):
            self._rewrite()

    def _rewrite(self) -> None:
        """The file again with only the entries kept now."""
        with self._file_lock:
            if self.path is None:
                return
            with self._lock:
                self._expire(time.time())
                kept = [(n, e) for n, e in self._entries.items() if e.answer is not None]
            try:
                make_private_dir(self.path.parent)
                replace_durably(self.path, b"".join(_line(n, e) for n, e in kept))
            except OSError as exc:
                self._give_up(exc)
                return
            self._lines = len(kept)

    def _give_up(self, exc: Exception) -> None:
        log.warning("idempotency keys stay in memory only: %s cannot be written (%s)",
                    self.path, exc)  # fmt: skip
        self.path = None


def _line(name: str, entry: _Entry) -> bytes:
    assert entry.answer is not None
    status, doc = entry.answer
    raw = {"n": name, "p": entry.principal, "f": entry.fingerprint, "e": entry.expires,
           "s": status, "a": doc}  # fmt: skip
    return (json.dumps(raw, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


Handler = Callable[[Request, Caller, Any], dict[str, Any]]


class WriteApi:
    """The write routes and the OpenAPI document, over a dashboard's checks and hub."""

    def __init__(self, dashboard: Gate, tools: Mapping[str, ToolInput]) -> None:
        self.dashboard = dashboard
        self.tools = dict(tools)
        self.keys = IdempotencyKeys(path=dashboard.hub.home / KEY_FILE)
        self._openapi: dict[str, Any] | None = None

    # -- who is asking ----------------------------------------------------------------------

    def caller(self, request: Request) -> Caller:
        """The caller of a write: a bearer token's, or on an open server anyone from the
        dashboard's origin or from no browser at all."""
        caller, by_bearer = self.dashboard.authenticated(request)
        if self.dashboard.tokens is not None and not by_bearer:
            raise Unauthorized(
                "the write API takes a bearer token, not a dashboard session",
                hint="send Authorization: Bearer <token> (the /mcp tokens)",
            )
        if self.dashboard.tokens is None and request.headers.get("origin") is not None:
            self.dashboard.same_origin(request)
        return caller

    # -- the routes' frame --------------------------------------------------------------------

    def route(
        self, handler: Handler, *, body: bool, keyed: bool = True
    ) -> Callable[[Request], Any]:
        """An endpoint calling ``handler``; ``keyed``: it honours ``Idempotency-Key`` (a
        recall does not: it changes nothing worth guarding, and its answer holds memories'
        text, which must not outlive a forget in a kept answer)."""

        async def endpoint(request: Request) -> Response:
            replayed = False
            try:
                caller = self.caller(request)
                payload = await _json_body(request) if body else None
                key = request.headers.get("idempotency-key") if keyed else None

                def work() -> Answer:
                    return self._answer(handler, request, caller, payload)

                if key is None:
                    answer = await run_in_threadpool(work)
                else:
                    if not 1 <= len(key) <= MAX_KEY or not key.isascii() or not key.isprintable():
                        raise UsageError(
                            f"an Idempotency-Key is 1 to {MAX_KEY} printable ASCII characters",
                            hint="a random UUID is a good key",
                        )
                    principal = principal_of(caller)
                    answer, replayed = await run_in_threadpool(
                        self.keys.run, principal, key, _fingerprint(request, payload), work
                    )
            except FerrexError as exc:
                answer = _error(exc)
            status, doc = answer
            headers = error_headers(status) if status >= 400 else dict(HEADERS)
            if replayed or doc.get("recovered") is True:
                headers["Idempotent-Replayed"] = "true"
            return JSONResponse(doc, status_code=status, headers=headers)

        return endpoint

    def _answer(self, handler: Handler, request: Request, caller: Caller, payload: Any) -> Answer:
        try:
            return 200, handler(request, caller, payload)
        except FerrexError as exc:
            return _error(exc)
        except Exception:
            log.exception("%s %s failed unexpectedly", request.method, request.url.path)
            return _error(INTERNAL)

    def _tool(self, tool: str, args: Any, caller: Caller) -> dict[str, Any]:
        self.tools[tool].check(args)
        return self.dashboard.hub.call(tool, args, caller)

    def _store_one(self, args: Any, caller: Caller, request_key: str | None) -> dict[str, Any]:
        """The store tool's answer; with ``request_key`` (the request had an Idempotency-Key)
        the key is journaled with the memory, and a memory it already stored (the answer was
        lost: the process died before the key was saved) is answered as stored again."""
        if request_key is None:
            return self._tool("store", args, caller)
        self.tools["store"].check(args)
        try:
            return self.dashboard.hub.call("store", {**args, "request_key": request_key}, caller)
        except Refused as exc:
            ids = exc.details.get("ids")
            if exc.code != "duplicate" or not exc.details.get("imported") or not ids:
                raise
            return {"status": "stored", "id": ids[0], "recovered": True,
                    "note": "stored by the first request with this Idempotency-Key, whose "
                    "answer was lost; only the id is known now"}  # fmt: skip

    # -- the handlers ---------------------------------------------------------------------------

    def store(self, request: Request, caller: Caller, payload: Any) -> dict[str, Any]:
        _no_query(request)
        key = request.headers.get("idempotency-key")
        request_key = None if key is None else _request_key(caller, key)
        if isinstance(payload, dict) and "memories" in payload:
            return self._store_many(payload, caller, request_key)
        return self._store_one(payload, caller, request_key)

    def _store_many(
        self, payload: dict[str, Any], caller: Caller, request_key: str | None
    ) -> dict[str, Any]:
        """Each item stored by itself, in order, as the store tool would (a later item sees
        the earlier ones); a refused or invalid item is that item's outcome only."""
        items = payload["memories"]
        if set(payload) != {"memories"}:
            extra = sorted(set(payload) - {"memories"})
            raise UsageError(
                f'a batch is {{"memories": [...]}} alone; it also has {", ".join(extra)}',
                hint="put each memory's arguments inside the list",
            )
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
            raise UsageError(f"memories must be a list of 1 to {MAX_BATCH} objects",
                             hint="send a longer list in several requests")  # fmt: skip
        results: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            try:
                item_key = None if request_key is None else f"{request_key} #{index}"
                results.append({"index": index, **self._store_one(item, caller, item_key)})
            except FerrexError as exc:
                results.append({"index": index, "error": error_body(exc)})
        return {
            "results": results,
            "stored": sum(1 for r in results if r.get("status") in NEW_MEMORY),
            "failed": sum(1 for r in results if "error" in r),
        }

    def recall(self, request: Request, caller: Caller, payload: Any) -> dict[str, Any]:
        _no_query(request)
        return self._tool("recall", payload, caller)

    def confirm(self, request: Request, caller: Caller, payload: Any) -> dict[str, Any]:
        _no_query(request)
        return self._tool("confirm", payload, caller)

    def forget(self, request: Request, caller: Caller, payload: Any) -> dict[str, Any]:
        memory_id = request.path_params["memory_id"]
        check_query(request, FORGET_QUERY)
        cascade = request.query_params.get("cascade") == "true"
        doc = self._tool("forget", {"ids": [memory_id], "cascade": cascade}, caller)
        if memory_id in doc.get("not_found", []):
            # Another agent's private memory is reported exactly like one that does not exist.
            raise NotFound(f"no memory {memory_id!r}",
                           hint="recall or GET /api/v1/memory/{id} finds ids",
                           details={"ids": [memory_id]})  # fmt: skip
        return doc

    # -- the OpenAPI document -------------------------------------------------------------------

    def openapi_endpoint(self, request: Request) -> Response:
        try:
            self.dashboard.check_host(request)
        except FerrexError as exc:
            status, doc = _error(exc)
            return JSONResponse(doc, status_code=status, headers=error_headers(status))
        if self._openapi is None:
            self._openapi = openapi_document(self.tools)
        return JSONResponse(self._openapi, headers=HEADERS)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/api/v1/memories", self.route(self.store, body=True), methods=["POST"]),
            Route(
                "/api/v1/memories/{memory_id:path}",
                self.route(self.forget, body=False),
                methods=["DELETE"],
            ),
            Route(
                "/api/v1/recall", self.route(self.recall, body=True, keyed=False), methods=["POST"]
            ),
            Route("/api/v1/confirm", self.route(self.confirm, body=True), methods=["POST"]),
            Route("/api/v1/openapi.json", self.openapi_endpoint, methods=["GET"]),
        ]


def not_found_json(request: Request, status: int) -> Response:
    """Starlette's 404 and 405 under ``/api/``, as the API's error documents."""
    hint = "see /api/v1/openapi.json"
    exc: FerrexError
    if status == 405:
        exc = MethodNotAllowed(f"{request.url.path} does not take {request.method}", hint=hint)
    else:
        exc = NotFound(f"nothing is served at {request.url.path}", hint=hint)
    status, doc = _error(exc)
    return JSONResponse(doc, status_code=status, headers=error_headers(status))


def principal_of(caller: Caller) -> str:
    """Who a caller is, for the caps kept per principal: the operator, or one agent."""
    return "operator" if caller.agent_id is None else f"agent:{caller.agent_id}"


def _request_key(caller: Caller, key: str) -> str:
    """The import key a keyed store journals: who sent it and the key, hashed."""
    digest = hashlib.sha256(f"{principal_of(caller)}\0{key}".encode()).hexdigest()[:40]
    return REQUEST_KEY_PREFIX + digest


#: What a client hears of an unexpected failure (its traceback goes to the log).
INTERNAL = Internal("the memory server failed; the error is in its log")


def _error(exc: FerrexError) -> Answer:
    return status_of(exc.code), {"error": error_body(exc)}


def _no_query(request: Request) -> None:
    if request.query_params:
        name = next(iter(request.query_params))
        raise UsageError(f"unknown query parameter {name!r}",
                         hint="this route takes its arguments as a JSON body")  # fmt: skip


async def _json_body(request: Request) -> Any:
    """The request's JSON body: ``application/json``, at most :data:`MAX_BODY` bytes."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise UsageError(
            f"the body must be application/json, not {kind or 'without a content type'}",
            hint="send Content-Type: application/json",
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise TooLarge(f"the body is larger than {MAX_BODY} bytes",
                           hint="send a batch in several requests")  # fmt: skip
        chunks.append(chunk)
    return decode_json(b"".join(chunks))


def decode_json(raw: bytes) -> Any:
    """A body's JSON value: UTF-8 only (RFC 8259; ``json.loads`` of bytes would take UTF-16
    and UTF-32 too; a NUL byte in the first four is how RFC 4627 tells them apart), nested
    at most :data:`MAX_DEPTH` levels, else ``invalid_input``."""
    hint = "send JSON encoded as UTF-8"
    if b"\x00" in raw[:4] or raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise UsageError("the body is UTF-16 or UTF-32, not UTF-8", hint=hint)
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte order mark is still UTF-8
    except UnicodeDecodeError as exc:
        raise UsageError(f"the body is not UTF-8 (byte {exc.start})", hint=hint) from None
    deep = UsageError(f"the body nests deeper than {MAX_DEPTH} levels",
                      hint="no argument nests that deep; flatten the context")  # fmt: skip
    try:
        value = json.loads(text)
    except RecursionError:  # the decoder's own stack ran out, far beyond MAX_DEPTH
        raise deep from None
    except ValueError as exc:
        raise UsageError(f"the body is not JSON: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise deep
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (counted without recursion), stopping
    once past :data:`MAX_DEPTH`."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _fingerprint(request: Request, payload: Any) -> str:
    """What makes two writes the same request: method, path, query and the JSON body (as
    values: spacing and key order do not matter)."""
    what = [request.method, request.url.path, sorted(request.query_params.multi_items()), payload]
    text = json.dumps(what, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# -- query parameters --------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One query parameter a route takes: checked by :func:`check_query`, described in the
    OpenAPI document, from this one spec."""

    name: str
    schema: dict[str, Any]
    description: str
    required: bool = False

    def openapi(self, where: str = "query") -> dict[str, Any]:
        return {"name": self.name, "in": where, "required": self.required,
                "schema": self.schema, "description": self.description}  # fmt: skip


_TEXT: dict[str, Any] = {"type": "string"}
_TEXTS: dict[str, Any] = {"type": "array", "items": _TEXT}
FLAG: dict[str, Any] = {"type": "boolean"}

#: ``GET /api/v1/recall`` (the dashboard's search): its names are the search form's fields.
SEARCH_QUERY = (
    Param("q", {"type": "string", "minLength": 1}, "The words to look for.", required=True),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "How many (10)."),
    Param("types", _TEXTS, "Only these kinds (repeated or comma-separated)."),
    Param("entities", _TEXTS, "Only memories about these (repeated or comma-separated)."),
    Param("min_relevance", {"type": "number", "minimum": 0, "maximum": 1}, "Cut-off."),
    *(Param(n, _TEXT, f"The recall tool's {n}.")
      for n in ("as_of", "after", "before", "namespace", "strategy")),
    *(Param(n, FLAG, f"The recall tool's {n}: true or false.")
      for n in ("include_stale", "include_invalidated")),
)  # fmt: skip
ENTITIES_QUERY = (
    Param("name", _TEXT, "One entity (any spelling)."),
    Param("prefix", _TEXT, "Entities whose names start so."),
    Param("offset", {"type": "integer", "minimum": 0}, "Skip this many."),
)
STATS_QUERY = (Param("namespace", _TEXT, "One namespace."),)
#: ``GET /api/v1/memories``: a page of the memories the caller sees, filtered and sorted.
LIST_QUERY = (
    Param("cursor", _TEXT, "next_cursor of the page before, unchanged."),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 200}, "How many (50)."),
    Param("sort", {"enum": ["-created", "created", "-valid_from", "valid_from"]},
          "By when stored (created) or when true (valid_from); - first: newest first "
          "(default -created)."),
    Param("types", _TEXTS, "Only these kinds (repeated or comma-separated)."),
    Param("namespace", _TEXT, "One namespace (default: every namespace)."),
    Param("entity", _TEXT, "Only memories about this entity (any spelling)."),
    Param("source", _TEXT, "Only memories with this source, exactly."),
    Param("visibility", {"enum": ["private", "shared"]}, "Only private or only shared ones."),
    Param("state", {"enum": ["current", "superseded", "all"]},
          "current (default): not superseded; superseded; or all."),
    Param("after", {"type": "string", "format": "date-time"}, "Event time at or after."),
    Param("before", {"type": "string", "format": "date-time"}, "Event time before."),
    Param("tag", _TEXTS, "Only memories with this tag (a value of their context's tags "
          "list); repeated: every one of them."),
    Param("context", _TEXTS, "KEY:VALUE: only memories whose context's top-level KEY is "
          "VALUE or a list holding it; repeated: every one of them."),
)  # fmt: skip
#: ``GET /api/v1/tags``: the values of one context key, with counts.
TAGS_QUERY = (
    Param("key", _TEXT, "The context key whose values are counted (tags)."),
    Param("namespace", _TEXT, "One namespace (default: every namespace)."),
    Param("state", {"enum": ["current", "superseded", "all"]},
          "Over current memories (default), superseded ones, or all."),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "How many (100)."),
)  # fmt: skip
REFLECT_QUERY = (
    Param("namespace", _TEXT, "One namespace (default: every namespace)."),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Items per section (10)."),
)
#: ``GET /api/v1/changes``: where the change stream starts, and whether it ends when idle.
CHANGES_QUERY = (
    Param("after", {"type": "integer", "minimum": 0},
          "Start after this journal position (Last-Event-ID, when sent, wins); "
          "without either, only what comes next."),
    Param("until_idle", FLAG, "End the stream once it has caught up: true or false."),
)  # fmt: skip
FORGET_QUERY = (Param("cascade", FLAG, "Also drop entities no longer mentioned: true or false."),)


def check_query(request: Request, params: tuple[Param, ...]) -> None:
    """Refuse (``invalid_input``) a query parameter the route does not take, as a POST body
    refuses an unknown field, and a boolean other than ``true`` or ``false``."""
    known = {p.name: p for p in params}
    for name, value in request.query_params.multi_items():
        param = known.get(name)
        if param is None:
            takes = ", ".join(known) or "no query parameters"
            raise UsageError(f"unknown query parameter {name!r}{did_you_mean(name, list(known))}",
                             hint=f"{request.url.path} takes {takes}")  # fmt: skip
        if param.schema.get("type") == "boolean" and value not in ("true", "false"):
            raise UsageError(f"{name} must be true or false, got {value!r}",
                             hint=f"send {name}=true, or leave it out for false")  # fmt: skip


# -- OpenAPI ----------------------------------------------------------------------------------

#: The error codes every route may answer (who asks; a store or process unavailable).
_ANY_ROUTE = ("invalid_input", "unauthorized", "forbidden", "busy", "backend_unavailable",
              "model_unavailable", "version_mismatch", "journal", "journal.error",
              "journal.connect", "journal.unavailable", "internal", "error")  # fmt: skip
#: And what a write may answer besides.
_ANY_WRITE = (*_ANY_ROUTE, "read_only", "storage_full", "idempotency_key_reused",
              "journal.damaged", "journal.format", "journal.too_new", "journal.encode")  # fmt: skip
#: What needs the embedding model (a store, a recall).
_EMBEDS = ("model_mismatch", "model_unauthorized", "model_bad_response")
_STORE = (*_ANY_WRITE, *_EMBEDS, "not_found", "secret_refused", "duplicate",
          "conflict_ambiguous", "already_superseded", "refused")  # fmt: skip


def _responses(codes: tuple[str, ...], ok: dict[str, Any]) -> dict[str, Any]:
    """The 200 answer and each error status ``codes`` can have, naming its codes."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    found: dict[str, Any] = {
        "200": {"description": "The answer.", "content": {"application/json": {"schema": ok}}}
    }
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(ERRORS[code].status, []).append(code)
    for status in sorted(by_status):
        listed = "; ".join(f"`{c}`: {ERRORS[c].meaning}" for c in by_status[status])
        found[str(status)] = {"description": listed + ".", "content": error}
        if status in (429, 503):
            found[str(status)]["headers"] = {"Retry-After": {
                "description": "Seconds to wait before a retry.",
                "schema": {"type": "integer", "const": RETRY_AFTER_SECONDS},
            }}  # fmt: skip
    return found


def _operation(summary: str, operation_id: str, codes: tuple[str, ...], ok: dict[str, Any], *,
               body: dict[str, Any] | None = None,
               parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    doc: dict[str, Any] = {"summary": summary, "operationId": operation_id}
    if parameters:
        doc["parameters"] = parameters
    if body is not None:
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    doc["responses"] = _responses(codes, ok)
    if any(p.get("name") == "Idempotency-Key" for p in parameters or ()):
        doc["responses"]["200"]["headers"] = {"Idempotent-Replayed": {
            "description": "true when this is the kept answer of an earlier request with "
            "the same Idempotency-Key (nothing was done again)",
            "schema": {"type": "string", "enum": ["true"]},
        }}  # fmt: skip
    return doc


def error_table() -> str:
    """Every error code, its status and kind, as a Markdown table (the Error schema's
    description)."""
    ordered = sorted(ERRORS.items(), key=lambda item: (item[1].status, item[0]))
    rows = [f"| `{code}` | {e.status} | {e.kind} | {e.meaning} |" for code, e in ordered]
    return "\n".join(["| code | status | kind | meaning |", "|---|---|---|---|", *rows])


def openapi_document(tools: Mapping[str, ToolInput]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every ``/api/v1`` route; request schemas are the MCP
    tools' own input schemas (JSON Schema 2020-12, which OpenAPI 3.1 takes as it is)."""
    key = Param("Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": MAX_KEY},
                "Send the same key again to retry this write: it is done once.",
                ).openapi("header")  # fmt: skip
    memory_id = Param("id", {"type": "string", "minLength": 1}, "A memory's id.",
                      required=True).openapi("path")  # fmt: skip
    text = _TEXT
    paths: dict[str, Any] = {
        "/api/v1/memories": {"get": _operation(
            "A page of memories, filtered (tags too) and sorted", "list", _ANY_ROUTE,
            ref("MemoryPage"), parameters=[p.openapi() for p in LIST_QUERY],
        ), "post": _operation(
            "Store a memory, or a batch ({\"memories\": [...]})", "store", _STORE,
            {"oneOf": [ref("StoreAnswer"), ref("StoreBatchAnswer")]},
            body={"oneOf": [ref("StoreArguments"), ref("StoreBatch")]},
            parameters=[key],
        )},
        "/api/v1/memories/{id}": {"delete": _operation(
            "Forget a memory", "forget", (*_ANY_WRITE, "not_found"), ref("ForgetAnswer"),
            parameters=[memory_id, key, *(p.openapi() for p in FORGET_QUERY)],
        )},
        "/api/v1/recall": {
            "post": _operation("Recall (the recall tool's arguments)", "recall",
                               (*_ANY_ROUTE, *_EMBEDS), ref("RecallAnswer"),
                               body=ref("RecallArguments")),
            "get": _operation("Recall as the dashboard searches (explained, not counted as a use)",
                              "search", (*_ANY_ROUTE, *_EMBEDS), ref("RecallAnswer"),
                              parameters=[p.openapi() for p in SEARCH_QUERY]),
        },
        "/api/v1/confirm": {"post": _operation(
            "Confirm memories (and set pinned or importance)", "confirm", _ANY_WRITE,
            ref("ConfirmAnswer"), body=ref("ConfirmArguments"), parameters=[key],
        )},
        "/api/v1/memory/{id}": {"get": _operation(
            "One memory", "memory", (*_ANY_ROUTE, "not_found"), ref("MemoryDetail"),
            parameters=[memory_id],
        )},
        "/api/v1/history/{id}": {"get": _operation(
            "A memory's history", "history", (*_ANY_ROUTE, "not_found"), ref("MemoryHistory"),
            parameters=[memory_id],
        )},
        "/api/v1/entities": {"get": _operation(
            "Entities by prefix, or one entity by name", "entities", (*_ANY_ROUTE, "not_found"),
            {"oneOf": [ref("EntityNames"), ref("Entity")]},
            parameters=[p.openapi() for p in ENTITIES_QUERY],
        )},
        "/api/v1/stats": {"get": _operation(
            "Counts, the latest, what needs attention", "stats", _ANY_ROUTE, ref("Stats"),
            parameters=[p.openapi() for p in STATS_QUERY],
        )},
        "/api/v1/reflect": {"get": _operation(
            "What needs attention (the reflect tool)", "reflect", _ANY_ROUTE, ref("Reflect"),
            parameters=[p.openapi() for p in REFLECT_QUERY],
        )},
        "/api/v1/tags": {"get": _operation(
            "The tags (values of a context key) of the memories the caller sees, with counts",
            "tags", _ANY_ROUTE, ref("TagCounts"), parameters=[p.openapi() for p in TAGS_QUERY],
        )},
        "/api/v1/changes": {"get": _changes_operation()},
        "/api/v1/openapi.json": {"get": {
            "summary": "This document", "operationId": "openapi", "security": [],
            "responses": {"200": {"description": "The OpenAPI document.",
                                  "content": {"application/json": {
                                      "schema": ref("OpenApiDocument")}}}},
        }},
    }  # fmt: skip
    error_fields = {
        "type": "object",
        "required": ["kind", "code", "message"],
        "properties": {
            "kind": {"enum": sorted({e.kind for e in ERRORS.values()}),
                     "description": "The family of the error."},
            "code": {"enum": sorted(ERRORS), "description": "Stable; see the table."},
            "message": text,
            "hint": {"type": ["string", "null"], "description": "What to do about it."},
        },
        "additionalProperties": {"description": "Details: the ids involved, scores."},
    }  # fmt: skip
    error = {
        "type": "object",
        "required": ["error"],
        "description": "Every error answer. Each code has one status (and one kind):\n\n"
        + error_table(),
        "properties": {"error": ref("ErrorBody")},
    }
    batch = {
        "type": "object",
        "additionalProperties": False,
        "required": ["memories"],
        "properties": {"memories": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH,
                                    "items": ref("StoreArguments")}},
    }  # fmt: skip
    return {
        "openapi": "3.1.0",
        "servers": [
            {
                "url": "/",
                "description": "The ferrex serve --http that serves this "
                "document (its /api/v1 routes are relative to it).",
            }
        ],
        "info": {
            "title": "ferrex memory API",
            "version": __version__,
            "description": "The MCP tools of ferrex over plain HTTP: the same arguments, "
            "answers, error codes and privacy rules. Every route but this document needs "
            "Authorization: Bearer <token>.",
        },
        "paths": for_generators(paths),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": for_generators(
                {
                    "StoreArguments": _described(tools["store"]),
                    "RecallArguments": _described(tools["recall"]),
                    "ConfirmArguments": _described(tools["confirm"]),
                    "StoreBatch": batch,
                    **ANSWERS,
                    "Error": error,
                    "ErrorBody": error_fields,
                }
            ),
        },
        "security": [{"bearer": []}],
    }


def _changes_operation() -> dict[str, Any]:
    """``GET /api/v1/changes``: an event stream, described in words and by its events'
    data schema (OpenAPI 3.1 has no schema for the items of a stream)."""
    doc = _operation(
        "The change stream: server-sent events of journal positions and memory ids",
        "changes", (*_ANY_ROUTE, "too_many_streams"), {"type": "string"},
        parameters=[
            Param("Last-Event-ID", {"type": "string", "pattern": "^[0-9]+$"},
                  "Resume after this position (an EventSource sends it by itself).",
                  ).openapi("header"),
            *(p.openapi() for p in CHANGES_QUERY),
        ],
    )  # fmt: skip
    doc["responses"]["200"] = {
        "description": "text/event-stream: `change` events (id: the journal position; data: "
        'a ChangeEvent), `heartbeat` events (data: {"position"}) when quiet, an `error` '
        "event (data: an Error) before the server ends a stream it cannot go on with.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
    return doc


def _described(tool: ToolInput) -> dict[str, Any]:
    return {**tool.schema, "description": tool.description}
