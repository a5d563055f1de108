"""stdio framing as pure logic: bytes to lines however they are cut, lines to frames."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, JSONRPCNotification, JSONRPCRequest

from ferrex.server.mcp_stdio import (
    MAX_LINE_BYTES,
    BadLine,
    LineSplitter,
    OverLong,
    read_frame,
)

PING = b'{"jsonrpc":"2.0","id":2,"method":"ping"}'


def _split(data: bytes, cuts: list[int], limit: int = MAX_LINE_BYTES) -> list[bytes | OverLong]:
    splitter = LineSplitter(limit)
    lines: list[bytes | OverLong] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        lines += splitter.feed(data[start:cut])
        start = cut
    return lines + splitter.end()


def test_a_line_cut_at_every_byte_comes_out_whole() -> None:
    data = b"{not json}\n" + PING + b"\n"
    for cut in range(len(data) + 1):
        assert _split(data, [cut]) == [b"{not json}", PING], cut


@settings(max_examples=200)
@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_cuts_give_the_lines_of_the_whole(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    assert _split(data, [c for c in cuts if c <= len(data)]) == lines


@settings(max_examples=100)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_an_over_long_line_is_dropped_and_the_next_one_read(
    sizes: list[int], cuts: list[int]
) -> None:
    limit = 10
    data = b"".join(b"x" * size + b"\n" for size in sizes) + PING + b"\n"
    expected: list[bytes | OverLong] = [
        OverLong(size) if size > limit else b"x" * size for size in sizes
    ]
    assert _split(data, [c for c in cuts if c <= len(data)], limit) == [
        *expected,
        OverLong(len(PING)),
    ]
    assert _split(data, [c for c in cuts if c <= len(data)], len(PING)) == [
        *[OverLong(s) if s > len(PING) else b"x" * s for s in sizes],
        PING,
    ]


def test_the_last_line_without_a_newline_is_read_at_the_end() -> None:
    splitter = LineSplitter(10)
    assert splitter.feed(b"abc\nde") == [b"abc"]
    assert splitter.end() == [b"de"]
    splitter = LineSplitter(3)
    assert splitter.feed(b"abcdef") == []
    assert splitter.end() == [OverLong(6)]
    assert LineSplitter().end() == []


def test_an_over_long_line_is_not_held() -> None:
    splitter = LineSplitter(1000)
    for _ in range(100):
        assert splitter.feed(b"y" * 999) == []
    assert len(splitter._pending) == 0
    assert splitter.feed(b"\n") == [OverLong(99_900)]


def _code(line: bytes) -> int:
    frame = read_frame(line)
    assert isinstance(frame, BadLine), frame
    answer = json.loads(frame.answer().message.model_dump_json(by_alias=True, exclude_unset=True))
    assert answer["id"] is None and answer["jsonrpc"] == "2.0"
    return int(answer["error"]["code"])


def test_frames() -> None:
    ping = read_frame(PING)
    assert isinstance(ping, SessionMessage) and isinstance(ping.message, JSONRPCRequest)
    crlf = read_frame(PING + b"\r")
    assert isinstance(crlf, SessionMessage) and isinstance(crlf.message, JSONRPCRequest)
    note = read_frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert isinstance(note, SessionMessage) and isinstance(note.message, JSONRPCNotification)
    # JSON's whitespace includes \r: inside a line it is not a line break
    inner = read_frame(b'{"jsonrpc":"2.0",\r"id":3,"method":"ping"}')
    assert isinstance(inner, SessionMessage) and isinstance(inner.message, JSONRPCRequest)
    assert read_frame(b"") is None and read_frame(b"  \t\r") is None
    assert _code(b"{not json}") == PARSE_ERROR
    assert _code(b'{"jsonrpc":"2.0","id":2,"method":"ping","x":"\xff"}') == PARSE_ERROR
    assert _code(b'{"jsonrpc":"2.0","id":2,"method":"ping","x":"\\ud800"}') == PARSE_ERROR
    assert _code(b"[" * 5000 + b"]" * 5000) == PARSE_ERROR
    for not_a_message in [b'{"hello":"world"}', b"[]", b"42", b'"ping"', b"null",
                          b'{"jsonrpc":"1.0","id":3,"method":"ping"}']:  # fmt: skip
        assert _code(not_a_message) == INVALID_REQUEST, not_a_message
    assert _code(OverLong(MAX_LINE_BYTES + 1)) == INVALID_REQUEST


def test_a_request_whose_id_is_not_a_string_or_integer_is_refused() -> None:
    for bad_id in ["{}", '{"a":1}', "[1]", "[]", "1.5", "2.0", "true", "false", "null"]:
        line = b'{"jsonrpc":"2.0","id":' + bad_id.encode() + b',"method":"ping"}'
        assert _code(line) == INVALID_REQUEST, bad_id
    for good_id in ['"2"', "0", "-7", "12345678901234567890"]:
        line = b'{"jsonrpc":"2.0","id":' + good_id.encode() + b',"method":"ping"}'
        frame = read_frame(line)
        assert isinstance(frame, SessionMessage) and isinstance(frame.message, JSONRPCRequest)
