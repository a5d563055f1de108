"""The dump's line types against the event catalogue and the read model's rows: a field or
an enum value either side gains must be carried by the dump, or named as left out."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, get_args, get_origin, get_type_hints

import msgspec
import pytest

from ferrex.errors import UsageError
from ferrex.porting import dump
from ferrex.porting.lines import FlagLine, keys, values
from journal import events as ev
from projections.rows import Memory


def test_every_row_field_is_dumped_or_named_as_left_out() -> None:
    fields = {f.name for f in dataclasses.fields(Memory)}
    assert fields == set(dump.ROW_KEYS) | set(dump.ROW_NOT_DUMPED)
    assert set(dump.ROW_KEYS.values()) <= set(dump.FIELDS)


def test_every_body_field_reaches_a_row_field() -> None:
    body = {f.name for f in msgspec.structs.fields(ev.MemoryBody)}
    assert body <= set(dump.ROW_KEYS)


def test_spelling_lines_carry_every_field_of_the_spelling_event() -> None:
    on_event = {f.name for f in msgspec.structs.fields(ev.EntityAliasAdded)}
    assert on_event - {"entity_id", "namespace"} == set(dump.ALIAS_FIELDS)
    created = {f.name for f in msgspec.structs.fields(ev.EntityCreated)}
    assert created - {"entity_id"} <= set(dump.ENTITY_FIELDS)


def _entity(match: str) -> dict[str, Any]:
    return {"id": "ent_1", "type": "entity", "name": "payments repository",
            "aliases": [{"alias": "payments repo", "match": match}]}  # fmt: skip


@pytest.mark.parametrize("match", get_args(ev.AliasMatch))
def test_every_match_kind_of_the_catalogue_parses(match: str) -> None:
    parsed = dump.parse_entity_line(_entity(match), "line 1")
    assert parsed.aliases[0].match == match


def test_a_match_kind_the_catalogue_lacks_is_refused() -> None:
    with pytest.raises(UsageError, match="abbreviation"):
        dump.parse_entity_line(_entity("guessed"), "line 1")


def test_every_kind_of_the_catalogue_says_how_a_dump_carries_it() -> None:
    """A new kind of event fails here until ``dump.CARRIED`` says how it comes back (the
    round-trip property, ``tests/integration/test_backup_property.py``, draws every kind
    and shows it does)."""
    assert set(dump.CARRIED) == set(ev.EVENT_TYPES)
    assert all(how.strip() for how in dump.CARRIED.values())


def _structs_of(root: type[msgspec.Struct]) -> set[type[msgspec.Struct]]:
    """``root`` and every structure its fields hold, however deep."""
    found: set[type[msgspec.Struct]] = set()
    todo = [root]
    while todo:
        struct = todo.pop()
        if struct in found:
            continue
        found.add(struct)
        for hint in get_type_hints(struct).values():
            parts = [hint]
            while parts:
                part = parts.pop()
                if isinstance(part, type) and issubclass(part, msgspec.Struct):
                    todo.append(part)
                parts += get_args(part)
    return found


def test_every_field_of_every_event_is_carried_by_a_line_key_or_named_as_journal_only() -> None:
    """A field an event (or a structure in it) gains fails here until ``dump.EVENT_KEYS``
    names the dump key that carries it, or says it stays in the journal."""
    structs = set().union(*(_structs_of(t) for t in ev.EVENT_TYPES))
    assert structs == set(dump.EVENT_KEYS)
    for struct, carried in dump.EVENT_KEYS.items():
        assert {f.name for f in msgspec.structs.fields(struct)} == set(carried), struct
        for field, target in carried.items():
            if target is None:
                continue
            line, _, key = target.partition(".")
            assert key in keys(dump.LINES[line]), (struct.__name__, field, target)


def test_a_carried_enumeration_takes_exactly_the_catalogue_values() -> None:
    """Where an event's field is one of a set of values (a memory's type and visibility, how
    a spelling was matched), the dump key carrying it takes that same set: a value the
    catalogue gains is one the dump writes and reads back."""
    checked = 0
    for struct, carried in dump.EVENT_KEYS.items():
        hints = get_type_hints(struct)
        for field, target in carried.items():
            kinds = [a for a in get_args(hints[field]) if isinstance(a, str)]
            if target is None or get_origin(hints[field]) is not Literal:
                continue
            line, _, key = target.partition(".")
            assert set(values(dump.LINES[line], key)) == set(kinds), (struct.__name__, field)
            checked += 1
    assert checked >= 3  # a memory's type and visibility, a spelling's match


def test_flag_kinds_are_the_flag_line_types() -> None:
    assert {dump.POSSIBLE, dump.DIFFER, dump.FACTS_DIFFER} == set(
        values(dump.LINES["flag"], "type")
    )
    assert get_type_hints(dump.RestoredFlag)["kind"] == get_type_hints(FlagLine)["type"]
