"""The reads every consumer shares: memories by id or namespace (with their entities), the
entities, their spellings and links, facts of a subject, folds, expiries and conflicts.

:class:`Reads` is the base of each consumer's query object (``projections.readmodel.recall``,
``insight``, ``dashboard``, ``export``, ``decisions``, ``maintenance``) and of the
``ReadModel`` façade: every query runs on the store's connection for this thread
(:attr:`projections.readmodel.store.Store.db`), so a snapshot holds for all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import apsw

from journal.events import given_by_time
from projections.readmodel.predicates import current, seen_by
from projections.readmodel.store import Store
from projections.rows import RELATION, RESTATES, Entity, Memory, PossibleConflict, Spelling, viewers

CHUNK = 5_000
"""The most ids one ``IN (...)`` query of :meth:`Reads.by_ids` names."""

PAGE = 256
"""Rows per page of the read model's paged queries."""


def optional_text(value: object) -> str | None:
    return None if value is None else str(value)


def spelling_of(row: tuple[Any, ...], kept: Mapping[str, Sequence[str]]) -> Spelling:
    """A spelling from ``SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.normalized,
    a.agent_id, e.merged_into, a.entity_id, e.agent_id`` (aliases joined to entities)."""
    entity, alias, normalized, agent, merged_into, recorded, scope = row
    return Spelling(str(entity), str(alias), str(normalized), optional_text(agent),
                    None if merged_into is None else str(recorded),
                    viewers(optional_text(scope), kept.get(str(entity), ())))  # fmt: skip


class Reads:
    """Queries over the read model file of ``store``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def db(self) -> apsw.Connection:
        """The connection this thread's queries use: its snapshot's, else the writer's."""
        return self._store.db

    def get(self, memory_id: str) -> Memory | None:
        rows = self.memories(memory_ids=[memory_id])
        return rows[0] if rows else None

    def memories(
        self, *, memory_ids: Sequence[str] | None = None, namespace: str | None = None
    ) -> list[Memory]:
        """Memories by id and/or namespace (all of them when both are None), with entities."""
        where: list[str] = []
        args: list[Any] = []
        if memory_ids is not None:
            if not memory_ids:
                return []
            where.append(f"memory_id IN ({','.join('?' * len(memory_ids))})")
            args.extend(memory_ids)
        if namespace is not None:
            where.append("namespace=?")
            args.append(namespace)
        sql = "SELECT * FROM memories"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY memory_id"
        rows = list(self.db.execute(sql, args))
        # Every row's entities in one query, not one per row: by ids (recall asks for dozens
        # at a time), or for a whole namespace (stats and reflect read every memory).
        linked = self._grouped(
            "SELECT me.memory_id, me.entity_id FROM memory_entities AS me",
            "me.memory_id", memory_ids, namespace,
            "JOIN memories AS m ON m.memory_id = me.memory_id WHERE m.namespace=?",
            " ORDER BY me.memory_id, me.entity_id",
        )  # fmt: skip
        return [self._memory(row, tuple(linked.get(str(row[0]), ()))) for row in rows]

    def _memory(self, row: tuple[Any, ...], entity_ids: tuple[str, ...] | None = None) -> Memory:
        (mid, ns, typ, content, subj, _skey, pred, obj, pnorm, pname, pver, conds, steps, source,
         context, conf, agent, vis, sup, tv, ti, sby, created, pos, red, acount, lacc,
         lval, multi, episode, episode_index, importance, pinned, expires_at,
         import_key, _form, *rest) = row  # fmt: skip
        # NULL (a row folded before the flag existed) or absent (an older file opened
        # read-only): read by the rule for events without it.
        given = rest[0] if rest else None
        if entity_ids is None:
            entity_ids = tuple(
                str(e)
                for (e,) in self.db.execute(
                    "SELECT entity_id FROM memory_entities WHERE memory_id=? ORDER BY entity_id",
                    (mid,),
                )
            )
        return Memory(
            memory_id=mid,
            namespace=ns,
            type=typ,
            content=content,
            subject=subj,
            predicate=pred,
            object=obj,
            predicate_normalized=pnorm,
            procedure_name=pname,
            procedure_version=pver,
            conditions=tuple(json.loads(conds)) if conds else (),
            steps=tuple(json.loads(steps)) if steps else (),
            source=source,
            context=json.loads(context) if context else None,
            confidence=conf,
            agent_id=agent,
            visibility=vis,
            supersedes=sup,
            t_valid=tv,
            t_invalid=ti,
            superseded_by=sby,
            created_at=created,
            position=pos,
            redacted=bool(red),
            access_count=acount,
            last_accessed=lacc,
            last_validated=lval,
            entity_ids=entity_ids,
            multi_valued=bool(multi),
            episode=episode,
            episode_index=int(episode_index),
            importance=float(importance),
            pinned=bool(pinned),
            expires_at=expires_at,
            import_key=import_key,
            valid_from_given=given_by_time(tv, created) if given is None else bool(given),
        )

    def _where(self, sql: str, args: Sequence[Any]) -> list[Memory]:
        return [self._memory(row) for row in self.db.execute(sql, args)]

    def subject_facts(self, namespace: str, key: str) -> list[Memory]:
        """Every semantic memory of one subject (valid or not), by id."""
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND subject_key=? AND type='semantic' "
            "ORDER BY memory_id",
            (namespace, key),
        )

    def facts_holding(self, namespace: str, words: Sequence[str]) -> list[Memory]:
        """The semantic facts of a namespace not superseded whose object holds one of
        ``words`` (letters and digits, as a part of it, in any case), by id: the facts a
        note naming a value may mean. None for no words."""
        words = [w for w in words if w.isalnum()]
        if not words:
            return []
        held = " OR ".join("object LIKE ?" for _ in words)
        return self._where(
            "SELECT * FROM memories WHERE namespace=? AND type='semantic' "
            f"AND superseded_by IS NULL AND ({held}) ORDER BY memory_id",
            (namespace, *(f"%{w}%" for w in words)),
        )

    def spellings(self, namespace: str) -> list[Spelling]:
        """Every known spelling of every entity of a namespace, by normalized form. The
        spellings of an entity merged into another are that other's.

        Kept per namespace until the file's spelling generation moves (read before the
        spellings, so a list is never older than the generation it is kept under)."""
        try:
            generation = int(self.db.execute("SELECT n FROM spelling_generation").get)
        except apsw.SQLError:  # an older ferrex's file, opened immutable: nothing to key on
            return self._read_spellings(namespace)
        cached = self._store.spelling_cache.get(namespace)
        if cached is not None and cached[0] == generation:
            return list(cached[1])
        found = self._read_spellings(namespace)
        self._store.spelling_cache[namespace] = (generation, tuple(found))
        return found

    def _read_spellings(self, namespace: str) -> list[Spelling]:
        kept = self._kept_for(namespace)
        return [
            spelling_of(row, kept)
            for row in self.db.execute(
                "SELECT coalesce(e.merged_into, a.entity_id), a.alias, a.normalized, a.agent_id, "
                "e.merged_into, a.entity_id, e.agent_id "
                "FROM aliases a LEFT JOIN entities e ON e.entity_id=a.entity_id "
                "WHERE a.namespace=? ORDER BY a.normalized, 1",
                (namespace,),
            )
        ]  # fmt: skip

    def _kept_for(
        self, namespace: str | None = None, entity_ids: Sequence[str] | None = None
    ) -> dict[str, list[str]]:
        """Entity id → the agents a cascade kept it for (entities kept for everyone absent)."""
        return self._grouped(
            "SELECT k.entity_id, k.agent_id FROM entity_kept_for AS k",
            "k.entity_id", entity_ids, namespace,
            "JOIN entities AS e ON e.entity_id = k.entity_id WHERE e.namespace=?",
        )  # fmt: skip

    def _grouped(
        self,
        select: str,
        key: str,
        ids: Sequence[str] | None,
        namespace: str | None,
        in_namespace: str,
        order: str = "",
    ) -> dict[str, list[str]]:
        """The pairs ``select`` reads, grouped by their first column: of the ``ids`` (on
        column ``key``), else of a ``namespace`` (through the join ``in_namespace``), else
        all of them."""
        rows: Iterable[tuple[Any, ...]]
        if ids is None and namespace is not None:
            rows = self.db.execute(f"{select} {in_namespace}{order}", (namespace,))
        else:
            rows = self._in(select, key, ids, order)
        found: dict[str, list[str]] = {}
        for a, b in rows:
            found.setdefault(str(a), []).append(str(b))
        return found

    def entities(self, namespace: str | None = None) -> list[Entity]:
        """The entities of a namespace (of all of them when None), by id; not those merged
        into another."""
        where, args = ("WHERE namespace=?", (namespace,)) if namespace else ("", ())
        kept = self._kept_for(namespace or None)
        return [
            Entity(
                str(e),
                str(ns),
                str(n),
                optional_text(g),
                str(z),
                optional_text(k),
                viewers(optional_text(g), kept.get(str(e), ())),
            )
            for e, ns, n, g, z, k in self.db.execute(
                f"SELECT entity_id, namespace, name, agent_id, normalized, kind FROM entities "
                f"{where} {'AND' if where else 'WHERE'} merged_into IS NULL ORDER BY entity_id",
                args,
            )
        ]

    def entity_names(self, entity_ids: Sequence[str] | None = None) -> dict[str, str]:
        """Entity id → name, for the given ids (every entity when None)."""
        rows = self._in("SELECT entity_id, name FROM entities", "entity_id", entity_ids)
        return {str(e): str(n) for e, n in rows}

    def links(self, entity_ids: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(entity id, memory id) pairs, for the given entities (every link when None)."""
        rows = self._in("SELECT entity_id, memory_id FROM memory_entities", "entity_id", entity_ids)
        return sorted((str(e), str(m)) for e, m in rows)

    def _in(
        self, select: str, key: str, ids: Sequence[str] | None, then: str = ""
    ) -> Iterable[tuple[Any, ...]]:
        """The rows of ``select`` whose column ``key`` is one of ``ids`` (none when there are
        none; all of them when ``ids`` is None), ``then`` (a GROUP BY, an ORDER BY) applied."""
        if ids is None:
            return self.db.execute(f"{select}{then}")
        if not ids:
            return ()
        marks = ",".join("?" * len(ids))
        return self.db.execute(f"{select} WHERE {key} IN ({marks}){then}", list(ids))

    def entity_links(
        self,
        namespace: str,
        entity_ids: Sequence[str],
        *,
        agent_id: str | None = None,
        only_valid: bool = True,
        limit: int = 200,
    ) -> list[tuple[str, str]]:
        """(memory id, entity id) pairs of the memories of ``namespace`` that name one of
        ``entity_ids``, from the latest memories (by journal position) back, at most
        ``limit`` memories. With ``agent_id``, only memories that agent may see (the rule
        of ``ferrex.rules.visibility``), chosen before the limit, so another agent's
        private memories never take a place; ``only_valid`` leaves out invalidated ones."""
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        seen = "" if agent_id is None else f" AND {seen_by(table='m.')}"
        valid = f" AND {current('m.')}" if only_valid else ""
        args: list[Any] = [namespace, *entity_ids]
        if agent_id is not None:
            args.append(agent_id)
        rows = self.db.execute(
            f"SELECT m.memory_id FROM memories m WHERE m.namespace=? AND m.memory_id IN "
            f"(SELECT memory_id FROM memory_entities WHERE entity_id IN ({marks})){seen}{valid} "
            f"ORDER BY m.position DESC, m.memory_id LIMIT ?",
            (*args, limit),
        )
        chosen = [str(m) for (m,) in rows]
        if not chosen:
            return []
        pairs = self.db.execute(
            f"SELECT memory_id, entity_id FROM memory_entities WHERE memory_id IN "
            f"({','.join('?' * len(chosen))}) AND entity_id IN ({marks})",
            (*chosen, *entity_ids),
        )
        return sorted((str(m), str(e)) for m, e in pairs)

    def possible_conflicts(
        self, memory_ids: Sequence[str] | None = None, namespace: str | None = None
    ) -> list[PossibleConflict]:
        """The possible conflicts of the given memories (of a namespace, or all, when None),
        seen from each side, without pairs whose entities were merged or said to differ,
        by memory and other."""
        if memory_ids is not None and not memory_ids:
            return []
        where, args = "", []
        if memory_ids is not None:
            marks = ",".join("?" * len(memory_ids))
            where = f"WHERE memory_id IN ({marks}) OR other_id IN ({marks})"
            args = [*memory_ids, *memory_ids]
        elif namespace is not None:
            where, args = "WHERE namespace=?", [namespace]
        rows = list(
            self.db.execute(
                "SELECT memory_id, other_id, entity_id, other_entity_id, reason, score "
                f"FROM possible_conflicts {where}",
                args,
            )
        )
        named = sorted({str(e) for row in rows for e in row[2:4]})
        differ = (
            {
                (str(a), str(b))
                for a, b in self.db.execute(
                    f"SELECT entity_id, other_id FROM entity_differs WHERE entity_id IN "
                    f"({','.join('?' * len(named))})",
                    named,
                )
            }
            if named
            else set()
        )
        out: dict[tuple[str, str], PossibleConflict] = {}
        for m, o, e, oe, r, sc in rows:
            # Subjects merged: a contradiction proper, unless the relations differed.
            merged = e == oe and r not in (RELATION, RESTATES)
            if merged or tuple(sorted((str(e), str(oe)))) in differ:
                continue
            out.setdefault(
                (str(m), str(o)),
                PossibleConflict(str(m), str(o), str(e), str(oe), str(r), float(sc)),
            )
            out.setdefault(
                (str(o), str(m)),
                PossibleConflict(str(o), str(m), str(oe), str(e), str(r), float(sc)),
            )
        wanted = None if memory_ids is None else set(memory_ids)
        return [c for key, c in sorted(out.items()) if wanted is None or c.memory_id in wanted]

    def folded(self, summary_id: str) -> list[str]:
        """The memories folded into the summary ``summary_id`` (empty: not a summary)."""
        return [
            str(m)
            for (m,) in self.db.execute(
                "SELECT memory_id FROM folds WHERE summary_id=? ORDER BY memory_id", (summary_id,)
            )
        ]

    def summaries(self, namespace: str | None = None) -> dict[str, list[str]]:
        """Every consolidation summary (of ``namespace`` when given) → the memories folded
        into it, both in id order."""
        sql = "SELECT summary_id, memory_id FROM folds"
        args: list[Any] = []
        if namespace is not None:
            sql += " WHERE namespace=?"
            args.append(namespace)
        found: dict[str, list[str]] = {}
        for s, m in self.db.execute(sql + " ORDER BY summary_id, memory_id", args):
            found.setdefault(str(s), []).append(str(m))
        return found

    def expiring(self, *, by: float | None = None) -> list[Memory]:
        """The memories with an expiry (``expires_at``), soonest first; with ``by``, only
        those expiring at or before it (what a sweep at ``by`` forgets)."""
        if by is None:
            return self._where(
                "SELECT * FROM memories WHERE expires_at IS NOT NULL "
                "ORDER BY expires_at, memory_id",
                (),
            )
        return self._where(
            "SELECT * FROM memories WHERE expires_at <= ? ORDER BY expires_at, memory_id", (by,)
        )

    def by_ids(self, memory_ids: Sequence[str]) -> list[Memory]:
        """:meth:`memories` of any number of ids (asked in chunks), by id."""
        ids = sorted(set(memory_ids))
        out: list[Memory] = []
        for start in range(0, len(ids), CHUNK):
            out.extend(self.memories(memory_ids=ids[start : start + CHUNK]))
        return sorted(out, key=lambda m: m.memory_id)

    def count(self) -> int:
        """How many memories the read model holds."""
        return int(self.db.execute("SELECT count(*) FROM memories").get or 0)

    def episode_before(self, namespace: str, key: str, position: int) -> tuple[str, str] | None:
        """The (id, text) of the last episodic memory with text of one episode stored before
        journal ``position``: ``key`` is ``source:<source>`` or ``episode:<id>`` (see
        ``projections.vector_sink.episode_key``). The neighbour a turn is embedded with."""
        kind, _, value = key.partition(":")
        column = "source" if kind == "source" else "episode"
        row = self.db.execute(
            f"SELECT memory_id, content FROM memories WHERE namespace=? AND {column}=? "
            "AND type='episodic' AND content IS NOT NULL AND position<? "
            "ORDER BY position DESC LIMIT 1",
            (namespace, value, position),
        ).get
        return (str(row[0]), str(row[1])) if row is not None else None
