"""MCP over stdio: ferrex's own framing, where every line gets a message or an answer.

The wire is newline-delimited JSON-RPC. Here the bytes of stdin become lines in one place
(:class:`LineSplitter`), split only at ``\\n`` and never by where a read happened to end,
and each line becomes one thing (:func:`read_frame`): a message for the session, an error
to answer at once, or nothing (a blank line). A line that is not a JSON-RPC message is
answered as JSON-RPC asks, an error with ``"id": null``:

- -32700 when it is not JSON (or not UTF-8, or nested too deep);
- -32600 when it is JSON but not a message, when a request's ``id`` is not a string or an
  integer (the SDK would read such a request as a notification and never answer it), and
  when the line is longer than :data:`MAX_LINE_BYTES` (its bytes are dropped as they come,
  never held).

A ``tools/call`` request whose ``arguments`` is not an object gets -32602 with its own id and
a message that says so (the SDK's answer says only "Invalid request parameters"). Over HTTP
the SDK's answer stands.

The first such line is logged once, by kind, never its content (which may be private).
Answers to bad lines go out in the order of the lines; the line after a bad one is read as
if the bad one had never been there.

What the process does beyond answering (electing the data directory's owner, loading the
models) waits for the handshake (:class:`Handshake`): it starts once the answer to
``initialize`` has been written and the client has sent something after ``initialize``
(normally ``notifications/initialized``), so none of it slows that first answer; a process
whose client sends no ``initialize`` at all starts it after :data:`UNHEARD_SECONDS`.

While it serves, fd 0 reads the null device and fd 1 writes to stderr (the wire is on
private duplicates), so a library or child process that prints cannot corrupt the protocol.
stdin is read on a daemon thread, so a read that never returns cannot hold the process up.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pydantic_core
from anyio.lowlevel import EventLoopToken
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream

    from ferrex.server.mcp_server import FerrexMCP

log = logging.getLogger("ferrex.stdio")

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line read as a message (the same bound as an HTTP request's body)."""

_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class OverLong:
    """A line longer than the limit: its bytes were dropped, only its length is known."""

    size: int


class LineSplitter:
    """Bytes in, whole lines out (without their ``\\n``), however the bytes were cut.

    A line longer than ``limit`` bytes comes out as :class:`OverLong` at its newline; its
    bytes are dropped as they arrive, so it costs no memory.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._pending = bytearray()
        self._dropped = 0  # bytes of the current line dropped so far (it is over-long)

    def feed(self, data: bytes) -> list[bytes | OverLong]:
        lines: list[bytes | OverLong] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            self._take(piece)
            if end < 0:
                return lines
            lines.append(self._line())
            start = end + 1

    def end(self) -> list[bytes | OverLong]:
        """What is left at the end of input: a last line without its newline, if any."""
        if not self._pending and not self._dropped:
            return []
        return [self._line()]

    def _take(self, piece: bytes) -> None:
        if self._dropped:
            self._dropped += len(piece)
        elif len(self._pending) + len(piece) > self.limit:
            self._dropped = len(self._pending) + len(piece)
            self._pending.clear()
        else:
            self._pending += piece

    def _line(self) -> bytes | OverLong:
        line = OverLong(self._dropped) if self._dropped else bytes(self._pending)
        self._pending.clear()
        self._dropped = 0
        return line


@dataclass(frozen=True)
class BadLine:
    """A line that is not a JSON-RPC message: what to answer, and its kind for the log."""

    code: int
    message: str
    kind: str
    request_id: str | int | None = None
    """The id of a request read whole whose parameters are refused; None for a bad line."""

    def answer(self) -> SessionMessage:
        error = ErrorData(code=self.code, message=self.message)
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=self.request_id, error=error))


def read_frame(line: bytes | OverLong) -> SessionMessage | BadLine | None:
    """One line of stdin as a message, a bad line to answer, or None (a blank line).

    A ``\\r`` before the newline is allowed (CRLF); no other byte ends a line.
    """
    if isinstance(line, OverLong):
        return BadLine(INVALID_REQUEST, f"Invalid Request: the line is longer than "
                       f"{MAX_LINE_BYTES} bytes", "over-long")  # fmt: skip
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line.strip(b" \t\r"):
        return None
    not_json = BadLine(PARSE_ERROR, "Parse error: the line is not valid JSON", "not JSON")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return not_json
    try:
        message = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return not_json
        return BadLine(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message",
                       "not a message")  # fmt: skip
    if isinstance(message, JSONRPCNotification) and id_refused(pydantic_core.from_json(text)):
        return BadLine(INVALID_REQUEST, BAD_ID, "bad id")
    if isinstance(message, JSONRPCRequest) and message.method == "tools/call":
        given = (message.params or {}).get("arguments")
        if given is not None and not isinstance(given, dict):
            # The SDK answers "Invalid request parameters" and nothing more.
            return BadLine(INVALID_PARAMS, "Invalid params: arguments must be an object of the "
                           f"tool's named arguments, not {_json_kind(given)}", "bad arguments",
                           message.id)  # fmt: skip
    return SessionMessage(message)


def _json_kind(value: object) -> str:
    """What a JSON value is, as its reader would name it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"


BAD_ID = "Invalid Request: the id must be a string or an integer"


def id_refused(raw: object) -> bool:
    """Whether ``raw`` (a parsed JSON-RPC message) is a request whose id is null, a float, a
    boolean, an object or an array. The SDK reads such a request as a notification and never
    answers it; JSON-RPC asks for -32600."""
    if not isinstance(raw, dict) or "method" not in raw or "id" not in raw:
        return False
    request_id = raw["id"]
    return isinstance(request_id, bool) or not isinstance(request_id, str | int)


UNHEARD_SECONDS = 2.0
"""A server whose client has not sent ``initialize`` this long after it began serving starts
what follows the handshake anyway (the election: a process started to own the stores for
others, a client that never initializes). A client's ``initialize`` stops the clock."""


class Handshake:
    """Runs ``then`` once, when the answer to ``initialize`` has gone out and the client has
    sent a message after its ``initialize`` request (the ``initialized`` notification, or a
    request of a client that skips it), or at :meth:`unheard` if no ``initialize`` came.
    Messages before ``initialize`` (a ping) count for nothing; an error answer to
    ``initialize`` leaves the handshake unfinished."""

    def __init__(self, then: Callable[[], None] | None) -> None:
        self._then = then
        self._lock = threading.Lock()
        self._request: JSONRPCRequest | None = None
        self._answered = False
        self._spoke_after = False

    def received(self, message: JSONRPCMessage) -> None:
        with self._lock:
            if self._request is None:
                if isinstance(message, JSONRPCRequest) and message.method == "initialize":
                    self._request = message
                return
            self._spoke_after = True
        self._maybe_done()

    def sent(self, message: JSONRPCMessage) -> None:
        with self._lock:
            request = self._request
            if request is None or not isinstance(message, JSONRPCResponse):
                return
            if message.id != request.id:
                return
            self._answered = True
        self._maybe_done()

    def unheard(self) -> None:
        """The client's time to send ``initialize`` is up (:data:`UNHEARD_SECONDS`)."""
        with self._lock:
            if self._request is not None:
                return
            self._answered = self._spoke_after = True
        self._maybe_done()

    def _maybe_done(self) -> None:
        with self._lock:
            if not (self._answered and self._spoke_after) or self._then is None:
                return
            then, self._then = self._then, None
        then()


class _Wire:
    """The protocol's own descriptors, with fd 0 and fd 1 diverted while it serves."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = 0, 1
        self.diverted = False
        try:
            read_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
            write_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
            null = os.open(os.devnull, os.O_RDONLY)
        except OSError:  # a closed standard descriptor: serve on them as they are
            return
        self.read_fd, self.write_fd = read_fd, write_fd
        try:
            os.dup2(null, 0)
            os.dup2(2, 1)
            self.diverted = True
        except OSError:
            self.restore()
        finally:
            os.close(null)

    def restore(self) -> None:
        # The duplicates stay open: the reading thread may still be blocked on one.
        if self.read_fd != 0:
            os.dup2(self.write_fd, 1)
            os.dup2(self.read_fd, 0)


class _Reader:
    """Turns the wire's bytes into messages for the session and answers bad lines."""

    def __init__(
        self,
        messages: ContextSendStream[SessionMessage | Exception],
        answers: ContextSendStream[SessionMessage],
        handshake: Handshake,
    ) -> None:
        self.messages = messages
        self.answers = answers
        self.handshake = handshake
        self.bad_lines = 0

    async def run(self, chunks: MemoryObjectReceiveStream[bytes]) -> None:
        splitter = LineSplitter()
        async with self.messages, chunks:
            async for data in chunks:
                await self._lines(splitter.feed(data))
            await self._lines(splitter.end())

    async def _lines(self, lines: list[bytes | OverLong]) -> None:
        for line in lines:
            frame = read_frame(line)
            if isinstance(frame, SessionMessage):
                self.handshake.received(frame.message)
                await self.messages.send(frame)
            elif isinstance(frame, BadLine):
                self.bad_lines += 1
                if self.bad_lines == 1:
                    log.warning("answered a line on stdin that could not be served (%s); "
                                "further ones are answered without a log line",
                                frame.kind)  # fmt: skip
                await self.answers.send(frame.answer())


def _read_wire(fd: int, chunks: MemoryObjectSendStream[bytes], token: EventLoopToken) -> None:
    """The reading thread: hands each read to the loop, closes ``chunks`` at end of input."""
    try:
        while data := _read_some(fd):
            anyio.from_thread.run(chunks.send, data, token=token)
    except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return  # the server stopped first
    with contextlib.suppress(RuntimeError):
        anyio.from_thread.run(chunks.aclose, token=token)


def _read_some(fd: int) -> bytes:
    """One read of the wire; ``b""`` only at the end of input (or a descriptor that cannot
    be read at all, logged). A descriptor whose open file description is non-blocking (the
    flag is shared with whoever else holds it: the client, a parent) says EAGAIN whenever the
    pipe is empty for a moment, which is no end of input: wait until it can be read."""
    while True:
        try:
            return os.read(fd, _READ_SIZE)
        except BlockingIOError:
            _wait(fd, select.POLLIN)
        except OSError as exc:
            log.warning("reading stdin failed (%s); taken as the end of input", exc)
            return b""


def _wait(fd: int, event: int) -> None:
    """Until ``fd`` is ready for ``event`` (or hung up, or in error: the next read or write
    tells which)."""
    poller = select.poll()
    poller.register(fd, event)
    poller.poll()


async def _write_wire(
    fd: int, answers: ContextReceiveStream[SessionMessage], handshake: Handshake
) -> None:
    gone = False
    async with answers:
        async for item in answers:
            if gone:
                continue  # the client stopped reading: drain, so no sender blocks
            data = (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()
            try:
                await anyio.to_thread.run_sync(_write_all, fd, data)
            except OSError as exc:
                if not isinstance(exc, BrokenPipeError):  # the client closed its end: no news
                    log.warning("writing stdout failed (%s); no more answers are sent", exc)
                gone = True
                continue
            handshake.sent(item.message)


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data``, waiting while the pipe is full if the descriptor is non-blocking
    (EAGAIN is a client that reads slowly, not one that left)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            _wait(fd, select.POLLOUT)


def run_stdio(server: FerrexMCP, after_handshake: Callable[[], None] | None = None) -> None:
    """Serve ``server`` on this process's stdin and stdout until stdin closes;
    ``after_handshake`` runs once the client has its ``initialize`` answer, or has sent none
    for :data:`UNHEARD_SECONDS` (:class:`Handshake`)."""

    async def main() -> None:
        lowlevel = server._lowlevel_server
        handshake = Handshake(after_handshake)
        unheard = threading.Timer(UNHEARD_SECONDS, handshake.unheard)
        unheard.daemon = True
        wire = _Wire()
        try:
            unheard.start()
            to_session, from_wire = create_context_streams[SessionMessage | Exception](0)
            to_wire, from_session = create_context_streams[SessionMessage](0)
            chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](4)
            reader = _Reader(to_session, to_wire, handshake)
            token = anyio.lowlevel.current_token()
            threading.Thread(target=_read_wire, args=(wire.read_fd, chunks_in, token),
                             name="ferrex-stdin", daemon=True).start()  # fmt: skip
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(reader.run, chunks_out)
                tasks.start_soon(_write_wire, wire.write_fd, from_session, handshake)
                await lowlevel.run(from_wire, to_wire, lowlevel.create_initialization_options())
        finally:
            unheard.cancel()
            wire.restore()

    anyio.run(main)
