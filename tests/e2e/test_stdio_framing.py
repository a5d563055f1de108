"""Every well-formed request on stdio is answered, after any bad lines, however the bytes arrive
(issue #29); a request whose id is not a string or an integer is answered -32600 (issue #24)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrex.server.mcp_stdio import MAX_LINE_BYTES
from tests.e2e.stdio_helpers import INITIALIZE, INITIALIZED, RawServer, line, ping

NOT_JSON = [b"{not json}", b'{"jsonrpc":"2.0","id":9,"method":"ping","x":"\xff\xfe"}',
            b'{"jsonrpc":"2.0","id":9,"method":"ping"']  # fmt: skip
NOT_A_MESSAGE = [b'{"hello":"world"}', b"[]", b"42", b'"ping"', b"null",
                 b'{"jsonrpc":"1.0","id":9,"method":"ping"}']  # fmt: skip
BAD_IDS = [b"{}", b"[1]", b"1.5", b"2.0", b"true", b"null"]


def _expect(server: RawServer, bad: int, request_id: int) -> None:
    """``bad`` errors with id null, then the ping's answer, in that order."""
    for _ in range(bad):
        answer = server.answer()
        assert answer["id"] is None and answer["error"]["code"] in (-32700, -32600), answer
    assert server.answer() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@pytest.mark.parametrize("run", range(3))
def test_the_issue_sequence_in_one_write_is_answered(tmp_path: Path, run: int) -> None:
    server = RawServer(tmp_path / "home")
    try:
        server.write(line(INITIALIZE) + line(INITIALIZED) + b"{not json}\n" + ping(2))
        assert server.answer()["id"] == 1
        _expect(server, 1, 2)
        assert server.close() == 0
    finally:
        server.kill()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    server = RawServer(tmp_path_factory.mktemp("stdio") / "home")
    try:
        server.initialize()
        yield server
        assert server.close() == 0
        logged = server.stderr.count(b"answered a line on stdin that could not be served")
        assert logged == 1, server.stderr  # logged once
        assert b"hello" not in server.stderr and b"1.5" not in server.stderr  # never the line
    finally:
        server.kill()


_ids = itertools.count(100)


def test_requests_after_bad_lines_in_one_write(served: RawServer) -> None:
    bad = NOT_JSON + NOT_A_MESSAGE
    request_id = next(_ids)
    served.write(b"".join(b + b"\n" for b in bad) + ping(request_id))
    _expect(served, len(bad), request_id)


def test_a_request_split_at_every_byte_after_a_bad_line(served: RawServer) -> None:
    for bad in (b"{not json}", b'{"hello":"world"}'):
        request_id = next(_ids)
        data = bad + b"\n" + ping(request_id)
        for cut in range(len(data) + 1):
            request_id = next(_ids)
            data = bad + b"\n" + ping(request_id)
            served.write(data[:cut])
            served.write(data[cut:])
            _expect(served, 1, request_id)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bad=st.lists(st.sampled_from(NOT_JSON + NOT_A_MESSAGE + [b"", b"\r"]), max_size=4),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
    crlf=st.booleans(),
)
def test_any_cuts_after_any_bad_lines(
    served: RawServer, bad: list[bytes], cuts: list[int], crlf: bool
) -> None:
    request_id = next(_ids)
    end = b"\r\n" if crlf else b"\n"
    data = b"".join(b + end for b in bad) + ping(request_id)[:-1] + end
    start = 0
    for cut in [*sorted({c for c in cuts if c <= len(data)}), len(data)]:
        served.write(data[start:cut])
        start = cut
    _expect(served, sum(1 for b in bad if b.strip(b"\r")), request_id)


def test_a_request_after_an_over_long_line(served: RawServer) -> None:
    request_id = next(_ids)
    long = b'{"jsonrpc":"2.0","id":7,"method":"ping","x":"' + b"a" * MAX_LINE_BYTES + b'"}\n'
    served.write(long[:1000])
    served.write(long[1000:] + ping(request_id))
    answer = served.answer()
    assert answer["id"] is None and answer["error"]["code"] == -32600, answer
    assert "longer than" in answer["error"]["message"]
    assert served.answer() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_a_carriage_return_inside_a_line_is_not_a_line_break(served: RawServer) -> None:
    request_id = next(_ids)
    served.write(b'{"jsonrpc":"2.0",\r"id":' + str(request_id).encode() + b',"method":"ping"}\n')
    assert served.answer() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_a_request_whose_id_is_not_a_string_or_integer_gets_invalid_request(
    served: RawServer, bad_id: bytes
) -> None:
    request_id = next(_ids)
    call: dict[str, Any] = {"name": "stats", "arguments": {}}
    bad = b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"tools/call","params":'
    served.write(bad + line(call)[:-1] + b"}\n" + ping(request_id))
    answer = served.answer()
    assert answer["id"] is None and answer["error"]["code"] == -32600, answer
    assert "id" in answer["error"]["message"]
    assert served.answer() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@pytest.mark.parametrize("given", [b'"notadict"', b"[1, 2]", b"7", b"true"])
def test_a_tool_call_whose_arguments_are_not_an_object_is_told_so(
    served: RawServer, given: bytes
) -> None:
    """The SDK's own answer was "Invalid request parameters" with nothing to go on."""
    request_id = next(_ids)
    bad = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"stats",' % request_id
    served.write(bad + b'"arguments":' + given + b"}}\n")
    answer = served.answer()
    assert answer["id"] == request_id and answer["error"]["code"] == -32602, answer
    assert "arguments must be an object" in answer["error"]["message"]
    after = next(_ids)
    served.write(ping(after))
    assert served.answer() == {"jsonrpc": "2.0", "id": after, "result": {}}
