"""The OpenAPI 3.1 document of ``/api/v1`` (served by the write API at
``/api/v1/openapi.json``): request schemas are the MCP tools' own input schemas, answers the
types of :mod:`ferrex.server.dashboard.schemas`, each operation's error statuses those of
the codes it can answer (:data:`~ferrex.server.dashboard.edge.ERRORS`), query parameters
their one spec (:mod:`ferrex.server.dashboard.params`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ferrex import __version__
from ferrex.server.dashboard.edge import ERRORS, RETRY_AFTER_SECONDS
from ferrex.server.dashboard.keys import MAX_KEY
from ferrex.server.dashboard.params import (
    CHANGES_QUERY,
    ENTITIES_QUERY,
    FORGET_QUERY,
    LIST_QUERY,
    MAX_BATCH,
    REFLECT_QUERY,
    SEARCH_QUERY,
    STATS_QUERY,
    TAGS_QUERY,
    TEXT,
    Param,
)
from ferrex.server.dashboard.schemas import ANSWERS, OpenApiDocument, for_generators, ref

if TYPE_CHECKING:
    from ferrex.server.mcp_server import ToolInput

#: The error codes every route may answer (who asks; a store or process unavailable).
_ANY_ROUTE = ("invalid_input", "unauthorized", "forbidden", "busy", "backend_unavailable",
              "model_unavailable", "version_mismatch", "journal", "journal.error",
              "journal.connect", "journal.unavailable", "internal", "error")  # fmt: skip
#: And what a write may answer besides.
_ANY_WRITE = (*_ANY_ROUTE, "read_only", "storage_full", "idempotency_key_reused",
              "journal.damaged", "journal.format", "journal.too_new", "journal.encode")  # fmt: skip
#: What needs the embedding model (a store, a recall).
_EMBEDS = ("model_mismatch", "model_unauthorized", "model_bad_response")
_STORE = (*_ANY_WRITE, *_EMBEDS, "not_found", "secret_refused", "duplicate",
          "conflict_ambiguous", "already_superseded", "refused")  # fmt: skip


def _responses(codes: tuple[str, ...], ok: dict[str, Any]) -> dict[str, Any]:
    """The 200 answer and each error status ``codes`` can have, naming its codes."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    found: dict[str, Any] = {
        "200": {"description": "The answer.", "content": {"application/json": {"schema": ok}}}
    }
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(ERRORS[code].status, []).append(code)
    for status in sorted(by_status):
        listed = "; ".join(f"`{c}`: {ERRORS[c].meaning}" for c in by_status[status])
        found[str(status)] = {"description": listed + ".", "content": error}
        if status in (429, 503):
            found[str(status)]["headers"] = {"Retry-After": {
                "description": "Seconds to wait before a retry.",
                "schema": {"type": "integer", "const": RETRY_AFTER_SECONDS},
            }}  # fmt: skip
    return found


def _operation(summary: str, operation_id: str, codes: tuple[str, ...], ok: dict[str, Any], *,
               body: dict[str, Any] | None = None,
               parameters: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    doc: dict[str, Any] = {"summary": summary, "operationId": operation_id}
    if parameters:
        doc["parameters"] = parameters
    if body is not None:
        doc["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    doc["responses"] = _responses(codes, ok)
    if any(p.get("name") == "Idempotency-Key" for p in parameters or ()):
        doc["responses"]["200"]["headers"] = {"Idempotent-Replayed": {
            "description": "true when this is the kept answer of an earlier request with "
            "the same Idempotency-Key (nothing was done again)",
            "schema": {"type": "string", "enum": ["true"]},
        }}  # fmt: skip
    return doc


def error_table() -> str:
    """Every error code, its status and kind, as a Markdown table (the Error schema's
    description)."""
    ordered = sorted(ERRORS.items(), key=lambda item: (item[1].status, item[0]))
    rows = [f"| `{code}` | {e.status} | {e.kind} | {e.meaning} |" for code, e in ordered]
    return "\n".join(["| code | status | kind | meaning |", "|---|---|---|---|", *rows])


def openapi_document(tools: Mapping[str, ToolInput]) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every ``/api/v1`` route; request schemas are the MCP
    tools' own input schemas (JSON Schema 2020-12, which OpenAPI 3.1 takes as it is)."""
    doc: OpenApiDocument = {
        "openapi": "3.1.0",
        "servers": [
            {
                "url": "/",
                "description": "The ferrex serve --http that serves this "
                "document (its /api/v1 routes are relative to it).",
            }
        ],
        "info": {
            "title": "ferrex memory API",
            "version": __version__,
            "description": "The MCP tools of ferrex over plain HTTP: the same arguments, "
            "answers, error codes and privacy rules. Every route but this document needs "
            "Authorization: Bearer <token>.",
        },
        "paths": for_generators(_paths()),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": for_generators(_schemas(tools)),
        },
        "security": [{"bearer": []}],
    }
    return {**doc}


def _paths() -> dict[str, Any]:
    """Every route's operations, in the order the document lists them."""
    return {
        **_write_paths(),
        **_read_paths(),
        "/api/v1/changes": {"get": _changes_operation()},
        "/api/v1/openapi.json": {"get": _self_operation()},
    }


def _key_header() -> dict[str, Any]:
    return Param("Idempotency-Key", {"type": "string", "minLength": 1, "maxLength": MAX_KEY},
                 "Send the same key again to retry this write: it is done once.",
                 ).openapi("header")  # fmt: skip


def _memory_id() -> dict[str, Any]:
    return Param("id", {"type": "string", "minLength": 1}, "A memory's id.",
                 required=True).openapi("path")  # fmt: skip


def _write_paths() -> dict[str, Any]:
    """The routes of the MCP tools (store and the page of memories beside it, forget,
    recall and the dashboard's search, confirm)."""
    key = _key_header()
    return {
        "/api/v1/memories": {"get": _operation(
            "A page of memories, filtered (tags too) and sorted", "list", _ANY_ROUTE,
            ref("MemoryPage"), parameters=[p.openapi() for p in LIST_QUERY],
        ), "post": _operation(
            "Store a memory, or a batch ({\"memories\": [...]})", "store", _STORE,
            {"oneOf": [ref("StoreAnswer"), ref("StoreBatchAnswer")]},
            body={"oneOf": [ref("StoreArguments"), ref("StoreBatch")]},
            parameters=[key],
        )},
        "/api/v1/memories/{id}": {"delete": _operation(
            "Forget a memory", "forget", (*_ANY_WRITE, "not_found"), ref("ForgetAnswer"),
            parameters=[_memory_id(), key, *(p.openapi() for p in FORGET_QUERY)],
        )},
        "/api/v1/recall": {
            "post": _operation("Recall (the recall tool's arguments)", "recall",
                               (*_ANY_ROUTE, *_EMBEDS), ref("RecallAnswer"),
                               body=ref("RecallArguments")),
            "get": _operation("Recall as the dashboard searches (explained, not counted as a use)",
                              "search", (*_ANY_ROUTE, *_EMBEDS), ref("RecallAnswer"),
                              parameters=[p.openapi() for p in SEARCH_QUERY]),
        },
        "/api/v1/confirm": {"post": _operation(
            "Confirm memories (and set pinned or importance)", "confirm", _ANY_WRITE,
            ref("ConfirmAnswer"), body=ref("ConfirmArguments"), parameters=[key],
        )},
    }  # fmt: skip


def _read_paths() -> dict[str, Any]:
    """The reads no tool gives (one memory, its history, entities) and stats, reflect, tags."""
    return {
        "/api/v1/memory/{id}": {"get": _operation(
            "One memory", "memory", (*_ANY_ROUTE, "not_found"), ref("MemoryDetail"),
            parameters=[_memory_id()],
        )},
        "/api/v1/history/{id}": {"get": _operation(
            "A memory's history", "history", (*_ANY_ROUTE, "not_found"), ref("MemoryHistory"),
            parameters=[_memory_id()],
        )},
        "/api/v1/entities": {"get": _operation(
            "Entities by prefix, or one entity by name", "entities", (*_ANY_ROUTE, "not_found"),
            {"oneOf": [ref("EntityNames"), ref("Entity")]},
            parameters=[p.openapi() for p in ENTITIES_QUERY],
        )},
        "/api/v1/stats": {"get": _operation(
            "Counts, the latest, what needs attention", "stats", _ANY_ROUTE, ref("Stats"),
            parameters=[p.openapi() for p in STATS_QUERY],
        )},
        "/api/v1/reflect": {"get": _operation(
            "What needs attention (the reflect tool)", "reflect", _ANY_ROUTE, ref("Reflect"),
            parameters=[p.openapi() for p in REFLECT_QUERY],
        )},
        "/api/v1/tags": {"get": _operation(
            "The tags (values of a context key) of the memories the caller sees, with counts",
            "tags", _ANY_ROUTE, ref("TagCounts"), parameters=[p.openapi() for p in TAGS_QUERY],
        )},
    }  # fmt: skip


def _self_operation() -> dict[str, Any]:
    """``GET /api/v1/openapi.json``: this document, the one route that needs no token."""
    return {
        "summary": "This document", "operationId": "openapi", "security": [],
        "responses": {"200": {"description": "The OpenAPI document.",
                              "content": {"application/json": {
                                  "schema": ref("OpenApiDocument")}}}},
    }  # fmt: skip


def _schemas(tools: Mapping[str, ToolInput]) -> dict[str, Any]:
    """The components' schemas: the tools' arguments, a batch, the answers, the errors."""
    return {
        "StoreArguments": _described(tools["store"]),
        "RecallArguments": _described(tools["recall"]),
        "ConfirmArguments": _described(tools["confirm"]),
        "StoreBatch": _batch(),
        **ANSWERS,
        "Error": _error(),
        "ErrorBody": _error_body(),
    }


def _batch() -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["memories"],
        "properties": {"memories": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH,
                                    "items": ref("StoreArguments")}},
    }  # fmt: skip


def _error() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error"],
        "description": "Every error answer. Each code has one status (and one kind):\n\n"
        + error_table(),
        "properties": {"error": ref("ErrorBody")},
    }


def _error_body() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["kind", "code", "message"],
        "properties": {
            "kind": {"enum": sorted({e.kind for e in ERRORS.values()}),
                     "description": "The family of the error."},
            "code": {"enum": sorted(ERRORS), "description": "Stable; see the table."},
            "message": TEXT,
            "hint": {"type": ["string", "null"], "description": "What to do about it."},
        },
        "additionalProperties": {"description": "Details: the ids involved, scores."},
    }  # fmt: skip


def _changes_operation() -> dict[str, Any]:
    """``GET /api/v1/changes``: an event stream, described in words and by its events'
    data schema (OpenAPI 3.1 has no schema for the items of a stream)."""
    doc = _operation(
        "The change stream: server-sent events of journal positions and memory ids",
        "changes", (*_ANY_ROUTE, "too_many_streams"), {"type": "string"},
        parameters=[
            Param("Last-Event-ID", {"type": "string", "pattern": "^[0-9]+$"},
                  "Resume after this position (an EventSource sends it by itself).",
                  ).openapi("header"),
            *(p.openapi() for p in CHANGES_QUERY),
        ],
    )  # fmt: skip
    doc["responses"]["200"] = {
        "description": "text/event-stream: `change` events (id: the journal position; data: "
        'a ChangeEvent), `heartbeat` events (data: {"position"}) when quiet, an `error` '
        "event (data: an Error) before the server ends a stream it cannot go on with.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
    return doc


def _described(tool: ToolInput) -> dict[str, Any]:
    return {**tool.schema, "description": tool.description}
