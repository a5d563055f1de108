"""The hub's wire format (see :mod:`ferrex.server.hub`): frames of a 4-byte big-endian
length and that many bytes of a JSON object, and the versions a peer says in its hello.

Its own module, importing nothing heavy, so that a short-lived peer (the prompt hook's lean
path, :mod:`ferrex.hooks.lean`) can call the owner without loading the stores' code.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

from ferrex import __version__
from journal.version import FORMAT_VERSION

PROTOCOL = 2
"""The hub's request format; raised whenever a frame's fields or meaning change (2: a
connection opens with a hello that carries the token and the versions, once)."""
HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024
"""The largest frame once a connection has said hello (a store's text is far smaller; a
dump restored through a peer is sent in chunks)."""


class FrameTooLarge(ValueError):
    """A frame's header declares more bytes than the reader accepts (nothing else is read)."""


def send_frame(sock: socket.socket, doc: Mapping[str, Any]) -> None:
    payload = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    sock.sendall(HEADER.pack(len(payload)) + payload)


def recv_frame(
    sock: socket.socket,
    *,
    limit: int = MAX_FRAME,
    idle: float | None = None,
    within: float | None = None,
) -> dict[str, Any] | None:
    """The next frame, or None at a clean end of stream.

    A header declaring more than ``limit`` bytes raises :class:`FrameTooLarge` before any of
    the body is read. ``idle``: seconds to wait for the frame's first byte; ``within``:
    seconds for the whole frame from its first byte (a peer trickling bytes cannot hold a
    thread longer); either raises ``TimeoutError``. Without them the socket's own timeout
    applies to each read.
    """
    if idle is not None:
        sock.settimeout(idle)
    first = sock.recv(1)
    if not first:
        return None
    deadline = None if within is None else time.monotonic() + within
    (size,) = HEADER.unpack(first + _recv_exactly(sock, HEADER.size - 1, deadline))
    if size > limit:
        raise FrameTooLarge(f"frame of {size} bytes is larger than {limit}")
    doc = json.loads(_recv_exactly(sock, size, deadline))
    if not isinstance(doc, dict):
        raise ValueError("a frame must hold a JSON object")
    return doc


def _recv_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    """``size`` bytes, read as they arrive (memory grows with what was sent, not with what a
    header claims)."""
    chunks: list[bytes] = []
    left = size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the frame did not arrive in time")
            sock.settimeout(remaining)
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed inside a frame")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def versions() -> dict[str, object]:
    """What a peer says about itself in its hello."""
    return {"ferrex": __version__, "protocol": PROTOCOL, "journal": FORMAT_VERSION}
