"""What the ``/api/v1`` routes take: the limits of a body, and each route's query parameters
(:class:`Param`, one spec per route: :func:`check_query` checks a request against it and the
OpenAPI document, :mod:`ferrex.server.dashboard.openapi`, describes it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from starlette.requests import Request

from ferrex.errors import UsageError
from ferrex.rules.arguments import (
    MAX_RECALL_LIMIT,
    MAX_REFLECT_LIMIT,
    PAGE_LIMIT,
    PAGE_MAX,
    REFLECT_LIMIT,
    SEARCH_LIMIT,
    SORTS,
    STATES,
    TAGS_LIMIT,
    TAGS_MAX,
)
from ferrex.rules.spelling import did_you_mean
from ferrex.rules.store_fields import CONTEXT_DEPTH
from journal.events import MemoryType, Visibility

#: The largest request body taken (bytes); a batch of many long memories fits.
MAX_BODY = 4 * 1024 * 1024
#: The most memories one ``POST /api/v1/memories`` batch may hold.
MAX_BATCH = 100
#: How deep a body's arrays and objects may nest: a batch's frame (body, list, item) around
#: a context nested as deep as the store takes, and a margin, so that a context too deep is
#: the store's own refusal, naming where.
MAX_DEPTH = CONTEXT_DEPTH + 8

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Param:
    """One query parameter a route takes: checked by :func:`check_query`, decoded into the
    route's arguments by :func:`query_args`, described in the OpenAPI document, from this
    one spec."""

    name: str
    schema: dict[str, Any]
    description: str
    required: bool = False
    arg: str | None = None
    """The argument it becomes (None: its own name)."""
    split: bool = False
    """A list whose values may also be comma-separated (``types=a,b``)."""
    keep_empty: bool = False
    """Text sent empty is passed on (to be refused where it is read), not left out."""

    def openapi(self, where: str = "query") -> dict[str, Any]:
        return {"name": self.name, "in": where, "required": self.required,
                "schema": self.schema, "description": self.description}  # fmt: skip


TEXT: dict[str, Any] = {"type": "string"}
#: How a time of the query is written: the server refuses one without a timezone.
_TIME_FORM = ("ISO 8601 with a timezone (2024-05-01T09:00:00Z, +02:00), or a date alone "
              "(00:00 UTC); a time without a timezone is refused")  # fmt: skip
_TEXTS: dict[str, Any] = {"type": "array", "items": TEXT}
FLAG: dict[str, Any] = {"type": "boolean"}

#: ``GET /api/v1/recall`` (the dashboard's search): its names are the search form's fields.
SEARCH_QUERY = (
    Param("q", {"type": "string", "minLength": 1}, "The words to look for.", required=True),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_RECALL_LIMIT},
          f"How many ({SEARCH_LIMIT})."),
    Param("types", _TEXTS, "Only these kinds (repeated or comma-separated)."),
    Param("entities", _TEXTS, "Only memories about these (repeated or comma-separated)."),
    Param("min_relevance", {"type": "number", "minimum": 0, "maximum": 1}, "Cut-off."),
    *(Param(n, TEXT, f"The recall tool's {n}: {_TIME_FORM}.")
      for n in ("as_of", "after", "before")),
    *(Param(n, TEXT, f"The recall tool's {n}.") for n in ("namespace", "strategy")),
    *(Param(n, FLAG, f"The recall tool's {n}: true or false.")
      for n in ("include_stale", "include_invalidated")),
)  # fmt: skip
ENTITIES_QUERY = (
    Param("name", TEXT, "One entity (any spelling)."),
    Param("prefix", TEXT, "Entities whose names start so."),
    Param("offset", {"type": "integer", "minimum": 0}, "Skip this many."),
)
STATS_QUERY = (Param("namespace", TEXT, "One namespace."),)
#: ``GET /api/v1/memories``: a page of the memories the caller sees, filtered and sorted.
LIST_QUERY = (
    Param("cursor", TEXT, "next_cursor of the page before, unchanged."),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
          f"How many ({PAGE_LIMIT})."),
    Param("sort", {"enum": list(SORTS)},
          "By when stored (created) or when true (valid_from); - first: newest first "
          "(default -created)."),
    Param("types", {"type": "array", "items": {"enum": list(get_args(MemoryType))}},
          "Only these kinds (repeated or comma-separated).", split=True),
    Param("namespace", TEXT, "One namespace (default: every namespace)."),
    Param("entity", TEXT, "Only memories about this entity (any spelling)."),
    Param("source", TEXT, "Only memories with this source, exactly."),
    Param("visibility", {"enum": list(get_args(Visibility))}, "Only private or only shared ones."),
    Param("state", {"enum": list(STATES)},
          "current (default): not superseded; superseded; or all."),
    Param("after", {"type": "string", "format": "date-time"},
          f"Event time at or after: {_TIME_FORM}."),
    Param("before", {"type": "string", "format": "date-time"}, f"Event time before: {_TIME_FORM}."),
    Param("tag", _TEXTS, "Only memories with this tag (a value of their context's tags "
          "list); repeated: every one of them.", arg="tags"),
    Param("context", _TEXTS, "KEY:VALUE: only memories whose context's top-level KEY is "
          "VALUE or a list holding it; repeated: every one of them."),
)  # fmt: skip
#: ``GET /api/v1/tags``: the values of one context key, with counts.
TAGS_QUERY = (
    Param("key", TEXT, "The context key whose values are counted (tags).", keep_empty=True),
    Param("namespace", TEXT, "One namespace (default: every namespace).", keep_empty=True),
    Param("state", {"enum": list(STATES)},
          "Over current memories (default), superseded ones, or all.", keep_empty=True),
    Param("limit", {"type": "integer", "minimum": 1, "maximum": TAGS_MAX},
          f"How many ({TAGS_LIMIT})."),
)  # fmt: skip
REFLECT_QUERY = (
    Param("namespace", TEXT, "One namespace (default: every namespace)."),
    Param(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_REFLECT_LIMIT},
        f"Items per section ({REFLECT_LIMIT}).",
    ),
)
#: ``GET /api/v1/changes``: where the change stream starts, and whether it ends when idle.
CHANGES_QUERY = (
    Param("after", {"type": "integer", "minimum": 0},
          "Start after this journal position (Last-Event-ID, when sent, wins); "
          "without either, only what comes next."),
    Param("until_idle", FLAG, "End the stream once it has caught up: true or false."),
)  # fmt: skip
FORGET_QUERY = (Param("cascade", FLAG, "Also drop entities no longer mentioned: true or false."),)


def check_query(request: Request, params: tuple[Param, ...]) -> None:
    """Refuse (``invalid_input``) a query parameter the route does not take, as a POST body
    refuses an unknown field, one of a single value given twice (``limit=5&limit=6``: which
    one was meant?), and a boolean other than ``true`` or ``false``."""
    known = {p.name: p for p in params}
    seen: set[str] = set()
    for name, value in request.query_params.multi_items():
        param = known.get(name)
        if param is None:
            takes = ", ".join(known) or "no query parameters"
            raise UsageError(f"unknown query parameter {name!r}{did_you_mean(name, list(known))}",
                             hint=f"{request.url.path} takes {takes}")  # fmt: skip
        if name in seen and param.schema.get("type") != "array":
            raise UsageError(f"query parameter {name!r} is given twice; it takes one value",
                             hint=f"send {name} once")  # fmt: skip
        seen.add(name)
        if param.schema.get("type") == "boolean" and value not in ("true", "false"):
            raise UsageError(f"{name} must be true or false, got {value!r}",
                             hint=f"send {name}=true, or leave it out for false")  # fmt: skip


def query_args(request: Request, params: tuple[Param, ...]) -> dict[str, Any]:
    """The arguments ``params`` decode from a request's query (after :func:`check_query`):
    a whole number as one (``invalid_input`` if it is not, empty too), a list from its
    repeated (or, ``split``, comma-separated) values, text as sent; empty text and an empty
    list are left out unless the parameter says ``keep_empty``."""
    q = request.query_params
    args: dict[str, Any] = {}
    for param in params:
        kind = param.schema.get("type")
        if kind == "array":
            values = q.getlist(param.name)
            if param.split:
                values = [t.strip() for v in values for t in v.split(",") if t.strip()]
            if values:
                args[param.arg or param.name] = values
        elif param.name not in q:
            continue
        elif kind == "integer":
            args[param.arg or param.name] = whole(q[param.name], param.name)
        elif q[param.name] or param.keep_empty:
            args[param.arg or param.name] = q[param.name]
    return args


def whole(text: str, name: str) -> int:
    """A query parameter's whole number."""
    return _parsed(int, text, name, "a whole number")


def number(text: str, name: str) -> float:
    """A query parameter's number."""
    return _parsed(float, text, name, "a number")


def _parsed(parse: Callable[[str], N], text: str, name: str, what: str) -> N:
    """``parse(text)``; text it cannot parse is ``invalid_input`` naming the parameter."""
    try:
        return parse(text)
    except ValueError:
        raise UsageError(f"{name} must be {what}, got {text!r}") from None
