"""The dump's line types: one typed structure per kind of line, the one place its keys, their
order on disk and their values are declared.

``ferrex.porting.dump`` writes every line through these structures (:func:`encode`) and
reads its lists of keys from them (:func:`keys`); a value the event catalogue constrains
takes the catalogue's own type (``journal.events.MemoryType``, ``Visibility``,
``AliasMatch``), so a kind the catalogue gains is one a dump writes and reads back, and
``tests/unit/test_dump_schema.py`` holds every field of the events and of the read model's
rows to a field here (or names it as left out). Times are RFC 3339 text, as on disk. A key
whose value is None is left off the line; the others are written in declaration order. A line
read back is decoded into the same structure (:func:`decode`): a key its kind does not have, a
value of the wrong type or outside the catalogue's enumeration is refused there, naming the
key and the line, before ``dump`` checks what types cannot say (ids, ranges, times).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeVar, get_args, get_type_hints

import msgspec

from ferrex.core.decide.restore import FlagKind
from ferrex.errors import UsageError
from journal.events import AliasMatch, MemoryType, Visibility


class Line(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every line type (a key a line type does not declare is refused on decoding)."""


class HeaderLine(Line, frozen=True, kw_only=True):
    type: Literal["ferrex_dump"] = "ferrex_dump"
    format: int
    journal_position: int | None = None
    current_only: bool = False
    namespace: str | None = None


class AliasLine(Line, frozen=True, kw_only=True):
    """One spelling of an entity (an ``entity.alias_added``, or the split-off spelling)."""

    alias: str
    normalized: str | None = None
    match: AliasMatch = "exact"
    score: float = 1.0
    agent_id: str | None = None


class EntityLine(Line, frozen=True, kw_only=True):
    id: str
    type: Literal["entity"] = "entity"
    namespace: str | None = None
    name: str
    normalized: str | None = None
    kind: str | None = None
    agent_id: str | None = None
    aliases: tuple[AliasLine, ...] | None = None
    merged_into: str | None = None
    kept_for: tuple[str, ...] | None = None


class MemoryLine(Line, frozen=True, kw_only=True):
    """One memory, as its read-model row holds it (``dump.ROW_KEYS``)."""

    id: str
    type: MemoryType
    namespace: str | None = None
    content: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    predicate_normalized: str | None = None
    name: str | None = None
    version: int | None = None
    steps: tuple[str, ...] | None = None
    conditions: tuple[str, ...] | None = None
    entities: tuple[str, ...] | None = None
    source: str | None = None
    confidence: float | None = None
    context: dict[str, Any] | None = None
    agent_id: str | None = None
    visibility: Visibility | None = None
    t_valid: str
    t_invalid: str | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    created_at: str | None = None
    last_validated: str | None = None
    last_accessed: str | None = None
    access_count: int | None = None
    importance: float | None = None
    pinned: bool | None = None
    expires_at: str | None = None
    multi_valued: bool | None = None
    episode: str | None = None
    episode_index: int | None = None
    entity_ids: tuple[str, ...] | None = None
    import_key: str | None = None
    valid_from_given: bool | None = None
    split_long: bool | None = None
    """Accepted (a store's flag written back by hand), never written: a restore needs it not."""


class FlagLine(Line, frozen=True, kw_only=True):
    """A possible conflict or a difference between two facts (``id``, ``other_id``: memories),
    or a difference between two entities."""

    id: str
    type: FlagKind
    namespace: str
    other_id: str
    entity_id: str | None = None
    other_entity_id: str | None = None
    reason: str | None = None
    score: float | None = None


class FoldLine(Line, frozen=True, kw_only=True):
    """A consolidation: ``memory_ids`` folded into the summary ``id`` at ``at``."""

    id: str
    type: Literal["consolidation"] = "consolidation"
    namespace: str
    memory_ids: tuple[str, ...]
    at: str


LINE_TYPES: Final = (HeaderLine, EntityLine, MemoryLine, FlagLine, FoldLine)


def keys(line_type: type[Line]) -> tuple[str, ...]:
    """Every key a line of ``line_type`` may have, in the order it is written."""
    return tuple(f.name for f in msgspec.structs.fields(line_type))


def values(line_type: type[Line], key: str) -> tuple[str, ...]:
    """The values a key of ``line_type`` may take when its type is an enumeration (the
    catalogue's own), else ()."""
    hint = get_type_hints(line_type)[key]
    found: list[str] = []
    for part in (hint, *get_args(hint)):
        found += [a for a in get_args(part) if isinstance(a, str)]
    return tuple(dict.fromkeys(found))


def encode(line: Line) -> bytes:
    """One line as written (without the newline): keys in declaration order, None left off,
    text as UTF-8, no insignificant whitespace."""
    return json.dumps(builtins(line), ensure_ascii=False, separators=(",", ":")).encode()


def builtins(line: Line) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in line.__struct_fields__:
        value = getattr(line, key)
        if value is None:
            continue
        if isinstance(value, Line):
            value = builtins(value)
        elif isinstance(value, tuple):
            value = [builtins(v) if isinstance(v, Line) else v for v in value]
        out[key] = value
    return out


L = TypeVar("L", bound=Line)

_ERROR: Final = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$")
_STEP: Final = re.compile(r"\.(\w+)|\[(\d+)\]")
_FIELD: Final = re.compile(r"field `(\w+)`")
_EXPECTED: Final = re.compile(r"^Expected `(\w+)")
_WORDS: Final = {
    "str": "a non-empty string", "int": "an integer", "float": "a number",
    "bool": "true or false", "array": "a list", "object": "an object",
}  # fmt: skip
_PLURAL: Final = {"str": "strings", "int": "integers", "float": "numbers", "object": "objects"}
_ONE_OF: Final = {"aliases": "alias"}
"""The name of one item of a list of objects, for the place of an error inside it."""


def decode(raw: Mapping[str, Any], line_type: type[L], where: str, what: str) -> L:
    """``raw`` (one parsed JSON line) as a ``line_type``, or UsageError naming the key, where
    it is (``alias 2 of line 7``) and what it must be; ``what``: the kind of line, for the
    hint that lists its keys."""
    try:
        return msgspec.convert(raw, line_type, strict=True)
    except msgspec.ValidationError as exc:
        raise _refusal(str(exc), line_type, where, what) from None


def _refusal(error: str, line_type: type[Line], where: str, what: str) -> UsageError:
    """msgspec's ``Expected `str`, got `int` - at `$.aliases[0].alias``` told in a dump's
    terms: ``alias in alias 1 of line 7 must be a non-empty string``."""
    found = _ERROR.match(error)
    assert found is not None  # the pattern matches any text
    message, path = found["what"], found["path"] or ""
    place, key, listed, inner, owner = where, "", "", line_type, line_type
    for name, index in _STEP.findall(path):
        if name:
            owner, key = inner, name
            hint = get_type_hints(inner).get(name)
            nested = [a for a in (hint, *get_args(hint), *_args_of(hint)) if _is_line(a)]
            inner = nested[0] if nested else inner
        else:
            place, listed, key = f"{_ONE_OF.get(key, key)} {int(index) + 1} of {place}", key, ""
    if inner is not line_type:
        what = f"each of {listed or key}"
    field = _FIELD.search(message)
    keys_of = ", ".join(f.name for f in msgspec.structs.fields(inner))
    if message.startswith("Object contains unknown field") and field:
        return UsageError(f"unknown field {field[1]!r} in {place}", hint=f"{what} has: {keys_of}")
    if message.startswith("Object missing required field") and field:
        return UsageError(f"{place} has no {field[1]}", hint=f"{what} has: {keys_of}")
    if message.startswith("Invalid enum value") and key:
        return UsageError(f"{key} in {place} must be one of {', '.join(values(owner, key))}")
    expected = _EXPECTED.match(message)
    kind = expected[1] if expected else ""
    if key:
        return UsageError(f"{key} in {place} must be {_WORDS.get(kind, kind)}")
    if listed:  # an item of a list of values (``$.entities[1]``)
        return UsageError(f"{listed} in {where} must be a list of {_PLURAL.get(kind, kind)}")
    return UsageError(f"{where} is not a dump line: {message}")


def _args_of(hint: Any) -> tuple[Any, ...]:
    return tuple(b for a in get_args(hint) for b in get_args(a))


def _is_line(candidate: Any) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, Line)
