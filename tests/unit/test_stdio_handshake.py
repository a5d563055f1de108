"""When the stdio server starts what comes after ``initialize`` (the election, the warm-up):
once the answer has gone out and the client has spoken again, once (issue #27)."""

from __future__ import annotations

from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from ferrex.server.mcp_stdio import Handshake


def request(request_id: int | str, method: str) -> JSONRPCRequest:
    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params={})


def response(request_id: int | str) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})


INITIALIZED = JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")


def counting() -> tuple[Handshake, list[int]]:
    runs: list[int] = []
    return Handshake(lambda: runs.append(1)), runs


def test_starts_after_the_answer_and_the_next_message() -> None:
    handshake, runs = counting()
    handshake.received(request(1, "initialize"))
    handshake.sent(response(1))
    assert runs == []  # answered, but the client has not spoken since
    handshake.received(INITIALIZED)
    assert runs == [1]
    handshake.received(request(2, "tools/list"))
    handshake.sent(response(2))
    assert runs == [1]  # once


def test_a_message_written_with_initialize_waits_for_the_answer() -> None:
    """initialize and initialized in one write: nothing starts before the answer is out."""
    handshake, runs = counting()
    handshake.received(request("a", "initialize"))
    handshake.received(INITIALIZED)
    assert runs == []
    handshake.sent(response("other"))
    assert runs == []
    handshake.sent(response("a"))
    assert runs == [1]


def test_messages_before_initialize_and_error_answers_count_for_nothing() -> None:
    handshake, runs = counting()
    handshake.received(request(9, "ping"))
    handshake.sent(response(9))
    handshake.received(request(1, "initialize"))
    error = ErrorData(code=-32602, message="unsupported protocol version")
    handshake.sent(JSONRPCError(jsonrpc="2.0", id=1, error=error))
    handshake.received(INITIALIZED)
    assert runs == []


def test_without_anything_to_run_it_does_nothing() -> None:
    handshake = Handshake(None)
    handshake.received(request(1, "initialize"))
    handshake.sent(response(1))
    handshake.received(INITIALIZED)


def test_a_client_that_never_initializes_is_not_waited_for() -> None:
    handshake, runs = counting()
    handshake.received(request(9, "ping"))
    handshake.unheard()
    assert runs == [1]
    handshake.unheard()
    assert runs == [1]


def test_the_clock_stops_at_initialize() -> None:
    handshake, runs = counting()
    handshake.received(request(1, "initialize"))
    handshake.unheard()
    assert runs == []
    handshake.sent(response(1))
    handshake.received(INITIALIZED)
    assert runs == [1]
