"""The dashboard's search form becomes the recall request the tool's own decoder gives for
the same arguments (``tool_calls.decode``, which the MCP tools and the HTTP API go through):
explained, not a use, the form's empty fields not given; a bad number is refused naming it."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from ferrex.errors import UsageError
from ferrex.rules.arguments import SEARCH_LIMIT
from ferrex.server.dashboard.web import recall_request, search_params
from ferrex.server.tool_calls import Recall, decode


def _form(query: str) -> dict[str, object]:
    scope = {"type": "http", "method": "GET", "path": "/search", "headers": [],
             "query_string": query.encode()}  # fmt: skip
    return search_params(Request(scope))


@pytest.mark.parametrize(
    ("query", "args"),
    [
        ("q=deploy", {"query": "deploy", "limit": SEARCH_LIMIT}),
        ("q=+deploy+&limit=&min_relevance=&as_of=&include_stale=0",
         {"query": "deploy", "limit": SEARCH_LIMIT}),
        ("q=deploy&limit=7&types=semantic,episodic&types=procedural&entities=cart-svc"
         "&min_relevance=0.25&as_of=2026-01-01&after=2025-01-01&before=2026-02-01"
         "&namespace=work&strategy=hybrid&include_stale=1&include_invalidated=true",
         {"query": "deploy", "limit": 7, "types": ["semantic", "episodic", "procedural"],
          "entities": ["cart-svc"], "min_relevance": 0.25, "as_of": "2026-01-01",
          "after": "2025-01-01", "before": "2026-02-01", "namespace": "work",
          "strategy": "hybrid", "include_stale": True, "include_invalidated": True}),
    ],
)  # fmt: skip
def test_the_form_is_the_request_the_decoder_gives(query: str, args: dict[str, object]) -> None:
    request = recall_request(_form(query))
    assert isinstance(request, Recall)
    assert request == decode("recall", {**args, "explain": True, "count_access": False})
    assert request.args.explain and not request.count_access


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("q=x&limit=five", "limit must be a whole number, got 'five'"),
        ("q=x&limit=2.5", "limit must be a whole number, got '2.5'"),
        ("q=x&min_relevance=high", "min_relevance must be a number, got 'high'"),
        ("q=x&limit=five&min_relevance=high", "limit must be a whole number, got 'five'"),
    ],
)
def test_a_bad_number_is_refused_naming_it(query: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        recall_request(_form(query))
    assert refused.value.message == message
