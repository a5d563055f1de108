"""The limits and choices of the tools' arguments and the HTTP API's query parameters, each
written once: the MCP tools' input schemas (:mod:`ferrex.server.mcp_server`), the service's
own checks (:mod:`ferrex.server.service`), recall's (:func:`ferrex.read.request.check_request`),
the HTTP API's query parameters and their reads (:mod:`ferrex.server.dashboard.params`,
:mod:`~ferrex.server.dashboard.reads`) and so the OpenAPI document and the SDK types read
them from here.

Light on purpose (the stdio server imports it before its first call). The limits of a
memory's own fields are :data:`ferrex.rules.memory_input.DEFAULT_LIMITS`."""

from __future__ import annotations

from typing import Final, Literal, get_args

# recall

#: The longest query (characters).
MAX_QUERY_CHARS: Final = 2000
#: How many memories a recall answers unless asked (the tool's default).
RECALL_LIMIT: Final = 5
#: The most a recall may ask for.
MAX_RECALL_LIMIT: Final = 100
#: The most entities a recall may filter on.
MAX_RECALL_ENTITIES: Final = 20
#: ``max_tokens``: the smallest and largest budget an answer may be cut to.
MIN_MAX_TOKENS: Final = 50
MAX_MAX_TOKENS: Final = 100_000
Strategy = Literal["balanced", "semantic", "lexical", "recent", "relational"]
STRATEGIES: Final[tuple[Strategy, ...]] = get_args(Strategy)
DEFAULT_STRATEGY: Final[Strategy] = "balanced"
#: The longest time argument (ISO 8601 text: as_of, after, before, valid_from).
MAX_TIME_CHARS: Final = 64
#: How many a dashboard search (``GET /api/v1/recall``) answers unless asked.
SEARCH_LIMIT: Final = 10

# reflect, confirm, forget

#: Items per section of reflect unless asked, and the most it may ask for.
REFLECT_LIMIT: Final = 10
MAX_REFLECT_LIMIT: Final = 100
#: The most ids one confirm, and one forget, may name.
MAX_CONFIRM_IDS: Final = 100
MAX_FORGET_IDS: Final = 1000

# the HTTP API's writes

REQUEST_KEY_PREFIX: Final = "request "
"""How the import key of a store the HTTP API made with an ``Idempotency-Key`` starts (a
hash of who sent it and the key follows): journaled with the memory, so a retry after a
crash finds it. Unlike two import lines, two such keys do not make two events."""


def is_request_key(key: str | None) -> bool:
    """Whether an import key is an HTTP request's (not a line of ``ferrex import``)."""
    return key is not None and key.startswith(REQUEST_KEY_PREFIX)


# the HTTP API's reads

#: ``GET /api/v1/memories``: a page's size unless asked, the largest, the orders and states.
PAGE_LIMIT: Final = 50
PAGE_MAX: Final = 200
SORTS: Final = ("-created", "created", "-valid_from", "valid_from")
STATES: Final = ("current", "superseded", "all")
#: ``GET /api/v1/tags``: how many values unless asked, and the most.
TAGS_LIMIT: Final = 100
TAGS_MAX: Final = 1000
