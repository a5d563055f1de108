"""HTTP: a request whose JSON-RPC ``id`` is not a string or an integer gets -32600.

The SDK's Streamable HTTP transport reads ``{"jsonrpc": "2.0", "id": {}, "method": ...}`` as a
notification (its id does not fit a request) and answers 202 with nothing: the caller never
learns its request was not run. This ASGI wrapper answers such a POST to the MCP path as the
SDK answers other bad bodies (400, a JSON-RPC error with ``"id": null``), with the same rule
as stdio (:func:`ferrex.server.mcp_stdio.id_refused`); every other request goes on unchanged.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pydantic_core
from mcp_types import INVALID_REQUEST

from ferrex.server.mcp_stdio import BAD_ID, MAX_LINE_BYTES, id_refused

log = logging.getLogger("ferrex.mcp")

Message = dict[str, Any]


class RefusingBadIds:
    """ASGI middleware in front of the app that serves MCP at ``path``."""

    def __init__(self, app: Any, path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self._logged = False

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or scope.get("path", "").rstrip("/") != self.path
        ):
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        body = bytearray()
        whole = False
        while len(body) <= MAX_LINE_BYTES:  # a larger body is the SDK's to refuse
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                whole = True
                break
        if whole and _refused(bytes(body)):
            if not self._logged:
                self._logged = True
                log.warning("answered an HTTP request whose id is not a string or an integer; "
                            "further ones are answered without a log line")  # fmt: skip
            await _answer_invalid_request(send)
            return
        replay = iter(received)

        async def receive_again() -> Message:
            for message in replay:
                return message
            message = await receive()
            return dict(message)

        await self.app(scope, receive_again, send)


def _refused(body: bytes) -> bool:
    try:
        raw = pydantic_core.from_json(body)
    except ValueError:
        return False  # not JSON: the SDK answers -32700
    return id_refused(raw)


async def _answer_invalid_request(send: Any) -> None:
    document = {"jsonrpc": "2.0", "id": None,
                "error": {"code": INVALID_REQUEST, "message": BAD_ID}}  # fmt: skip
    payload = json.dumps(document).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(payload)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": payload})
