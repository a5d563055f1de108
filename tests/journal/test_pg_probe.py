"""The probe that tells a PostgreSQL that refuses every session (starting up, shutting down,
full) from one that cannot be reached: it finds the server where libpq would, the URL's host
and port or else ``PGHOST`` and ``PGPORT`` (issue 46: it ignored ``PGHOST``). A server of a
few lines on a loopback port answers its start-up message as PostgreSQL does."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from journal.pg_connect import _AUTH, _server_answer


def _answering(reply: bytes) -> Iterator[tuple[int, list[bytes]]]:
    listener = socket.create_server(("127.0.0.1", 0))
    heard: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            (length,) = struct.unpack("!i", conn.recv(4))
            heard.append(conn.recv(length - 4))
            conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], heard
    finally:
        thread.join(timeout=10)
        listener.close()


def _error(sqlstate: str) -> bytes:
    body = b"SFATAL\0C" + sqlstate.encode() + b"\0Mthe database system is starting up\0\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


@pytest.fixture
def starting_up() -> Iterator[tuple[int, list[bytes]]]:
    yield from _answering(_error("57P03"))


@pytest.fixture
def asking_a_password() -> Iterator[tuple[int, list[bytes]]]:
    yield from _answering(b"R" + struct.pack("!ii", 8, 3))


def test_the_probe_goes_where_pghost_and_pgport_point(
    starting_up: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, heard = starting_up
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(port))
    monkeypatch.setenv("PGUSER", "ana")
    assert _server_answer("postgresql:///ferrex") == "57P03"
    assert heard[0].startswith(struct.pack("!i", 3 << 16))
    assert b"user\0ana\0database\0ferrex\0" in heard[0]


def test_the_urls_own_host_wins_over_pghost(
    asking_a_password: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = asking_a_password
    monkeypatch.setenv("PGHOST", "/nonexistent-socket-directory")
    assert _server_answer(f"postgresql://ana@127.0.0.1:{port}/ferrex") == _AUTH


def test_nothing_listening_is_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", str(port))
    assert _server_answer("postgresql:///ferrex") is None
