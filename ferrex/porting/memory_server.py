"""The reference MCP memory server's knowledge graph file, read as ferrex store requests.

That server keeps its graph as JSON lines of two kinds::

    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated in 2019"]}
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

The mapping, chosen so that nothing of the graph is lost and nothing is invented:

- an entity's type becomes a semantic fact ``name — is a — entityType`` (so an entity
  without observations is still remembered, and "what is X" finds it);
- each observation becomes an episodic memory ``"name: observation"`` (an observation
  alone, "Speaks fluent Spanish", would not say whom it is about);
- each relation becomes a semantic fact ``from — relationType — to``, stored as
  multi-valued: a graph may hold several relations of one type from one entity, and none
  of them replaces another;
- every memory is linked to the entities it names and has source ``memory-server``.

The graph has no times, so everything is valid from the moment of the import. Keys other
than these (forks add timestamps and the like) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ferrex.errors import UsageError
from ferrex.rules.memory_input import StoreRequest

SOURCE: Final = "memory-server"
TYPE_PREDICATE: Final = "is a"


@dataclass(frozen=True)
class GraphItem:
    """One store request made from one line of the graph file."""

    line: int
    what: str
    """Which part of the line: ``entity type``, ``observation N`` or ``relation``."""
    request: StoreRequest
    multi_valued: bool = False


def is_graph_line(raw: Mapping[str, Any]) -> bool:
    return raw.get("type") in ("entity", "relation")


def graph_items(raw: Mapping[str, Any], line: int) -> list[GraphItem]:
    """The store requests of one parsed line; UsageError (nothing of the line is kept) when
    the line is not an entity or a relation of the expected shape."""
    where = f"line {line}"
    kind = raw.get("type")
    if kind == "entity":
        name = _text(raw, "name", where)
        items: list[GraphItem] = []
        if raw.get("entityType") is not None:
            entity_type = _text(raw, "entityType", where)
            request = StoreRequest(
                subject=name,
                predicate=TYPE_PREDICATE,
                object=entity_type,
                entities=(name,),
                source=SOURCE,
            )
            items.append(GraphItem(line, "entity type", request))
        observations = raw.get("observations", [])
        if isinstance(observations, str) or not isinstance(observations, list):
            raise UsageError(f"observations in {where} must be a list of strings")
        for i, observation in enumerate(observations, start=1):
            if not isinstance(observation, str) or not observation.strip():
                raise UsageError(f"observation {i} in {where} must be a non-empty string")
            request = StoreRequest(
                content=f"{name}: {observation.strip()}", entities=(name,), source=SOURCE
            )
            items.append(GraphItem(line, f"observation {i}", request))
        return items
    if kind == "relation":
        source, target = _text(raw, "from", where), _text(raw, "to", where)
        request = StoreRequest(
            subject=source,
            predicate=_text(raw, "relationType", where),
            object=target,
            entities=(source, target),
            source=SOURCE,
        )
        return [GraphItem(line, "relation", request, multi_valued=True)]
    raise UsageError(
        f"{where} is neither an entity nor a relation (type {kind!r})",
        hint='memory-server lines have "type": "entity" or "type": "relation"',
    )


def _text(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where} needs {key} as a non-empty string")
    return value.strip()
