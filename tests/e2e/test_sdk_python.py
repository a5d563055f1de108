"""The Python SDK (sdk/python, standard library only) against a real ``ferrex serve --http``:
every method, errors as one exception class, privacy, and a write retried after its answer
was lost stored once (through a loopback proxy that drops the first answer)."""

from __future__ import annotations

import contextlib
import http.server
import socket
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.api_helpers import ALICE, BOB, Server, serve_http

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python"))

from ferrex_client import Client, FerrexError


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_http(tmp_path_factory.mktemp("sdk-python") / "home") as served:
        yield served


def test_store_recall_confirm_forget_stats(server: Server) -> None:
    alice = Client(server.url, ALICE)
    stored = alice.store("On 2026-10-14 Priya moved the ledger-db backups to bucket cold-7",
                         entities=["Priya", "ledger-db"], visibility="shared")  # fmt: skip
    assert stored["status"] == "stored" and stored["id"].startswith("mem_")
    fact = alice.store(subject="ledger-db", predicate="runs", object="PostgreSQL 16")
    assert fact["type"] == "semantic"
    found = alice.recall("where are the ledger-db backups?", limit=3)
    assert found["results"][0]["id"] == stored["id"]
    confirmed = alice.confirm([stored["id"]], pinned=True)
    assert confirmed["validated"] == [stored["id"]] and confirmed["marked"] == [stored["id"]]
    assert alice.memory(stored["id"])["pinned"] is True
    before = Client(server.url, server.operator).stats()["total"]
    forgotten = alice.forget(fact["id"], cascade=True)
    assert forgotten["forgotten"] == [fact["id"]]
    assert Client(server.url, server.operator).stats()["total"] == before - 1


def test_errors_carry_code_message_hint_and_status(server: Server) -> None:
    alice = Client(server.url, ALICE)
    with pytest.raises(FerrexError) as bad:
        alice.store(contnt="a typo")
    assert bad.value.code == "invalid_input" and bad.value.status == 400
    assert "contnt" in bad.value.message and bad.value.hint and "content" in bad.value.hint
    assert bad.value.details["fields"] == ["contnt"]
    with pytest.raises(FerrexError) as empty:
        alice.store()
    assert empty.value.code == "invalid_input"
    with pytest.raises(FerrexError) as nobody:
        Client(server.url, "wrong-token").stats()
    assert (nobody.value.code, nobody.value.status) == ("unauthorized", 401)
    with pytest.raises(FerrexError) as missing:
        alice.forget("mem_00000000000000000000000000")
    assert (missing.value.code, missing.value.status) == ("not_found", 404)
    stored = alice.store("The release train leaves every second Tuesday", visibility="shared")
    with pytest.raises(FerrexError) as dup:
        alice.store("The release train leaves every second Tuesday", visibility="shared")
    assert (dup.value.code, dup.value.status) == ("duplicate", 409)
    assert dup.value.details["ids"] == [stored["id"]]


def test_store_many_reports_each_item(server: Server) -> None:
    doc = Client(server.url, ALICE).store_many([
        {"content": "Batch: the CDN purges at 04:00 UTC"},
        {"content": ["not", "text"]},
        {"name": "rotate the CDN keys", "steps": ["make new keys", "deploy", "revoke old"]},
    ])  # fmt: skip
    assert (doc["stored"], doc["failed"]) == (2, 1)
    assert doc["results"][1]["error"]["code"] == "invalid_input"
    assert doc["results"][2]["type"] == "procedural"


def test_another_agent_cannot_see_or_forget_a_private_memory(server: Server) -> None:
    alice, bob = Client(server.url, ALICE), Client(server.url, BOB)
    secret = alice.store("Alice only: the Wombat-Four staging password is in the blue vault")
    assert secret["id"] in [r["id"] for r in alice.recall("Wombat-Four password")["results"]]
    assert secret["id"] not in [r["id"] for r in bob.recall("Wombat-Four password")["results"]]
    with pytest.raises(FerrexError) as refused:
        bob.forget(secret["id"])
    assert refused.value.code == "not_found"
    assert alice.memory(secret["id"])["id"] == secret["id"]


class _DropFirstAnswer(socketserver.ThreadingTCPServer):
    """A loopback proxy: forwards each request to ``upstream`` and relays the answer, except
    the first, which it drops (closes the connection) after the server has answered it."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: tuple[str, int]) -> None:
        super().__init__(("127.0.0.1", 0), _Relay)
        self.upstream = upstream
        self.requests: list[bytes] = []
        self.lock = threading.Lock()


class _Relay(socketserver.BaseRequestHandler):
    server: _DropFirstAnswer

    def handle(self) -> None:
        raw = _read_request(self.request)
        with self.server.lock:
            self.server.requests.append(raw)
            first = len(self.server.requests) == 1
        with socket.create_connection(self.server.upstream, timeout=120) as up:
            up.sendall(raw)
            answer = b""
            while chunk := up.recv(65536):
                answer += chunk
        if not first:
            self.request.sendall(answer)
        # the first: the write was done, its answer is lost on the way back


def _read_request(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_a_write_whose_answer_was_lost_is_retried_with_its_key_and_stored_once(
    server: Server,
) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    proxy = _DropFirstAnswer((host, int(port)))
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        operator = Client(server.url, server.operator)
        before = operator.stats()["total"]
        through = Client(f"http://127.0.0.1:{proxy.server_address[1]}", ALICE, backoff=0)
        stored = through.store("Retried: the metrics retention is 400 days", visibility="shared")
        assert stored["status"] == "stored"
        assert operator.stats()["total"] == before + 1
        keys = [_header(r, b"idempotency-key") for r in proxy.requests]
        assert len(keys) == 2 and keys[0] == keys[1] and keys[0]
        # a new call is a new key: the same text again is the tool's duplicate refusal
        with pytest.raises(FerrexError) as dup:
            Client(server.url, ALICE).store("Retried: the metrics retention is 400 days",
                                            visibility="shared")  # fmt: skip
        assert dup.value.code == "duplicate"
    finally:
        proxy.shutdown()
        proxy.server_close()


def _header(raw: bytes, name: bytes) -> bytes | None:
    for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def test_an_unreachable_server_is_a_connection_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        with pytest.raises(FerrexError) as failed:
            Client(f"http://127.0.0.1:{port}", "t", retries=1, backoff=0).stats()
    assert failed.value.code == "connection_failed" and failed.value.status is None


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Another host's server: answers 200 to anything and keeps each request's headers."""

    seen: list[tuple[str, str | None]]

    def _answer(self) -> None:
        self.seen.append((self.command, self.headers.get("Authorization")))
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = b'{"status": "stored", "id": "mem_FROM_ANOTHER_HOST"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Redirector(http.server.BaseHTTPRequestHandler):
    """The configured server, answering every request with a redirect to ``target``."""

    code = 302
    target = ""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(self.code)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def _serving(handler: type[http.server.BaseHTTPRequestHandler], host: str) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_token_never_reaches_the_other_host(code: int) -> None:
    seen: list[tuple[str, str | None]] = []
    recorder = type("Recorder", (_Recorder,), {"seen": seen})
    with _serving(recorder, "127.0.0.2") as other:
        redirector = type("Redirector", (_Redirector,), {"code": code, "target": other})
        with _serving(redirector, "127.0.0.1") as url:
            client = Client(url, "secret-token-123", retries=0)
            for call in (lambda: client.stats(), lambda: client.store("A note"),
                         lambda: client.forget("mem_X")):  # fmt: skip
                with pytest.raises(FerrexError) as refused:
                    call()
                assert refused.value.code == "redirected" and refused.value.status == code
                assert other in refused.value.message
    assert seen == []  # neither the token nor the request went to the other host


@pytest.mark.parametrize(
    "url",
    ["http://10.1.2.3:8765", "http://memory.example.com", "http://[2001:db8::1]:8765"],
)
def test_a_token_is_not_sent_in_clear_text_to_another_machine(url: str) -> None:
    with pytest.raises(FerrexError) as refused:
        Client(url, "secret-token-123")
    assert refused.value.code == "insecure_url"
    assert "https://" in (refused.value.hint or "")
    # Allowed when asked for, over https, without a token, and to this machine.
    Client(url, "secret-token-123", allow_insecure_http=True)
    Client(url.replace("http://", "https://"), "secret-token-123")
    Client(url)
    for local in ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765",
                  "http://127.3.4.5:1"):  # fmt: skip
        Client(local, "secret-token-123")


@pytest.mark.parametrize("token", ["abc\r\nX-Injected: 1", "abc\n", "a\tb", "a\x00b"])
def test_a_token_with_a_control_character_is_refused_clearly(token: str) -> None:
    with pytest.raises(FerrexError) as refused:
        Client("http://127.0.0.1:8765", token)
    assert refused.value.code == "bad_token" and token not in str(refused.value)


def test_an_address_that_is_not_http_is_refused() -> None:
    for url in ("ftp://127.0.0.1", "127.0.0.1:8765", "http://"):
        with pytest.raises(FerrexError) as refused:
            Client(url, "t")
        assert refused.value.code == "bad_url"


def test_list_pages_and_reflect(server: Server) -> None:
    alice = Client(server.url, ALICE)
    bob = Client(server.url, BOB)
    ids = {alice.store(f"Listing note {i}: queue-{i} drained at {i} o'clock",
                       visibility="shared", source="sdk-list")["id"] for i in range(5)}  # fmt: skip
    private = alice.store("Listing note: alice's private listing", source="sdk-list")["id"]
    seen: list[str] = []
    cursor = None
    while True:
        page = bob.list(cursor=cursor, source="sdk-list", limit=2, types=["episodic"])
        assert len(page["memories"]) <= 2
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert set(seen) == ids and len(seen) == 5 and private not in seen
    assert private in {
        m["id"] for m in alice.list(source="sdk-list", visibility="private")["memories"]
    }
    with pytest.raises(FerrexError) as refused:
        bob.list(sort="size")
    assert refused.value.code == "invalid_input"
    reflected = bob.reflect(limit=1)
    assert (
        set(reflected) >= {"counts", "stale", "unvalidated"} and len(reflected["unvalidated"]) <= 1
    )


def test_history_entities_tags_stats_and_the_change_stream(server: Server) -> None:
    alice, bob = Client(server.url, ALICE), Client(server.url, BOB)
    assert next(iter(alice.changes(until_idle=True)), None) is None  # from the head on
    before = bob.stats()["total"]
    fact = {"subject": "quillon-queue", "predicate": "runs on", "visibility": "shared",
            "entities": ["quillon-queue"], "context": {"tags": ["sdk-tagged"]}}  # fmt: skip
    old = alice.store(**fact, object="rabbitmq 3.12")
    new = alice.store(**fact, object="rabbitmq 3.13")
    private = alice.store("Alice only: quillon-queue's admin password moved",
                          context={"tags": ["sdk-tagged", "sdk-secret"]})  # fmt: skip
    versions = alice.history(new["id"])["versions"]
    assert [v["id"] for v in versions] == [old["id"], new["id"]]
    assert [v["current"] for v in versions] == [False, True]
    assert "quillon-queue" in bob.entities(prefix="quill")["names"]
    assert bob.entity("quillon-queue")["memories"][0]["id"] == new["id"]
    assert bob.tags()["tags"] == [{"value": "sdk-tagged", "count": 1}]
    assert {t["value"] for t in alice.tags()["tags"]} == {"sdk-tagged", "sdk-secret"}
    assert [m["id"] for m in bob.list(tag=["sdk-tagged"])["memories"]] == [new["id"]]
    assert bob.stats()["total"] == before + 1  # the current fact; the private one is alice's
    assert set(bob.reflect(limit=2)["counts"]) >= {"stale", "unvalidated", "conflicts"}
    # the change stream from the record before the first store: bob hears of the shared
    # ones, alice of her private one too
    first = next(c for c in alice.changes(after=0, until_idle=True)
                 if any(m["id"] == old["id"] for m in c["memories"]))  # fmt: skip
    since = first["position"] - 1
    heard = [(m["id"], m["change"]) for c in bob.changes(after=since, until_idle=True)
             for m in c["memories"]]  # fmt: skip
    assert (old["id"], "stored") in heard and (new["id"], "stored") in heard
    assert (old["id"], "superseded") in heard
    assert private["id"] not in {i for i, _ in heard}
    mine = {m["id"] for c in alice.changes(after=since, until_idle=True) for m in c["memories"]}
    assert private["id"] in mine
    with pytest.raises(FerrexError) as bad:
        next(iter(bob.changes(after=-1, until_idle=True)))
    assert bad.value.code == "invalid_input" and bad.value.status == 400
