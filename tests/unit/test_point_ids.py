"""Point ids are the RFC 9562 name-based (SHA-1) UUIDs of the memory's part or spelling: the
ids a home already holds, so a rebuild overwrites its points instead of adding new ones."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from projections.vector_sink import _POINT_NAMESPACE, alias_point_id, point_id

_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


@given(_TEXT, st.integers(min_value=0, max_value=10_000))
def test_point_id_is_uuid5_of_the_part(memory_id: str, part: int) -> None:
    expected = str(uuid.uuid5(_POINT_NAMESPACE, f"{memory_id}#{part}"))
    assert point_id(memory_id, part) == expected


@given(_TEXT, _TEXT, _TEXT)
def test_alias_point_id_is_uuid5_of_the_spelling(ns: str, normalized: str, entity: str) -> None:
    key = f"alias\x00{ns}\x00{normalized}\x00{entity}"
    assert alias_point_id(ns, normalized, entity) == str(uuid.uuid5(_POINT_NAMESPACE, key))


def test_known_point_id() -> None:
    # Fixed: a change here would orphan every point of every home.
    assert point_id("m1") == "b3dfcc2e-bbd5-59c1-8dc8-ddba427c1507"
    assert uuid.UUID(point_id("m1", 3)).version == 5
