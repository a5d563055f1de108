"""The answers of ``/api/v1``, typed for the OpenAPI document (JSON Schema 2020-12).

Each route's 200 answer is a named schema here, so a generated client gets a type per
answer, not a bare object. The rules they follow, for generators' sake:

- an answer built as a TypedDict has that type's schema (:func:`typed`): ``required`` lists
  exactly what every answer of that kind carries; a field shown only sometimes (a memory's
  marks, ``truncated``, ``warning``) is optional and never required; a field that may be
  None allows null;
- no ``default`` anywhere (:func:`without_defaults`): openapi-typescript makes a property with
  a default a required one, which a request need not send;
- objects stay open (no ``additionalProperties: false`` on answers): a later server may add
  a field, and a client built today must still read it; an object with no properties of its
  own (a memory's ``context``, an ``explain`` document) says ``additionalProperties: true``
  (:func:`for_generators`): openapi-typescript types a bare ``{"type": "object"}`` as an
  object that can hold nothing.

``tests/e2e/test_api_typed.py`` checks real answers of a running server against these
schemas, every route and the optional fields too, and again with every object closed: an
answer's key the schema does not name, or a null it does not allow, fails it.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from ferrex.core.decide.copies import SimilarAnswer
from ferrex.core.decide.entities import EntityMatch
from ferrex.core.decide.forget import ConfirmAnswer, ForgetAnswer
from ferrex.core.decide.shared import FlaggedFact
from ferrex.core.decide.store import StoreAnswer, StoreStatus
from ferrex.read.conflicts import Conflict
from ferrex.read.insight import (
    AttentionCounts,
    DormantEntity,
    ForgetCandidate,
    RecentMemory,
    ReflectAnswer,
    StatsAnswer,
)
from ferrex.read.request import RecallAnswer, RecallHit
from ferrex.read.seen import Brief, MemoryDetail
from ferrex.rules.memory_input import Redaction
from ferrex.server.dashboard.reads import (
    CHANGE_NAMES,
    ChangedMemory,
    ChangeEvent,
    EntityAnswer,
    EntityNames,
    ListedMemory,
    MemoryHistory,
    MemoryPage,
    MemoryVersion,
    TagCount,
    TagCounts,
)
from journal.events import MemoryType, Visibility

REF = "#/components/schemas/"

_TEXT: dict[str, Any] = {"type": "string"}
_INT: dict[str, Any] = {"type": "integer"}
_NUMBER: dict[str, Any] = {"type": "number"}
_FLAG: dict[str, Any] = {"type": "boolean"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_TYPE: dict[str, Any] = {"enum": list(get_args(MemoryType))}
_VISIBILITY: dict[str, Any] = {"enum": list(get_args(Visibility))}


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
    about: Mapping[str, str] | None = None,
    description: str = "",
) -> dict[str, Any]:
    """The schema of the TypedDict ``kind`` (the type the answer is built as): its required
    keys required, the ``NotRequired`` ones optional, each field's type as JSON Schema, null
    allowed where the type allows None. ``fields`` gives a field's schema more closely than
    its type says (an enum for a ``str``, the items of a ``dict[str, Any]``), the schema of
    its value: null is added where the type allows None; ``about`` describes a field. A name
    that is not a key of ``kind`` is refused, so none goes stale."""
    hints = get_type_hints(kind, include_extras=True)
    unknown = sorted({*(fields or {}), *(about or {})} - set(hints))
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {', '.join(unknown)}")
    always: dict[str, Any] = {}
    maybe: dict[str, Any] = {}
    # NotRequired read from the hints: a TypedDict of a module with postponed annotations
    # counts every key in its __required_keys__ (Python 3.11).
    for name, hint in hints.items():
        given = get_origin(hint) is NotRequired
        bare = get_args(hint)[0] if given else hint
        if fields and name in fields:
            schema = _nullable(fields[name]) if _allows_none(bare) else fields[name]
        else:
            schema = _schema_of(bare)
        if about and name in about:
            schema = {**schema, "description": about[name]}
        (maybe if given else always)[name] = schema
    return _object(always, maybe, description)


def _allows_none(hint: object) -> bool:
    if get_origin(hint) is Annotated:
        return _allows_none(get_args(hint)[0])
    return get_origin(hint) in (types.UnionType, Union) and type(None) in get_args(hint)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null."""
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return {**schema, "type": [kinds, "null"]}
    if isinstance(kinds, list):
        return schema if "null" in kinds else {**schema, "type": [*kinds, "null"]}
    if "enum" in schema and None in schema["enum"]:
        return schema
    # an enum, a reference or a schema of any value: one of it, or null
    return {"anyOf": [schema, {"type": "null"}]} if schema else schema


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
        return _nullable(_schema_of(one))
    raise TypeError(f"no JSON Schema for {hint!r} in a typed answer")


class OpenApiDocument(TypedDict):
    """The OpenAPI document (:func:`ferrex.server.dashboard.openapi.openapi_document`): its
    schema says only what a reader of any OpenAPI document may count on."""

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    servers: NotRequired[list[dict[str, Any]]]
    components: NotRequired[dict[str, Any]]
    security: NotRequired[list[dict[str, Any]]]


class StoreBatchAnswer(TypedDict):
    """A batch store's answer (:meth:`ferrex.server.dashboard.api.WriteApi.store`; here,
    not beside it, as the API module imports this one): each item's store answer or error
    (the ``StoreBatchItem`` schema: the store answer's fields, all optional, and ``error``),
    how many were stored, how many failed."""

    results: list[dict[str, Any]]
    stored: int
    failed: int


# fmt: off
_BRIEF_ABOUT = {"summary": "The memory on one line (at most 200 characters)."}
_BRIEF = typed(Brief, {"type": _TYPE}, about=_BRIEF_ABOUT)
_MARKS_ABOUT = {
    "pinned": "Shown only when pinned.",
    "importance": "Shown only when not 0.5.",
    "expires_at": "Shown only when it expires.",
}
_NAMESPACE_ABOUT = "The namespace read (null: every namespace, the operator with none given)."
_ATTENTION = typed(AttentionCounts, description=AttentionCounts.__doc__ or "")
_CONFLICT = typed(Conflict, about={
    "subject": "A contradiction: the facts' subject.",
    "predicate": "A contradiction: the relation the facts share.",
    "reason": "A possible conflict: why the two facts may fill one slot.",
    "what_to_do": "A possible conflict: how to settle it.",
})
_CHANGE = {"enum": list(dict.fromkeys(CHANGE_NAMES.values()))}
_CHANGED_MEMORY = typed(ChangedMemory, {"change": _CHANGE})
_TAG_COUNT = typed(TagCount)
_STATUS = {"enum": sorted(get_args(StoreStatus)), "description": "stored_as_history: stored "
           "already ended by a fact that began later (superseded_by, history_reason)."}

_FLAGGED = typed(FlaggedFact)
_ENTITY_MATCH = typed(EntityMatch, about={
    "match": "exact, normalized, fuzzy, embedding, or new.",
    "matched": "The known spelling it matched, if any."})
_SIMILAR = typed(SimilarAnswer, about={"kept_because": "Why a near copy is no duplicate."})
_REDACTION = typed(Redaction, about={
    "at": "The secret's character position in the field's text."})

# Status and type are named enums; the parts (entities, the flagged facts, similar, the
# redactions) are named and described here.
_STORE = typed(
    StoreAnswer,
    {"status": _STATUS, "type": _TYPE, "entities": _list(_ENTITY_MATCH),
     "possible_conflict_with": _list(_FLAGGED), "kept_beside": _list(_FLAGGED),
     "similar": _SIMILAR, "redacted": _list(_REDACTION)},
    about={
        **_MARKS_ABOUT,
        "id": "The new memory, or for a repeated fact the existing one (re-validated).",
        "superseded": "The memories this one ended.",
        "validated": "The memories this store confirmed (a fact stored again).",
        "position": "The journal position of what was written.",
        "version": "A procedure's version number.",
        "superseded_by": "stored_as_history: the fact that ends this one.",
        "history_reason": "stored_as_history: which fact is current, and since when.",
        "recovered": "Answered from an earlier request with the same Idempotency-Key whose "
        "answer was lost: only the id is known.",
        "note": "What to know about this store, in words.",
        "multi_valued": "Shown only when the fact was stored as one of several values.",
        "replaced_multi_valued": "The multi-valued facts of the relation this one replaced.",
        "possible_conflict": "Current facts that may fill the same slot with another value.",
        "possible_conflict_with": "Those facts, and why each was flagged.",
        "possible_conflict_note": "How to settle the first flagged fact.",
        "replaced_note": "Which current values this fact replaced.",
        "kept_beside": "Facts of the relation kept beside this one (a plural relation).",
        "plural_note": "Why this fact was kept beside the others.",
        "similar": "The closest memory already stored, and how to replace it.",
        "warnings": "What the server warns about (the request was still served).",
        "redacted": "Secrets redacted from the stored text: where, and of what kind.",
    },
)

#: The answer schemas, by component name.
ANSWERS: dict[str, dict[str, Any]] = {
    "StoreAnswer": _STORE,
    "StoreBatchItem": _object(
        {"index": _INT},
        {**_STORE["properties"], "error": ref("ErrorBody")},
        "The store answer of one item, or its error (a refused or invalid item).",
    ),
    "StoreBatchAnswer": typed(StoreBatchAnswer, {"results": _list(ref("StoreBatchItem"))}),
    "RecallHit": typed(
        RecallHit,
        {"type": _TYPE, "expires_at": _TIME},
        about={
            **_MARKS_ABOUT,
            "score": "The fused ranking score (higher: better; not a probability).",
            "content": "An episode's text, or a fact's note (null: none).",
            "subject": "A fact's subject.",
            "predicate": "A fact's relation.",
            "object": "A fact's value.",
            "name": "A procedure's name.",
            "version": "A procedure's version.",
            "freshness": "How current the memory is: its label and staleness.",
            "superseded_by": "A superseded result: the memory that ended it (null: ended "
            "without one).",
            "invalidated_at": "A superseded result (include_invalidated): when it ended.",
            "contradiction": "A fact: whether a current fact the caller sees disagrees.",
            "contradicts": "Those disagreeing facts.",
            "possible_conflict": "Current facts that may fill the same slot with another "
            "value.",
            "summary_of": "A consolidation summary: what it stands for, in words.",
            "relevance": "The calibrated chance that the memory answers the query.",
            "relevance_label": "relevance in words.",
            "relevance_evidence": "What the relevance was judged on.",
            "explain": "With explain: how it was scored.",
            "answer_chance": "With explain: the relevance model's own estimate.",
        },
        description="One memory found; its own fields are those of its type (content, or "
        "subject/predicate/object, or name/version/steps/conditions).",
    ),
    "RecallAnswer": typed(RecallAnswer, {"results": _list(ref("RecallHit"))}),
    "ConfirmAnswer": typed(ConfirmAnswer, about={
        "validated": "The memories confirmed.",
        "not_found": "The ids not found (or not visible to the caller).",
        "marked": "With importance or pinned: the memories marked.",
        "position": "The journal position of what was written (null: nothing was).",
        "warnings": "What the server warns about (the request was still served).",
        "differ": "With differs_from: the pairs of memories now told apart.",
        "superseded": "With supersedes: the memories the confirmed one ended.",
    }),
    "ForgetAnswer": typed(ForgetAnswer, about={
        "forgotten": "The memories forgotten.",
        "not_found": "The ids not found (or not visible to the caller).",
        "dropped_entities": "Entities no memory names any more, dropped with them.",
        "current_again": "The memories a forgotten one had replaced, valid again.",
        "position": "The journal position of what was written (null: nothing was).",
        "warnings": "What the server warns about (the request was still served).",
    }),
    "MemoryDetail": typed(
        MemoryDetail,
        {"type": _TYPE, "visibility": _VISIBILITY, "expires_at": _TIME},
        about={**_BRIEF_ABOUT, **_MARKS_ABOUT,
               "body": "The memory's own fields, those it has."},
    ),
    "MemoryVersion": typed(MemoryVersion, {"type": _TYPE}),
    "MemoryHistory": typed(MemoryHistory, {"versions": _list(ref("MemoryVersion"))}),
    "EntityNames": typed(
        EntityNames, description="The entity names the caller may see (no name given)."
    ),
    "Entity": typed(
        EntityAnswer,
        {"memories": _list(_BRIEF)},
        description="One entity (name given): its spellings, memories and neighbours.",
    ),
    # The conflicts (their fields described) and the attention counts (with their
    # description) are named here.
    "Stats": typed(
        StatsAnswer,
        {"recent": _list(typed(RecentMemory, {"type": _TYPE})),
         "needs_attention": _ATTENTION,
         "conflicts": _list(_CONFLICT), "possible_conflicts": _list(_CONFLICT)},
        about={
            "namespace": _NAMESPACE_ABOUT,
            "by_type": "Memories by type (detailed stats: what the HTTP API always asks).",
            "staleness": "Memories by freshness label (detailed stats).",
            "entities": "How many entities (detailed stats).",
            "journal": "The journal's size and position (the operator only).",
            "storage_bytes": "The storage sizes (the operator only).",
            "models": "The embedding and relevance models in use.",
        },
    ),
    "Reflect": typed(
        ReflectAnswer,
        {"counts": _ATTENTION, "contradictions": _list(_CONFLICT),
         "possible_conflicts": _list(_CONFLICT),
         "forget_candidates": _list(typed(ForgetCandidate, about={
             "eviction": "Why the memory may be evicted (null: not eligible)."})),
         "dormant_entities": _list(typed(DormantEntity, about={
             "last_referenced": "When a memory last named it (null: never)."}))},
        about={"namespace": _NAMESPACE_ABOUT},
    ),
    "ListedMemory": typed(ListedMemory, {"type": _TYPE, "visibility": _VISIBILITY},
                          about=_BRIEF_ABOUT),
    "MemoryPage": typed(
        MemoryPage,
        {"memories": _list(ref("ListedMemory"))},
        about={"next_cursor": "Pass as cursor for the next page; null: the last."},
    ),
    "TagCounts": typed(
        TagCounts, description="The values of one context key (tags), most held first."
    ),
    "ChangeEvent": typed(
        ChangeEvent,
        {"memories": _list(_CHANGED_MEMORY)},
        description="The data of one `change` event of the change stream (its id: position).",
    ),
    "OpenApiDocument": typed(OpenApiDocument),
}

#: Parts of the answers the SDKs give a name of their own (``python -m tools.sdk_types``
#: names each wherever it appears: an enum by its values, an object by its schema); naming
#: one changes nothing in the document.
PARTS: dict[str, dict[str, Any]] = {
    "MemoryType": _TYPE,
    "Visibility": _VISIBILITY,
    "Brief": _BRIEF,
    "AttentionCounts": _ATTENTION,
    "Conflict": _CONFLICT,
    "Change": _CHANGE,
    "ChangedMemory": _CHANGED_MEMORY,
    "TagCount": _TAG_COUNT,
    "EntityMatch": _ENTITY_MATCH,
    "FlaggedFact": _FLAGGED,
    "SimilarMemory": _SIMILAR,
    "Redaction": _REDACTION,
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
