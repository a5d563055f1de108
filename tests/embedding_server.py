"""A real HTTP server speaking the OpenAI-compatible embeddings protocol, on a loopback port.

It serves the bundled MiniLM through ferrex's own encoder, so its vectors are real; switches
make it answer 401, answer garbage of several kinds (numbers too large for a float among them),
serve other weights under the same name (``transform``), hang, trickle its answer, or die (at
once, or after a number of calls: mid-import).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from ferrex.models import Embedder

Mode = Literal[
    "ok",
    "unauthorized",
    "not_json",
    "wrong_count",
    "non_numeric",
    "ragged",
    "hang",
    "redirect",
    "trickle",
    "huge",
    "long_int",
]
Transform = Literal["none", "rolled", "truncated", "jittered"]


@dataclass
class Seen:
    model: str
    inputs: list[str]
    authorization: str | None
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class EmbeddingServer:
    """``with EmbeddingServer(embedder) as server: server.url`` (``…/v1``)."""

    embedder: Embedder
    key: str | None = None
    mode: Mode = "ok"
    transform: Transform = "none"
    die_after: int | None = None
    """Answer this many embedding calls, then die: the next call's connection is closed
    unanswered and the port stops listening."""
    trickle_pause: float = 0.4
    """``trickle``: the headers at once, then the body in 20 pieces this far apart (each
    read is quick; the whole answer is slow)."""
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _dying: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> EmbeddingServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Listen (again, on the same port once one was chosen)."""
        if self._dying is not None:  # the death of a die_after must be over first
            self._dying.join()
            self._dying = None
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._release.clear()
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening: connections are refused from now on."""
        self._release.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def calls(self) -> int:
        with self._lock:
            return len(self.seen)

    # -- what it answers --------------------------------------------------------------------

    def answer(self, body: dict[str, Any], authorization: str | None) -> tuple[int, bytes] | None:
        """Status and body, or None: die without answering."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        with self._lock:
            self.seen.append(Seen(str(body.get("model")), texts, authorization, body))
            count = len(self.seen)
        if self.die_after is not None and count > self.die_after:
            with self._lock:
                if self._dying is None:
                    self._dying = threading.Thread(target=self.stop, daemon=True)
                    self._dying.start()
            return None
        if self.key is not None and authorization != f"Bearer {self.key}":
            # Echoes what it was sent, as some servers do: ferrex must scrub it.
            return 401, json.dumps({"error": f"invalid api key: {authorization}"}).encode()
        match self.mode:
            case "unauthorized":
                return 401, json.dumps({"error": f"invalid api key: {authorization}"}).encode()
            case "not_json":
                return 200, b"<html>gateway says hi</html>"
            case "hang":
                self._release.wait()
                return None
            case _:
                pass
        vectors = self.vectors(texts)
        rows: list[list[Any]] = [[float(x) for x in row] for row in vectors]
        if self.mode == "wrong_count":
            rows = rows[:-1] if len(rows) > 1 else rows + rows
        elif self.mode == "non_numeric":
            rows[0][3] = "NaN"
        elif self.mode == "ragged":
            rows[0] = rows[0][:-1]
        elif self.mode == "huge":  # finite, but the norm overflows a float64
            rows = [[x * 1e300 for x in row] for row in rows]
        elif self.mode == "long_int":  # valid JSON, no float64 holds it
            rows[0][0] = 10**400
        data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
        data.reverse()  # the index, not the order, says which text a vector is for
        doc = {"object": "list", "model": body.get("model"), "data": data}
        return 200, json.dumps(doc).encode()

    def vectors(self, texts: list[str]) -> np.ndarray[Any, Any]:
        vectors = self.embedder.embed_many(texts).astype(np.float64)
        if self.transform == "rolled":  # other weights: same dimension, other vectors
            vectors = np.roll(vectors, 1, axis=1)
        elif self.transform == "truncated":  # another model: another dimension
            vectors = vectors[:, :256]
        elif self.transform == "jittered":  # the same weights on a noisy GPU
            noise = np.random.default_rng(self.calls()).normal(scale=2e-4, size=vectors.shape)
            vectors = vectors + noise
        # Not normalised, as some servers answer: ferrex normalises.
        result: np.ndarray[Any, Any] = vectors * 3.0
        return result


def _handler(owner: EmbeddingServer) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, json.dumps({"error": f"no route {self.path}"}).encode())
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, b'{"error": "bad json"}')
                return
            if owner.mode == "redirect":
                self.send_response(302)
                self.send_header("Location", "http://203.0.113.9/v1/embeddings")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            answer = owner.answer(body, self.headers.get("Authorization"))
            if answer is None:
                self.close_connection = True
                return
            self._send(*answer)

        def _send(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if owner.mode != "trickle":
                self.wfile.write(payload)
                return
            self.wfile.flush()
            step = -(-len(payload) // 20)
            for start in range(0, len(payload), step):
                if owner._release.wait(owner.trickle_pause):
                    break  # the server stops
                try:
                    self.wfile.write(payload[start : start + step])
                    self.wfile.flush()
                except OSError:  # the client hung up
                    break
            self.close_connection = True

    return Handler
