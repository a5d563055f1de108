"""MCP over stdio, where a line that is not a JSON-RPC message gets an answer.

The SDK's stdio transport hands such a line to the session as an exception, and the session
drops it: a client that sent a broken frame (bad JSON, a lone surrogate, nesting too deep)
then waits for an answer that never comes. Here the reader answers it as JSON-RPC asks: an
error with ``"id": null``, -32700 when the line is not JSON, -32600 when it is JSON but not
a message, and logs the first such line once (never its content, which may be private).
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.shared._stream_protocols import ReadStream, WriteStream

    from ferrex.server.mcp_server import FerrexMCP

log = logging.getLogger("ferrex.stdio")


def bad_frame_answer(exc: Exception) -> SessionMessage:
    """The JSON-RPC error for a line the transport could not read as a message."""
    not_json = isinstance(exc, ValidationError) and any(
        e["type"] == "json_invalid" for e in exc.errors()
    )
    if not_json:
        error = ErrorData(code=PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        error = ErrorData(code=INVALID_REQUEST, message="Invalid Request: not a JSON-RPC message")
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=error))


class AnsweringBadFrames:
    """A read stream that answers unreadable lines itself and passes the rest on."""

    def __init__(
        self,
        inner: ReadStream[SessionMessage | Exception],
        answer: WriteStream[SessionMessage],
    ) -> None:
        self.inner = inner
        self.answer = answer
        self.bad_frames = 0

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item
            self.bad_frames += 1
            if self.bad_frames == 1:
                log.warning("answered a line on stdin that is not a JSON-RPC message (%s); "
                            "further ones are answered without a log line",
                            type(item).__name__)  # fmt: skip
            await self.answer.send(bad_frame_answer(item))

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def run_stdio(server: FerrexMCP) -> None:
    """Serve ``server`` on this process's stdin and stdout until stdin closes."""

    async def main() -> None:
        lowlevel = server._lowlevel_server
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(
                AnsweringBadFrames(read_stream, write_stream),
                write_stream,
                lowlevel.create_initialization_options(),
            )

    anyio.run(main)
