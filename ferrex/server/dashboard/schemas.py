"""The answers of ``/api/v1``, typed for the OpenAPI document (JSON Schema 2020-12).

Each route's 200 answer is a named schema here, so a generated client gets a type per
answer, not a bare object. The rules they follow, for generators' sake:

- ``required`` lists exactly what every answer of that kind carries; a field shown only
  sometimes (a memory's marks, ``truncated``, ``warning``) is optional and never required;
- no ``default`` anywhere (:func:`without_defaults`): openapi-typescript makes a property with
  a default a required one, which a request need not send;
- objects stay open (no ``additionalProperties: false`` on answers): a later server may add
  a field, and a client built today must still read it; an object with no properties of its
  own (a memory's ``context``, an ``explain`` document) says ``additionalProperties: true``
  (:func:`for_generators`): openapi-typescript types a bare ``{"type": "object"}`` as an
  object that can hold nothing.

``tests/e2e/test_api_typed.py`` checks real answers of a running server against these
schemas, every route and the optional fields too.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from ferrex.core.decide.forget import ConfirmAnswer, ForgetAnswer
from ferrex.core.decide.store import StoreAnswer, StoreStatus
from ferrex.read.insight import (
    AttentionCounts,
    DormantEntity,
    ForgetCandidate,
    RecentMemory,
    ReflectAnswer,
    StatsAnswer,
)
from ferrex.read.request import RecallAnswer, RecallHit
from ferrex.server.dashboard.reads import CHANGE_NAMES
from journal.events import MemoryType, Visibility

REF = "#/components/schemas/"

_TEXT: dict[str, Any] = {"type": "string"}
_TEXTS: dict[str, Any] = {"type": "array", "items": _TEXT}
_INT: dict[str, Any] = {"type": "integer"}
_NUMBER: dict[str, Any] = {"type": "number"}
_FLAG: dict[str, Any] = {"type": "boolean"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_MAYBE_TIME: dict[str, Any] = {"type": ["string", "null"], "format": "date-time"}
_MAYBE_TEXT: dict[str, Any] = {"type": ["string", "null"]}
_TYPE: dict[str, Any] = {"enum": list(get_args(MemoryType))}
_VISIBILITY: dict[str, Any] = {"enum": list(get_args(Visibility))}
_COUNTS: dict[str, Any] = {"type": "object", "additionalProperties": _INT}


def ref(name: str) -> dict[str, Any]:
    return {"$ref": REF + name}


def _object(
    required: dict[str, Any], optional: dict[str, Any] | None = None, description: str = ""
) -> dict[str, Any]:
    """An object with these properties, ``required`` ones always there."""
    doc: dict[str, Any] = {"type": "object"}
    if description:
        doc["description"] = description
    doc["required"] = list(required)
    doc["properties"] = {**required, **(optional or {})}
    return doc


def _list(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


def typed(
    kind: type,
    fields: Mapping[str, dict[str, Any]] | None = None,
    *,
    optional: tuple[str, ...] = (),
    hidden: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
    description: str = "",
) -> dict[str, Any]:
    """The schema of the TypedDict ``kind`` (the type the answer is built as): its required
    keys required, the others optional, each field's type as JSON Schema unless ``fields``
    gives a field's schema (a part still described by hand here).

    Where the published document says less than the type (kept so, for now: the document
    and the SDK types generated from it stay as they are), the call says so by name:
    ``optional`` keys the answer always has but the document shows as optional, ``hidden``
    keys the answer may have but the document does not name (objects stay open, so they
    are still allowed), ``required`` keys an answer may lack but those the document
    describes always have. A name that is not a key of ``kind`` is refused, so none goes
    stale."""
    hints = get_type_hints(kind, include_extras=True)
    unknown = sorted({*(fields or {}), *optional, *hidden, *required} - set(hints))
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {', '.join(unknown)}")
    always: dict[str, Any] = {}
    shown_optional: dict[str, Any] = {}
    # NotRequired read from the hints: a TypedDict of a module with postponed annotations
    # counts every key in its __required_keys__ (Python 3.11).
    for name, hint in hints.items():
        if name in hidden:
            continue
        given = get_origin(hint) is NotRequired
        bare = get_args(hint)[0] if given else hint
        schema = fields[name] if fields and name in fields else _schema_of(bare)
        maybe = (given and name not in required) or name in optional
        (shown_optional if maybe else always)[name] = schema
    return _object(always, shown_optional, description)


_FORMATS = ("date-time",)


def _schema_of(hint: object) -> dict[str, Any]:
    """A field's Python type as JSON Schema (the kinds the typed answers use)."""
    simple: dict[object, dict[str, Any]] = {str: _TEXT, int: _INT, float: _NUMBER, bool: _FLAG}
    if hint in simple:
        return simple[hint]
    if isinstance(hint, type) and is_typeddict(hint):
        return typed(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:  # a time (ferrex.times.Rfc3339): text of a format
        known = [m for m in getattr(hint, "__metadata__", ()) if m in _FORMATS]
        return {**_schema_of(args[0]), **({"format": known[0]} if known else {})}
    if origin is list:
        return _list(_schema_of(args[0]))
    if origin is dict and args[0] is str:
        if args[1] is Any:  # a document of its own (explain, a model's identity)
            return {"type": "object"}
        return {"type": "object", "additionalProperties": _schema_of(args[1])}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (types.UnionType, Union) and type(None) in args:
        (one,) = [a for a in args if a is not type(None)]
        inner = _schema_of(one)
        return {**inner, "type": [inner["type"], "null"]}
    raise TypeError(f"no JSON Schema for {hint!r} in a typed answer")


# fmt: off
_BRIEF = {
    "id": _TEXT,
    "type": _TYPE,
    "event_time": _TIME,
    "t_invalid": _MAYBE_TIME,
    "created_at": _TIME,
    "summary": {**_TEXT, "description": "The memory on one line (at most 200 characters)."},
}
_MARKS = {
    "pinned": {**_FLAG, "description": "Shown only when pinned."},
    "importance": {**_NUMBER, "description": "Shown only when not 0.5."},
    "expires_at": {**_TIME, "description": "Shown only when it expires."},
}
_ATTENTION = typed(AttentionCounts, description=AttentionCounts.__doc__ or "")
_CONFLICT = _object(
    {"namespace": _TEXT, "facts": _list({"type": "object", "required": ["id"],
                                         "properties": {"id": _TEXT}})},
    {"subject": _MAYBE_TEXT, "predicate": _MAYBE_TEXT, "reason": _TEXT, "what_to_do": _TEXT},
)
_LISTED = {**_BRIEF, "namespace": _TEXT, "visibility": _VISIBILITY, "source": _MAYBE_TEXT,
           "superseded_by": _MAYBE_TEXT}
_CHANGE = {"enum": list(dict.fromkeys(CHANGE_NAMES.values()))}
_CHANGED_MEMORY = _object({"id": _TEXT, "change": _CHANGE})
_TAG_COUNT = _object({"value": _TEXT, "count": _INT})
_STATUS = {"enum": sorted(get_args(StoreStatus)), "description": "stored_as_history: stored "
           "already ended by a fact that began later (superseded_by, history_reason)."}

# The document says less than the answers: status and type are named enums, entities'
# items are not typed, and the notes of a fact's slot, the marks and warnings are not named.
_STORE = typed(
    StoreAnswer,
    {"status": _STATUS, "type": _TYPE, "entities": _list({}),
     "recovered": {**_FLAG, "description": "Answered from an earlier request with the same "
                   "Idempotency-Key whose answer was lost: only the id is known."}},
    hidden=("pinned", "importance", "expires_at", "multi_valued", "replaced_multi_valued",
            "possible_conflict", "possible_conflict_with", "possible_conflict_note",
            "replaced_note", "kept_beside", "plural_note", "similar", "warnings", "redacted"),
)

#: The answer schemas, by component name.
ANSWERS: dict[str, dict[str, Any]] = {
    "StoreAnswer": _STORE,
    "StoreBatchItem": _object(
        {"index": _INT},
        {**_STORE["properties"], "error": ref("ErrorBody")},
        "The store answer of one item, or its error (a refused or invalid item).",
    ),
    "StoreBatchAnswer": _object(
        {"results": _list(ref("StoreBatchItem")), "stored": _INT, "failed": _INT}
    ),
    # The document says less than the answers: type is the enum, a field of a memory's type
    # is never null there, freshness is always sent, the marks and explain are described,
    # and the parts only some results have (contradicts, a summary's summary_of, a
    # superseded one's invalidated_at, explain's answer_chance) are not named.
    "RecallHit": typed(
        RecallHit,
        {"type": _TYPE, "content": _TEXT, "subject": _TEXT, "predicate": _TEXT,
         "object": _TEXT, "name": _TEXT, "version": _INT, "relevance_label": _TEXT,
         "explain": {"type": "object", "description": "With explain: how it was scored."},
         **_MARKS},
        optional=("freshness",),
        hidden=("contradicts", "possible_conflict", "summary_of", "invalidated_at",
                "answer_chance"),
        description="One memory found; its own fields are those it has (content, or subject/"
        "predicate/object, or name/steps).",
    ),
    "RecallAnswer": typed(RecallAnswer, {"results": _list(ref("RecallHit"))}),
    # The document says less than the answers: position may be null (nothing written), and
    # warnings, differ and superseded are not named; dropped_entities' items are not typed.
    "ConfirmAnswer": typed(ConfirmAnswer, {"position": _INT}, optional=("position",),
                           hidden=("warnings", "differ", "superseded")),
    "ForgetAnswer": typed(ForgetAnswer, {"dropped_entities": _list({}), "position": _INT},
                          optional=("position",), hidden=("warnings",)),
    "MemoryDetail": _object(
        {
            **_BRIEF,
            "namespace": _TEXT,
            "visibility": _VISIBILITY,
            "entities": _TEXTS,
            "body": {"type": "object", "description": "The memory's own fields, those it has."},
            "confidence": _NUMBER,
            "access_count": _INT,
            "last_accessed": _MAYBE_TIME,
            "last_validated": _MAYBE_TIME,
            "history": _list(
                _object({"id": _TEXT, "t_valid": _TIME, "t_invalid": _MAYBE_TIME, "summary": _TEXT})
            ),
        },
        _MARKS,
    ),
    "MemoryVersion": _object(
        {
            "id": _TEXT,
            "type": _TYPE,
            "summary": _TEXT,
            "t_valid": _TIME,
            "t_invalid": _MAYBE_TIME,
            "created_at": _TIME,
            "superseded_by": _MAYBE_TEXT,
            "confidence": _NUMBER,
            "access_count": _INT,
            "last_accessed": _MAYBE_TIME,
            "last_validated": _MAYBE_TIME,
            "position": _INT,
            "current": _FLAG,
        }
    ),
    "MemoryHistory": _object({"id": _TEXT, "versions": _list(ref("MemoryVersion"))}),
    "EntityNames": _object(
        {"namespace": _TEXT, "prefix": _TEXT, "names": _TEXTS, "offset": _INT, "total": _INT},
        description="The entity names the caller may see (no name given).",
    ),
    "Entity": _object(
        {
            "namespace": _TEXT,
            "name": _TEXT,
            "aliases": _list(_object({"alias": _TEXT, "match": _TEXT, "score": _NUMBER})),
            "memories": _list(_object(_BRIEF)),
            "offset": _INT,
            "more": _FLAG,
            "graph": _object(
                {
                    "memories_read": _INT,
                    "nodes": _list(_object({"name": _TEXT, "count": _INT})),
                    "edges": _list(_object({"a": _TEXT, "b": _TEXT, "count": _INT})),
                }
            ),
        },
        description="One entity (name given): its spellings, memories and neighbours.",
    ),
    # The document says less than the answers: namespace may be null (the operator's, no
    # namespace given) and eviction too; the parts conflicts.py lists and the attention
    # counts (with their description) are described here. The HTTP API always asks for
    # detailed stats, so by_type is there.
    "Stats": typed(
        StatsAnswer,
        {"namespace": _TEXT, "recent": _list(typed(RecentMemory, {"type": _TYPE})),
         "needs_attention": _ATTENTION,
         "conflicts": _list(_CONFLICT), "possible_conflicts": _list(_CONFLICT)},
        required=("by_type",),
    ),
    "Reflect": typed(
        ReflectAnswer,
        {"namespace": _TEXT, "counts": _ATTENTION, "contradictions": _list(_CONFLICT),
         "possible_conflicts": _list(_CONFLICT),
         "forget_candidates": _list(typed(ForgetCandidate, {"eviction": {}},
                                          optional=("eviction",))),
         "dormant_entities": _list(typed(DormantEntity, optional=("last_referenced",)))},
    ),
    "ListedMemory": _object(_LISTED),
    "MemoryPage": _object(
        {
            "memories": _list(ref("ListedMemory")),
            "next_cursor": {
                **_MAYBE_TEXT,
                "description": "Pass as cursor for the next page; null: the last.",
            },
        },
    ),
    "TagCounts": _object(
        {"key": _TEXT, "tags": _list(_TAG_COUNT), "more": _FLAG},
        description="The values of one context key (tags), most held first.",
    ),
    "ChangeEvent": _object(
        {
            "position": _INT,
            "recorded_at": _TIME,
            "memories": _list(_CHANGED_MEMORY),
        },
        description="The data of one `change` event of the change stream (its id: position).",
    ),
    "OpenApiDocument": _object(
        {"openapi": _TEXT, "info": {"type": "object"}, "paths": {"type": "object"}},
        {"servers": _list({"type": "object"}), "components": {"type": "object"}},
    ),
}

#: Parts of the answers the SDKs give a name of their own (``python -m tools.sdk_types``
#: names each wherever it appears: an enum by its values, an object by its schema); naming
#: one changes nothing in the document.
PARTS: dict[str, dict[str, Any]] = {
    "MemoryType": _TYPE,
    "Visibility": _VISIBILITY,
    "Brief": _object(_BRIEF),
    "AttentionCounts": _ATTENTION,
    "Conflict": _CONFLICT,
    "Change": _CHANGE,
    "ChangedMemory": _CHANGED_MEMORY,
    "TagCount": _TAG_COUNT,
}

# fmt: on


def without_defaults(schema: Any) -> Any:
    """``schema`` with every ``default`` taken out (said in the description instead), so a
    generator does not make an argument a request may leave out a required property."""
    if isinstance(schema, list):
        return [without_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default":
            continue
        if key in _NAMED and isinstance(value, dict):  # names → schemas: no name is dropped
            found[key] = {name: without_defaults(v) for name, v in value.items()}
        else:
            found[key] = without_defaults(value)
    if schema.get("default") is not None:
        said = f"Default: {_shown(schema['default'])}."
        text = str(found.get("description", "")).rstrip()
        found["description"] = f"{text} {said}".strip() if said not in text else text
    return found


_NAMED = ("properties", "patternProperties", "$defs", "definitions")


def for_generators(schema: Any) -> Any:
    """``schema`` without defaults (:func:`without_defaults`) and with every object that
    names no properties open to any (``additionalProperties: true``)."""
    return _opened(without_defaults(schema))


def _opened(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_opened(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    found: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAMED and isinstance(value, dict):
            found[key] = {name: _opened(v) for name, v in value.items()}
        else:
            found[key] = _opened(value)
    kinds = found.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    said = ("properties", "additionalProperties", "patternProperties", "$ref")
    if is_object and not any(k in found for k in said):
        found["additionalProperties"] = True
    return found


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)
