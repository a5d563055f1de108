"""The write side of the JSON API under ``/api/v1``, and its OpenAPI document.

``POST /api/v1/memories`` (store; ``{"memories": [...]}`` stores a batch), ``POST
/api/v1/recall``, ``DELETE /api/v1/memories/{id}`` (forget, ``?cascade=true``) and ``POST
/api/v1/confirm`` call the MCP tools of the same names through the hub, as the caller the
request's token grants, so answers, error codes and privacy are the tools' own. Arguments are
decoded by the tool's own strict argument model into its typed request
(:class:`~ferrex.server.mcp_server.ToolInput`) before the call: an unknown field, a wrong
type or a value out of range is the same ``invalid_input`` the MCP tool answers, and nothing
is written.

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
at most ``MAX_BODY`` bytes and nested at most ``MAX_DEPTH`` levels; anything else is a
JSON ``invalid_input`` (400), never a plain-text 500. A query parameter a route does not
take is refused (400) as an unknown field of a body is, and a boolean in a query is ``true``
or ``false``, nothing else (:mod:`ferrex.server.dashboard.params`: the limits, and one spec
per route, which the OpenAPI document, :mod:`ferrex.server.dashboard.openapi`, renders too).

Every error answer is ``{"error": {"kind", "code", "message", "hint", ...details}}`` with
the one status :data:`~ferrex.server.dashboard.edge.ERRORS` gives its code (a 503 also says
``Retry-After``); the OpenAPI document lists each code with its status and kind, and each
operation the statuses of the codes it can answer.

``Idempotency-Key`` (store, forget, confirm): a write sent again with the same key by the same
principal gets the first answer (``Idempotent-Replayed: true``) and is not run again; the same
key with another body is refused (422, ``idempotency_key_reused``). A retry arriving while the
first is still running waits for its answer. The serving process keeps the keys
(:mod:`ferrex.server.dashboard.keys`: a day, at most 10,000 per principal, so no other
principal's requests push out one's keys) in memory and in
``<home>/run/api-idempotency.jsonl``, so a retry after a restart is answered too. A keyed store
also journals a hash of principal and key with the memory (its import key,
:data:`~ferrex.rules.arguments.REQUEST_KEY_PREFIX`): when the process died after the write
and before the key was saved, the retry finds that memory and is answered ``stored`` with its
id (``recovered: true``, ``Idempotent-Replayed: true``), not 409. A forget or confirm journals
no key: retried after such a crash it runs again (a forget of what it already forgot answers
404). Each ``ferrex serve`` process keeps its own: a retry must go to the server that had the
first attempt. An answer of 5xx (the backend was down, the disk full) is not kept: a retry runs
again. A recall takes no key (the header is ignored).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ferrex.core.decide.store import NEW_MEMORY, StoreAnswer
from ferrex.errors import FerrexError, Internal, MethodNotAllowed, NotFound, Refused, UsageError
from ferrex.rules.arguments import REQUEST_KEY_PREFIX
from ferrex.server.dashboard.edge import (
    HEADERS,
    Gate,
    Unauthorized,
    error_body,
    error_headers,
    status_of,
)
from ferrex.server.dashboard.keys import KEY_FILE, MAX_KEY, Answer, IdempotencyKeys
from ferrex.server.dashboard.openapi import openapi_document
from ferrex.server.dashboard.params import (
    FORGET_QUERY,
    MAX_BATCH,
    MAX_BODY,
    MAX_DEPTH,
    check_query,
)
from ferrex.server.dashboard.schemas import StoreBatchAnswer
from ferrex.server.service import Caller
from ferrex.server.tool_calls import Store

if TYPE_CHECKING:
    from ferrex.server.mcp_server import ToolInput

log = logging.getLogger("ferrex.api")


class TooLarge(UsageError):
    """A body over :data:`~ferrex.server.dashboard.params.MAX_BODY` bytes (``invalid_input``)."""


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
        """The tool's answer to a body of arguments, decoded once by its own argument model."""
        return self.dashboard.hub.call(self.tools[tool].decode(args), caller)

    def _store_one(self, args: Any, caller: Caller, request_key: str | None) -> dict[str, Any]:
        """The store tool's answer; with ``request_key`` (the request had an Idempotency-Key)
        the key is journaled with the memory, and a memory it already stored (the answer was
        lost: the process died before the key was saved) is answered as stored again."""
        if request_key is None:
            return self._tool("store", args, caller)
        store = self.tools["store"].decode(args)
        assert isinstance(store, Store)
        try:
            return self.dashboard.hub.call(replace(store, request_key=request_key), caller)
        except Refused as exc:
            ids = exc.details.get("ids")
            if exc.code != "duplicate" or not exc.details.get("imported") or not ids:
                raise
            recovered: StoreAnswer = {
                "status": "stored", "id": ids[0], "recovered": True,
                "note": "stored by the first request with this Idempotency-Key, whose "
                "answer was lost; only the id is known now"}  # fmt: skip
            return {**recovered}

    # -- the handlers ---------------------------------------------------------------------------

    def store(self, request: Request, caller: Caller, payload: Any) -> dict[str, Any]:
        _no_query(request)
        key = request.headers.get("idempotency-key")
        request_key = None if key is None else _request_key(caller, key)
        if isinstance(payload, dict) and "memories" in payload:
            return {**self._store_many(payload, caller, request_key)}
        return self._store_one(payload, caller, request_key)

    def _store_many(
        self, payload: dict[str, Any], caller: Caller, request_key: str | None
    ) -> StoreBatchAnswer:
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
            given = (f"a list of {len(items)}" if isinstance(items, list)
                     else f"a {type(items).__name__}")  # fmt: skip
            hint = 'send {"memories": [{...}, ...]}: a list of store arguments'
            if isinstance(items, list):
                hint = f"split it into requests of at most {MAX_BATCH}" if items else (
                    "send at least one memory")  # fmt: skip
            raise UsageError(f"memories must be a list of 1 to {MAX_BATCH} objects, not {given}",
                             hint=hint)  # fmt: skip
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


def not_found_json(request: Request, status: int, allow: str | None = None) -> Response:
    """Starlette's 404 and 405 under ``/api/``, as the API's error documents; a 405 with the
    ``Allow`` header of the methods the address takes."""
    hint = "see /api/v1/openapi.json"
    exc: FerrexError
    if status == 405:
        exc = MethodNotAllowed(f"{request.url.path} does not take {request.method}", hint=hint)
    else:
        exc = NotFound(f"nothing is served at {request.url.path}", hint=hint)
    status, doc = _error(exc)
    headers = error_headers(status) | ({"Allow": allow} if allow else {})
    return JSONResponse(doc, status_code=status, headers=headers)


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
        value = json.loads(text, object_pairs_hook=_once_each)
    except RecursionError:  # the decoder's own stack ran out, far beyond MAX_DEPTH
        raise deep from None
    except ValueError as exc:
        raise UsageError(f"the body is not JSON: {exc}") from None
    if _depth(value) > MAX_DEPTH:
        raise deep
    return value


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every name comes once: ``{"content": "x", "content": "y"}`` is
    refused (which one was meant?), where a JSON reader keeps the last one silently."""
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise UsageError(f"the body names {name!r} twice in one object",
                             hint="send each field once")  # fmt: skip
        found[name] = value
    return found


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
