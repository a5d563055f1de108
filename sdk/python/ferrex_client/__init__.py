"""A client for ferrex's HTTP API, with nothing but the standard library.

    from ferrex_client import Client, FerrexError

    client = Client("http://127.0.0.1:8765", token="…")
    stored = client.store("On 2026-11-02 Ana deployed api-server v2.3", entities=["Ana"])
    found = client.recall("who deployed api-server?", limit=3)
    client.confirm([stored["id"]], pinned=True)
    client.forget(stored["id"])

Every method returns the tool's answer (a dict, as the MCP tool gives it) or raises
:class:`FerrexError` carrying the server's ``code``, ``message`` and ``hint``.

Writes (store, store_many, forget, confirm) send an ``Idempotency-Key`` made once per call and
sent again on each retry, so a write retried after a lost answer is done once. A request is
retried (``retries`` times, waiting ``backoff`` seconds, doubled each time) when the
connection fails or the server answers 503; any other answer is final.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

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


class Client:
    """One ferrex server: ``url`` (``http://host:port``) and a bearer ``token`` (None for an
    open loopback server)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    # -- the tools ----------------------------------------------------------------------------

    def store(
        self, content: str | None = None, *, idempotency_key: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        """Store one memory: ``content`` for an event, or the store tool's other fields
        (``subject``/``predicate``/``object``, ``name``/``steps``, ``entities``,
        ``visibility``, …)."""
        body = {"content": content, **fields} if content is not None else dict(fields)
        return self._write("POST", "/api/v1/memories", body, idempotency_key)

    def store_many(
        self, memories: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Store a batch (at most 100): ``{"results": [...], "stored": n, "failed": m}``, one
        result per memory in order; a refused or invalid one is ``{"index", "error"}`` and
        does not stop the others."""
        body = {"memories": [dict(m) for m in memories]}
        return self._write("POST", "/api/v1/memories", body, idempotency_key)

    def recall(self, query: str, **options: Any) -> dict[str, Any]:
        """Recall: the recall tool's options (``limit``, ``types``, ``entities``, ``as_of``,
        ``strategy``, ``explain``, …)."""
        return self._request("POST", "/api/v1/recall", {"query": query, **options}, None)

    def forget(
        self, memory_id: str, *, cascade: bool = False, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Forget one memory (``cascade``: drop entities no longer mentioned too)."""
        path = f"/api/v1/memories/{quote(memory_id, safe='')}"
        if cascade:
            path += "?" + urlencode({"cascade": "true"})
        return self._write("DELETE", path, None, idempotency_key)

    def confirm(
        self,
        ids: Sequence[str],
        *,
        pinned: bool | None = None,
        importance: float | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Confirm memories as still correct; optionally pin them or set their importance."""
        body: dict[str, Any] = {"ids": list(ids)}
        if pinned is not None:
            body["pinned"] = pinned
        if importance is not None:
            body["importance"] = importance
        return self._write("POST", "/api/v1/confirm", body, idempotency_key)

    def stats(self, namespace: str | None = None) -> dict[str, Any]:
        """Counts, the latest memories, what needs attention."""
        query = "?" + urlencode({"namespace": namespace}) if namespace else ""
        return self._request("GET", "/api/v1/stats" + query, None, None)

    def memory(self, memory_id: str) -> dict[str, Any]:
        """One memory as the caller may see it."""
        return self._request("GET", f"/api/v1/memory/{quote(memory_id, safe='')}", None, None)

    # -- HTTP ---------------------------------------------------------------------------------

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
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
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
