"""Pure pieces of the HTTP edge: host names, origins, sessions per principal, repeated logs."""

from __future__ import annotations

import logging

import pytest

from ferrex.server.dashboard.web import Sessions, host_name, is_local_name, origin_of
from ferrex.server.http_limits import RepeatFilter


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("LocalHost:80", "localhost"),
        ("127.attacker.example:8765", "127.attacker.example"),
        ("", ""),
    ],
)
def test_host_name_drops_the_port_and_brackets(header: str, name: str) -> None:
    assert host_name(header) == name


def test_only_localhost_and_ip_literals_are_local_names() -> None:
    for name in ("localhost", "127.0.0.1", "127.5.6.7", "::1", "10.1.2.3", "fe80::1"):
        assert is_local_name(name), name
    for name in ("127.attacker.example", "127.0.0.1.nip.io", "localhost.example", "127.1",
                 "", "0x7f000001", "127.0.0.1.", "localhost."):  # fmt: skip
        assert not is_local_name(name), name


def test_origin_of_is_scheme_host_and_a_port_only_when_not_the_default() -> None:
    assert origin_of("https://Memory.Example.test/") == "https://memory.example.test"
    assert origin_of("https://memory.example.test:443") == "https://memory.example.test"
    assert origin_of("http://memory.example.test:8080") == "http://memory.example.test:8080"
    assert origin_of("https://[::1]:8443") == "https://[::1]:8443"


def test_one_principals_logins_replace_only_its_own_sessions() -> None:
    sessions = Sessions(per_principal=4, total=10)
    operator = sessions.open("op-token", "operator")
    agents = [sessions.open("bob-token", "agent:bob") for _ in range(300)]
    assert sessions.token(operator) == "op-token"
    assert [sessions.token(s) for s in agents[-4:]] == ["bob-token"] * 4
    assert sessions.token(agents[0]) is None
    assert len(sessions) == 5


def test_beyond_the_total_the_busiest_principal_gives_way() -> None:
    sessions = Sessions(per_principal=4, total=6)
    operator = sessions.open("op", "operator")
    for name in ("a", "b"):
        for _ in range(4):
            sessions.open(name, f"agent:{name}")
    assert len(sessions) == 6
    assert sessions.token(operator) == "op"


def _record(msg: str, name: str = "asyncio") -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, msg, None, None)


def test_a_repeated_line_passes_a_few_times_then_is_counted() -> None:
    repeats = RepeatFilter(burst=3, window=60.0)
    passed = [
        repeats.filter(_record("socket.accept() out of system resource")) for _ in range(1000)
    ]
    assert passed.count(True) == 3
    assert repeats.filter(_record("another line"))  # other lines are not held back


def test_after_the_window_the_first_line_says_how_many_were_held_back() -> None:
    now = [0.0]
    repeats = RepeatFilter(burst=1, window=60.0, clock=lambda: now[0])
    assert [repeats.filter(_record("x")) for _ in range(5)] == [True] + [False] * 4
    now[0] = 61.0
    record = _record("x")
    assert repeats.filter(record)
    assert str(record.msg).startswith("(4 more like the next line were not logged)")
    assert not repeats.filter(_record("x"))
