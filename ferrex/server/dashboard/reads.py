"""The dashboard's reads that no tool gives: run in the process that owns the stores.

Reached as the ``dashboard`` entry of :meth:`ferrex.server.service.Service.call` (so through
the hub like a tool call), with the caller of the request. Every read follows
:mod:`ferrex.rules.visibility` exactly as the tools and resources do: a memory the caller may
not see is not found, an entity only such memories name is unknown, a spelling of another
agent's private scope is never listed, and what counts every agent's writes (the journal,
its verification, the git export) is the operator's only.

Views (``args["view"]``):

- ``history``: a memory's supersede chain (explicit supersedes and a fact's older values)
  with each version's times, confidence and use, for the timeline;
- ``entity``: an entity by any spelling the caller may see: its spellings with how each was
  matched, the memories naming it (newest first, a page at a time) and the entities that
  co-occur with it in those memories (the graph);
- ``entities``: the entity names the caller may see, a page at a time, optionally by prefix;
- ``journal``: the latest records, the head, the last ``verify`` and the git export's state;
- ``verify``: run ``journal verify`` now and remember its outcome for the journal view.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferrex.app import App
from ferrex.errors import FerrexError, Refused, UsageError, from_journal_error
from ferrex.read.insight import Pending, one_line, with_pending
from ferrex.rules.entities import Candidate, resolve_entity
from ferrex.rules.visibility import sees, sees_scope
from ferrex.times import rfc3339
from journal.errors import JournalError
from journal.record import to_builtins
from journal.verify import verify
from projections.sqlite import Memory, ReadModel

VIEWS = ("history", "entity", "entities", "journal", "verify")
#: Memories an entity page lists per page, and the most it reads to draw the graph.
PAGE = 25
GRAPH_MEMORIES = 200
GRAPH_NODES = 12
#: The longest supersede chain a history walks, each way.
CHAIN = 50
JOURNAL_RECORDS = 20


@dataclass(frozen=True)
class Context:
    """What a view reads: the app, the caught-up read model, pending recall hits and who
    asks (an agent id, None for the operator, and the namespace)."""

    app: App
    rm: ReadModel
    pending: Pending
    agent_id: str | None
    namespace: str


# The outcome of the last verify, per journal directory (verify reads the whole journal,
# so the journal view shows the last one and runs it only when asked).
_VERIFIED: dict[Path, dict[str, Any]] = {}


def answer(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    view = args.get("view")
    if view == "history":
        return _history(ctx, _text(args.get("id"), "id"))
    if view == "entity":
        return _entity(ctx, _text(args.get("name"), "name"), _offset(args))
    if view == "entities":
        prefix = args.get("prefix", "")
        if not isinstance(prefix, str):
            raise UsageError("prefix must be text")
        return _entities(ctx, prefix, _offset(args))
    if view == "journal":
        return _journal(ctx)
    if view == "verify":
        return _verify(ctx)
    raise UsageError(f"unknown dashboard view {view!r}", hint=f"views: {', '.join(VIEWS)}")


def _history(ctx: Context, memory_id: str) -> dict[str, Any]:
    """The chain of versions through ``memory_id``, oldest first: back through what each
    replaced (``supersedes``, or a fact's older value), forward through ``superseded_by``;
    only versions the caller may see, at most :data:`CHAIN` each way."""
    found = _seen(ctx, ctx.rm.memories(memory_ids=[memory_id]))
    if not found:
        raise Refused(f"no memory {memory_id!r}", code="not_found",
                      hint="recall to find a memory's id")  # fmt: skip
    memory = found[0]
    chain = {memory.memory_id}
    older: list[Memory] = []
    current = memory
    while len(older) < CHAIN:
        before = _seen(ctx, ctx.rm.replaced_by(current.memory_id))
        if current.supersedes:
            before += _seen(ctx, ctx.rm.memories(memory_ids=[current.supersedes]))
        before = [m for m in before if m.memory_id not in chain]
        if not before:
            break
        current = max(before, key=lambda m: (m.t_valid, m.memory_id))
        chain.add(current.memory_id)
        older.append(current)
    newer: list[Memory] = []
    current = memory
    while len(newer) < CHAIN and current.superseded_by:
        after = [m for m in _seen(ctx, ctx.rm.memories(memory_ids=[current.superseded_by]))
                 if m.memory_id not in chain]  # fmt: skip
        if not after:
            break
        current = after[0]
        chain.add(current.memory_id)
        newer.append(current)
    versions = [_version(m, m.memory_id == memory_id) for m in (*reversed(older), memory, *newer)]
    return {"id": memory_id, "versions": versions}


def _version(m: Memory, current: bool) -> dict[str, Any]:
    return {"id": m.memory_id, "type": m.type, "summary": one_line(m, 200),
            "t_valid": rfc3339(m.t_valid), "t_invalid": rfc3339(m.t_invalid),
            "created_at": rfc3339(m.created_at), "superseded_by": m.superseded_by,
            "confidence": m.confidence, "access_count": m.access_count,
            "last_accessed": rfc3339(m.last_accessed),
            "last_validated": rfc3339(m.last_validated), "position": m.position,
            "current": current}  # fmt: skip


def _visible_spellings(ctx: Context) -> list[Any]:
    return [
        s
        for s in ctx.rm.spellings(ctx.namespace)
        if sees_scope(ctx.agent_id, s.agent_id, s.viewers)
    ]


def _entity(ctx: Context, name: str, offset: int) -> dict[str, Any]:
    spellings = _visible_spellings(ctx)
    found = resolve_entity(
        name, [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings]
    ).entity_id
    visible_ids = {s.entity_id for s in spellings}
    chosen = (
        [
            m
            for m, _ in ctx.rm.entity_links(
                ctx.namespace,
                [found],
                agent_id=ctx.agent_id,
                only_valid=False,
                limit=GRAPH_MEMORIES + offset,
            )
        ]
        if found
        else []
    )
    ordered = list(dict.fromkeys(chosen))
    memories = {m.memory_id: m for m in _seen(ctx, ctx.rm.memories(memory_ids=ordered))}
    newest = sorted(memories.values(), key=lambda m: (-m.position, m.memory_id))
    names = ctx.rm.entity_names([found]) if found else {}
    if found is None or found not in names or not newest:
        raise Refused(
            f"no entity {name!r} in {ctx.namespace}",
            code="not_found",
            hint="the entities page lists the names you can see",
        )
    aliases = [
        {"alias": a.alias, "match": a.match, "score": round(a.score, 4)}
        for a in ctx.rm.alias_matches([found])
        if sees_scope(ctx.agent_id, a.agent_id, a.viewers)
    ]
    together: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    window = newest[:GRAPH_MEMORIES]
    for m in window:
        others = sorted(e for e in m.entity_ids if e != found and e in visible_ids)
        together.update(others)
        for i, a in enumerate(others):
            for b in others[i + 1 :]:
                pairs[(a, b)] += 1
    # Ordered by names, never by ids (random): the same memories draw the same graph.
    every = ctx.rm.entity_names(list(together))

    def name_of(entity_id: str) -> str:
        return every.get(entity_id) or entity_id

    ranked = sorted(together, key=lambda i: (-together[i], name_of(i).lower(), name_of(i)))
    top = ranked[:GRAPH_NODES]
    kept = set(top)
    edges = []
    for (a, b), n in pairs.items():
        if a in kept and b in kept:
            first, second = sorted((name_of(a), name_of(b)))
            edges.append({"a": first, "b": second, "count": n})
    edges.sort(key=lambda edge: (str(edge["a"]), str(edge["b"])))
    page = newest[offset : offset + PAGE]
    return {
        "namespace": ctx.namespace,
        "name": names[found],
        "aliases": aliases,
        "memories": [_brief(m) for m in page],
        "offset": offset,
        "more": len(newest) > offset + PAGE,
        "graph": {
            "memories_read": len(window),
            "nodes": [{"name": name_of(e), "count": together[e]} for e in top],
            "edges": edges,
        },
    }


def _entities(ctx: Context, prefix: str, offset: int) -> dict[str, Any]:
    wanted = prefix.strip().lower()
    spellings = _visible_spellings(ctx)
    ids = sorted({s.entity_id for s in spellings})
    names = ctx.rm.entity_names(ids)
    listed = sorted(
        {n for e, n in names.items() if not wanted or n.lower().startswith(wanted)},
        key=lambda n: (n.lower(), n),
    )
    return {
        "namespace": ctx.namespace,
        "prefix": prefix,
        "names": listed[offset : offset + PAGE * 4],
        "offset": offset,
        "total": len(listed),
    }


def _operator_only(ctx: Context, what: str) -> None:
    if ctx.agent_id is not None:
        # The journal holds every agent's writes, private ones included.
        raise Refused(
            f"{what} is the operator's only",
            code="forbidden",
            hint="open the dashboard with the operator's token (`ferrex ui`)",
        )


def _journal(ctx: Context) -> dict[str, Any]:
    _operator_only(ctx, "the journal")
    app = ctx.app
    try:
        journal = app.journal()
        head = journal.refresh()
        after = max(0, head.position - JOURNAL_RECORDS)
        records = [_record(r) for r in journal.read(after=after, hashes=True)]
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    return {
        "head": {
            "position": head.position,
            "hash": head.hash.hex(),
            "recorded_at": rfc3339(head.recorded_at) if head.recorded_at else None,
        },
        "records": list(reversed(records)),
        "verify": _VERIFIED.get(app.journal_dir),
        "git_export": _git_export(app, head.position),
    }


def _record(record: Any) -> dict[str, Any]:
    view = to_builtins(record)
    events = []
    for event in view["events"]:
        ids = event.get("memory_id") or event.get("memory_ids") or event.get("entity_id")
        events.append({"event": event.get("event"), "ids": ids})
    return {
        "position": view["position"],
        "recorded_at": view["recorded_at"],
        "hash": view["hash"],
        "events": events,
    }


def _verify(ctx: Context) -> dict[str, Any]:
    _operator_only(ctx, "verifying the journal")
    directory = ctx.app.journal_dir
    started = time.monotonic()
    try:
        report = verify(directory)
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    problem = report.problem
    doc = {
        "ok": report.ok,
        "records": report.records,
        "head_position": report.head_position,
        "checked_at": rfc3339(time.time()),
        "seconds": round(time.monotonic() - started, 3),
        "problem": None
        if problem is None
        else f"{problem.segment.name} offset {problem.offset}: {problem.kind}: {problem.reason}",
    }
    _VERIFIED[directory] = doc
    return doc


def _git_export(app: App, head: int) -> dict[str, Any] | None:
    """The configured export's resume point and whether it holds every record."""
    configured = app.config["dashboard.git_export"]
    if not configured:
        return None
    from ferrex.porting.gitexport import inspect_target

    directory = Path(configured).expanduser()
    try:
        target = inspect_target(directory)
    except FerrexError as exc:
        return {"directory": str(directory), "error": exc.message}
    if target.state is None:
        return {"directory": str(directory), "error": "no export there yet"}
    state = target.state
    return {
        "directory": str(directory),
        "position": state.position,
        "recorded_at": state.recorded_at,
        "commit": target.head,
        "behind": max(0, head - state.position),
        "current": state.position >= head,
    }


def _seen(ctx: Context, memories: list[Memory]) -> list[Memory]:
    return [
        with_pending(m, ctx.pending)
        for m in memories
        if sees(ctx.agent_id, m.agent_id, m.visibility)
    ]


def _brief(m: Memory) -> dict[str, Any]:
    return {
        "id": m.memory_id,
        "type": m.type,
        "event_time": rfc3339(m.t_valid),
        "t_invalid": rfc3339(m.t_invalid),
        "summary": one_line(m, 200),
    }


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name} is required")
    return value


def _offset(args: Mapping[str, Any]) -> int:
    value = args.get("offset", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100_000:
        raise UsageError("offset must be a whole number from 0 to 100000")
    return value
