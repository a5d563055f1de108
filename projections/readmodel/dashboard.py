"""What the dashboard and the HTTP API read (``ferrex.server.dashboard.reads``): pages of
memories, context values, who could see a forgotten memory, an entity's spellings with how
each was matched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.readmodel.predicates import CURRENT, current, seen_by, unexpired
from projections.readmodel.reads import Reads, optional_text
from projections.rows import AliasMatch, Memory, viewers


def context_path(key: str) -> str:
    """The JSON path of a top-level context key (a key holding ``"`` or ``\\`` is refused
    before it gets here: ``ferrex.server.dashboard.reads``)."""
    return f'$."{key}"'


def _context_holds() -> str:
    """SQL true of a row whose context, at a path (the first parameter), is the text of the
    second, or a list holding it."""
    return (
        "EXISTS (SELECT 1 FROM json_each(memories.context, ?) AS c "
        "WHERE c.type = 'text' AND c.value = ?)"
    )


class DashboardReads(Reads):
    """The queries of the dashboard and the HTTP API."""

    def forgotten_seen(self, memory_ids: Sequence[str], agent_id: str | None) -> set[str]:
        """Which of these forgotten memories ``agent_id`` could see before they went (None:
        the operator, every one), asked in chunks of ids."""
        found: set[str] = set()
        for start in range(0, len(memory_ids), 500):
            chunk = list(memory_ids[start : start + 500])
            where = f"memory_id IN ({','.join('?' * len(chunk))})"
            if agent_id is not None:
                where += f" AND {seen_by()}"
                chunk.append(agent_id)
            sql = f"SELECT memory_id FROM forgotten WHERE {where}"
            found.update(str(row[0]) for row in self.db.execute(sql, chunk))
        return found

    def context_values(
        self,
        key: str,
        *,
        agent_id: str | None,
        now: float,
        namespace: str | None = None,
        state: str = "current",
        limit: int = 100,
    ) -> list[tuple[str, int]]:
        """The text values of context key ``key`` (a value, or the texts of a list) over the
        memories ``agent_id`` sees (None: the operator), unexpired at ``now``, with how many
        memories hold each: most first, then by value."""
        where = [unexpired(table="m."), "j.type = 'text'"]
        args: list[Any] = [now]
        if agent_id is not None:
            where.append(seen_by(table="m."))
            args.append(agent_id)
        if namespace is not None:
            where.append("m.namespace=?")
            args.append(namespace)
        if state == "current":
            where.append(current("m."))
        elif state == "superseded":
            where.append("m.t_invalid IS NOT NULL")
        sql = (f"SELECT j.value, COUNT(DISTINCT m.memory_id) AS n FROM memories AS m, "
               f"json_each(m.context, ?) AS j WHERE {' AND '.join(where)} "
               f"GROUP BY j.value ORDER BY n DESC, j.value LIMIT ?")  # fmt: skip
        rows = self.db.execute(sql, [context_path(key), *args, limit])
        return [(str(value), int(n)) for value, n in rows]

    def memory_page(
        self,
        *,
        agent_id: str | None,
        now: float,
        namespace: str | None = None,
        types: Sequence[str] = (),
        source: str | None = None,
        entity_ids: Sequence[str] | None = None,
        visibility: str | None = None,
        state: str = "current",
        after: float | None = None,
        before: float | None = None,
        sort: str = "-created",
        cursor: tuple[float, str] | None = None,
        limit: int = 50,
        context: Sequence[tuple[str, str]] = (),
    ) -> list[Memory]:
        """One page of the memories ``agent_id`` sees (None: the operator, every one), unexpired
        at ``now``, filtered, in ``sort`` order (``created`` or ``valid_from``, ``-`` first for
        newest first; ties by id), starting after ``cursor`` (the sort value and id of the
        last memory of the page before). ``state``: ``current`` (not superseded), ``superseded``
        or ``all``; ``after``/``before``: the event time's window (``t_valid``); ``context``:
        (key, value) pairs the memory's context holds, each (:func:`_context_holds`)."""
        column = {"created": "created_at", "valid_from": "t_valid"}[sort.lstrip("-")]
        newest_first = sort.startswith("-")
        where = [unexpired()]
        args: list[Any] = [now]
        if agent_id is not None:
            where.append(seen_by())
            args.append(agent_id)
        for clause, value in (("namespace=?", namespace), ("source=?", source),
                              ("visibility=?", visibility), ("t_valid>=?", after),
                              ("t_valid<?", before)):  # fmt: skip
            if value is not None:
                where.append(clause)
                args.append(value)
        if types:
            where.append(f"type IN ({','.join('?' * len(types))})")
            args.extend(types)
        if entity_ids is not None:
            if not entity_ids:
                return []
            where.append(
                "memory_id IN (SELECT memory_id FROM memory_entities WHERE entity_id IN "
                f"({','.join('?' * len(entity_ids))}))"
            )
            args.extend(entity_ids)
        if state == "current":
            where.append(CURRENT)
        elif state == "superseded":
            where.append("t_invalid IS NOT NULL")
        for key, value in context:
            where.append(_context_holds())
            args.extend([context_path(key), value])
        if cursor is not None:
            beyond = "<" if newest_first else ">"
            where.append(f"({column} {beyond} ? OR ({column} = ? AND memory_id {beyond} ?))")
            args.extend([cursor[0], cursor[0], cursor[1]])
        direction = "DESC" if newest_first else "ASC"
        sql = (f"SELECT memory_id FROM memories WHERE {' AND '.join(where)} "
               f"ORDER BY {column} {direction}, memory_id {direction} LIMIT ?")  # fmt: skip
        ids = [str(row[0]) for row in self.db.execute(sql, [*args, limit])]
        found = {m.memory_id: m for m in self.memories(memory_ids=ids)}
        return [found[i] for i in ids if i in found]

    def alias_matches(self, entity_ids: Sequence[str]) -> list[AliasMatch]:
        """Every spelling of the given entities with how it was matched when first seen
        (``exact``, ``normalized``, ``fuzzy``, ``embedding``) and that match's score, by
        entity and alias."""
        if not entity_ids:
            return []
        kept = self._kept_for(entity_ids=entity_ids)
        return [
            AliasMatch(str(e), str(a), str(m), float(s), optional_text(g), str(n),
                       viewers(optional_text(z), kept.get(str(e), ())))
            for e, a, m, s, g, n, z in self.db.execute(
                f"SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.match, a.score, "
                f"a.agent_id, a.normalized, e.agent_id FROM aliases a "
                f"LEFT JOIN entities e ON e.entity_id=a.entity_id "
                f"WHERE coalesce(e.merged_into, a.entity_id) "
                f"IN ({','.join('?' * len(entity_ids))}) ORDER BY 1, a.alias",
                list(entity_ids),
            )
        ]  # fmt: skip
