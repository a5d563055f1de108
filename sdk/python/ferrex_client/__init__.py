"""A client for ferrex's HTTP API, with nothing but the standard library.

    from ferrex_client import Client, FerrexError

    client = Client("http://127.0.0.1:8765", token="…")
    stored = client.store("On 2026-11-02 Ana deployed api-server v2.3", entities=["Ana"])
    found = client.recall("who deployed api-server?", limit=3)
    client.confirm([stored["id"]], pinned=True)
    page = client.list(types=["episodic"], limit=20)  # then cursor=page["next_cursor"]
    client.history(stored["id"]), client.entities(prefix="A"), client.entity("Ana")
    client.stats(), client.reflect(), client.tags()
    client.forget(stored["id"])
    for change in client.changes(after=0, until_idle=True):  # the change stream
        print(change["position"], change["memories"])

Every method returns the server's answer, a dict typed by :mod:`ferrex_client.answers`
(what ``/api/v1/openapi.json`` describes), or raises :class:`FerrexError` carrying the
server's ``code``, ``message`` and ``hint``.

Writes (store, store_many, forget, confirm) send an ``Idempotency-Key`` made once per call and
sent again on each retry, so a write retried after a lost answer is done once. A request is
retried (``retries`` times, waiting ``backoff`` seconds, doubled each time) when the
connection fails or the server answers 503; any other answer is final.

The token goes to the configured address only: the client follows no redirect (an answer
that redirects is a :class:`FerrexError` with code ``redirected``; a ferrex server never
redirects its API), refuses a token with a line break or other control character
(``bad_token``), and refuses to send a token over plain ``http://`` to a host that is not
this machine (``insecure_url``: use ``https://``, or pass ``allow_insecure_http=True`` for a
network you trust).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast
from urllib.parse import quote, urlencode, urlsplit

from ferrex_client.answers import (
    BatchAnswer,
    ChangeEvent,
    ConfirmAnswer,
    Entity,
    EntityNames,
    ForgetAnswer,
    History,
    MemoryDetail,
    MemoryPage,
    RecallAnswer,
    Reflect,
    Stats,
    StoreAnswer,
    TagCounts,
)

__all__ = ["Client", "FerrexError"]
__version__ = "0.1.0"

#: The statuses worth retrying: the backend (or the model) is unavailable for now.
RETRY_STATUSES = frozenset({503})


class FerrexError(Exception):
    """An error answer of the server (``status`` its HTTP status), or a connection that kept
    failing (``code`` ``connection_failed``, ``status`` None)."""

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        *,
        status: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"[{code}] {message}" + (f" (hint: {hint})" if hint else ""))
        self.code = code
        self.message = message
        self.hint = hint
        self.status = status
        self.details: dict[str, Any] = dict(details or {})


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuses every redirect: following one would send the bearer token (and a write's
    body, a POST silently turned into a GET) to whatever address the answer names."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        fp.close()
        raise FerrexError(
            "redirected",
            f"{req.get_method()} {req.full_url} was answered {code} with a redirect to "
            f"{newurl}; the client follows no redirect, so the token is not sent there",
            "give the client the server's own address (a ferrex server never redirects its API)",
            status=code,
        )


_OPENER = urllib.request.build_opener(_NoRedirects)


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _checked(url: str, token: str | None, allow_insecure_http: bool) -> str:
    """The server's address, refused where a token would travel badly."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FerrexError("bad_url", f"{url!r} is not an http:// or https:// address",
                          "for example http://127.0.0.1:8765")  # fmt: skip
    if token is None:
        return url.rstrip("/")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in token):
        raise FerrexError("bad_token", "the token holds a line break or another control "
                          "character", "copy the token again, without its line end")  # fmt: skip
    if parts.scheme == "http" and not _is_loopback(parts.hostname) and not allow_insecure_http:
        raise FerrexError(
            "insecure_url",
            f"the token would be sent in clear text over http:// to {parts.hostname}, "
            "which is not this machine",
            "use https:// (a TLS proxy in front of ferrex), or pass allow_insecure_http=True "
            "on a network you trust",
        )
    return url.rstrip("/")


class Client:
    """One ferrex server: ``url`` (``http://host:port``) and a bearer ``token`` (None for an
    open loopback server). A token goes over plain ``http://`` only to this machine unless
    ``allow_insecure_http``."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        allow_insecure_http: bool = False,
    ) -> None:
        self.url = _checked(url, token, allow_insecure_http)
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    # -- the tools ----------------------------------------------------------------------------

    def store(
        self, content: str | None = None, *, idempotency_key: str | None = None, **fields: Any
    ) -> StoreAnswer:
        """Store one memory: ``content`` for an event, or the store tool's other fields
        (``subject``/``predicate``/``object``, ``name``/``steps``, ``entities``,
        ``visibility``, …)."""
        body = {"content": content, **fields} if content is not None else dict(fields)
        return cast(StoreAnswer, self._write("POST", "/api/v1/memories", body, idempotency_key))

    def store_many(
        self, memories: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> BatchAnswer:
        """Store a batch (at most 100): ``{"results": [...], "stored": n, "failed": m}``, one
        result per memory in order; a refused or invalid one is ``{"index", "error"}`` and
        does not stop the others."""
        body = {"memories": [dict(m) for m in memories]}
        return cast(BatchAnswer, self._write("POST", "/api/v1/memories", body, idempotency_key))

    def recall(self, query: str, **options: Any) -> RecallAnswer:
        """Recall: the recall tool's options (``limit``, ``types``, ``entities``, ``as_of``,
        ``strategy``, ``explain``, …)."""
        body = {"query": query, **options}
        return cast(RecallAnswer, self._request("POST", "/api/v1/recall", body, None))

    def forget(
        self, memory_id: str, *, cascade: bool = False, idempotency_key: str | None = None
    ) -> ForgetAnswer:
        """Forget one memory (``cascade``: drop entities no longer mentioned too)."""
        path = f"/api/v1/memories/{quote(memory_id, safe='')}"
        if cascade:
            path += "?" + urlencode({"cascade": "true"})
        return cast(ForgetAnswer, self._write("DELETE", path, None, idempotency_key))

    def confirm(
        self,
        ids: Sequence[str],
        *,
        pinned: bool | None = None,
        importance: float | None = None,
        idempotency_key: str | None = None,
    ) -> ConfirmAnswer:
        """Confirm memories as still correct; optionally pin them or set their importance."""
        body: dict[str, Any] = {"ids": list(ids)}
        if pinned is not None:
            body["pinned"] = pinned
        if importance is not None:
            body["importance"] = importance
        return cast(ConfirmAnswer, self._write("POST", "/api/v1/confirm", body, idempotency_key))

    def stats(self, namespace: str | None = None) -> Stats:
        """Counts, the latest memories, what needs attention."""
        return cast(Stats, self._get("/api/v1/stats", namespace=namespace))

    def reflect(self, namespace: str | None = None, limit: int | None = None) -> Reflect:
        """What needs attention: stale, never confirmed, contradicted, rarely used memories."""
        return cast(Reflect, self._get("/api/v1/reflect", namespace=namespace, limit=limit))

    def list(self, *, cursor: str | None = None, **filters: Any) -> MemoryPage:
        """One page of memories, ``{"memories": [...], "next_cursor": str | None}``; pass
        ``next_cursor`` back as ``cursor`` for the next page. Filters: ``limit``, ``sort``
        (``-created``, ``created``, ``-valid_from``, ``valid_from``), ``types`` (a list),
        ``namespace``, ``entity``, ``source``, ``visibility``, ``state`` (``current``,
        ``superseded``, ``all``), ``after``, ``before`` (ISO 8601), ``tag`` (a list: memories
        holding every one in their context's tags), ``context`` (a list of ``KEY:VALUE``)."""
        return cast(MemoryPage, self._get("/api/v1/memories", cursor=cursor, **filters))

    def memory(self, memory_id: str) -> MemoryDetail:
        """One memory as the caller may see it."""
        path = f"/api/v1/memory/{quote(memory_id, safe='')}"
        return cast(MemoryDetail, self._request("GET", path, None, None))

    def history(self, memory_id: str) -> History:
        """A memory's versions, oldest first (what it replaced and what replaced it)."""
        path = f"/api/v1/history/{quote(memory_id, safe='')}"
        return cast(History, self._request("GET", path, None, None))

    def entities(self, prefix: str | None = None, offset: int | None = None) -> EntityNames:
        """The entity names the caller may see, a page at a time, optionally by prefix."""
        return cast(EntityNames, self._get("/api/v1/entities", prefix=prefix, offset=offset))

    def entity(self, name: str, offset: int | None = None) -> Entity:
        """One entity by any spelling: its spellings, its memories, its neighbours."""
        return cast(Entity, self._get("/api/v1/entities", name=name, offset=offset))

    def tags(
        self,
        key: str | None = None,
        *,
        namespace: str | None = None,
        state: str | None = None,
        limit: int | None = None,
    ) -> TagCounts:
        """The tags (the values of context key ``key``, ``tags`` by default) of the memories
        the caller sees, with how many hold each, most first."""
        found = self._get("/api/v1/tags", key=key, namespace=namespace, state=state, limit=limit)
        return cast(TagCounts, found)

    def changes(
        self,
        after: int | None = None,
        *,
        until_idle: bool = False,
        reconnect: bool = True,
    ) -> Iterator[ChangeEvent]:
        """The change stream: each journal record that changed memories the caller sees, as
        it comes (``after``: from this position; None: from now on). With ``until_idle`` it
        ends once caught up; otherwise it runs until the caller stops, reconnecting after a
        lost connection from the last position read (``Last-Event-ID``) unless
        ``reconnect`` is False."""
        position = after
        attempt = 0
        while True:
            params: dict[str, str] = {"until_idle": "true"} if until_idle else {}
            headers = {"Accept": "text/event-stream"}
            if position is not None:
                headers["Last-Event-ID"] = str(position)
            try:
                for name, event_id, data in self._events("/api/v1/changes", params, headers):
                    attempt = 0
                    if event_id is not None and event_id.isdigit():
                        position = int(event_id)
                    if name == "change":
                        yield cast(ChangeEvent, json.loads(data))
                    elif name == "error":
                        raise _error(data.encode(), 200)
                if until_idle:
                    return
            except FerrexError as exc:
                if exc.code != "connection_failed" or not reconnect or until_idle:
                    raise
            if not reconnect:
                return
            time.sleep(min(self.backoff * 2**attempt, 30.0))
            attempt += 1

    # -- HTTP ---------------------------------------------------------------------------------

    def _get(self, path: str, **params: Any) -> dict[str, Any]:
        """GET ``path`` with the parameters that are not None (a list: the name repeated)."""
        pairs: list[tuple[str, Any]] = []
        for name, value in params.items():
            if isinstance(value, (list, tuple)):
                pairs.extend((name, v) for v in value)
            elif isinstance(value, bool):
                pairs.append((name, "true" if value else "false"))
            elif value is not None:
                pairs.append((name, value))
        query = "?" + urlencode(pairs) if pairs else ""
        return self._request("GET", path + query, None, None)

    def _events(
        self, path: str, params: Mapping[str, str], headers: Mapping[str, str]
    ) -> Iterator[tuple[str, str | None, str]]:
        """(event name, id, data) of a server-sent-events answer, as they arrive."""
        sent = dict(headers)
        if self.token is not None:
            sent["Authorization"] = f"Bearer {self.token}"
        url = self.url + path + ("?" + urlencode(params) if params else "")
        request = urllib.request.Request(url, headers=sent, method="GET")
        try:
            response = _OPENER.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            raise _error(exc.read(), exc.code) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FerrexError("connection_failed", f"GET {url} failed: {reason}") from exc
        with response:
            name, event_id = "message", None
            data: list[str] = []
            try:
                for raw in response:
                    line = raw.decode("utf-8").rstrip("\r\n")
                    if not line:
                        if data:
                            yield name, event_id, "\n".join(data)
                        name, data = "message", []
                        continue
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "event":
                        name = value
                    elif field == "data":
                        data.append(value)
                    elif field == "id":
                        event_id = value
            except (http.client.HTTPException, OSError) as exc:
                raise FerrexError("connection_failed", f"the stream {url} broke: {exc}") from exc

    def _write(
        self, method: str, path: str, body: Any, idempotency_key: str | None
    ) -> dict[str, Any]:
        return self._request(method, path, body, idempotency_key or str(uuid.uuid4()))

    def _request(self, method: str, path: str, body: Any, key: str | None) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            request = urllib.request.Request(
                self.url + path, data=data, headers=headers, method=method
            )
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    return _document(response.read(), response.status)
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                if exc.code not in RETRY_STATUSES or attempt >= self.retries:
                    raise _error(raw, exc.code) from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                if attempt >= self.retries:
                    reason = getattr(exc, "reason", exc)
                    raise FerrexError(
                        "connection_failed",
                        f"{method} {self.url}{path} failed: {reason}",
                        "is the server running (ferrex serve --http HOST:PORT)?",
                    ) from exc
            time.sleep(self.backoff * 2**attempt)
            attempt += 1


def _document(raw: bytes, status: int) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except ValueError:
        raise FerrexError("bad_answer", f"the server's answer ({status}) is not JSON") from None
    if not isinstance(doc, dict):
        raise FerrexError("bad_answer", f"the server's answer ({status}) is not an object")
    return doc


def _error(raw: bytes, status: int) -> FerrexError:
    try:
        doc = json.loads(raw)
        error = doc["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = raw[:200].decode(errors="replace")
        return FerrexError("http_error", f"HTTP {status}: {text}", status=status)
    hint = error.get("hint")
    details = {k: v for k, v in error.items() if k not in ("code", "message", "hint", "kind")}
    return FerrexError(code, message, hint if isinstance(hint, str) else None, status=status,
                       details=details)  # fmt: skip
