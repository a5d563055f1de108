"""The dump's line types against the event catalogue and the read model's rows: a field or
an enum value either side gains must be carried by the dump, or named as left out."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import msgspec
import pytest

from ferrex.errors import UsageError
from ferrex.porting import dump
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
