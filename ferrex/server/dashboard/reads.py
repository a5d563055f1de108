"""The dashboard's reads that no tool gives: run in the process that owns the stores.

Reached as the ``dashboard`` entry of :meth:`ferrex.server.service.Service.call` (so through
the hub like a tool call), with the caller of the request. Every read follows the read rules
of :mod:`ferrex.read.seen` exactly as the tools and resources do: a memory the caller may
not see, or one that has expired, is not found, an entity only such memories name is
unknown, a spelling of another agent's private scope is never listed, and what counts every
agent's writes (the journal, its verification, the git export) is the operator's only.

Views (``args["view"]``):

- ``history``: a memory's versions (``Sight.history``: explicit supersedes and a fact's
  older values) with each version's times, confidence and use, for the timeline;
- ``entity``: an entity by any spelling the caller may see: its spellings with how each was
  matched, the memories naming it (newest first, a page at a time) and the entities that
  co-occur with it in those memories (the graph);
- ``entities``: the entity names the caller may see, a page at a time, optionally by prefix;
- ``memories``: a page of the memories the caller sees, filtered and sorted (a cursor);
- ``tags``: the values of one context key (``tags`` by default) over the memories the
  caller sees, with how many hold each (tags are a convention over ``context``, not a
  field of their own: see the README);
- ``changes``: the journal records after a position that changed memories the caller sees
  (or saw, for a forgotten one), each with the ids and what happened to them: the change
  stream's one read;
- ``journal``: the latest records, the head, the last ``verify`` and the git export's state;
- ``verify``: run ``journal verify`` now and remember its outcome for the journal view.
"""

from __future__ import annotations

import base64
import json
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict, get_args

from ferrex.app import App
from ferrex.errors import FerrexError, Forbidden, NotFound, UsageError, from_journal_error
from ferrex.read.seen import Brief, Sight, brief, one_line
from ferrex.rules.arguments import PAGE_LIMIT, PAGE_MAX, SORTS, STATES, TAGS_LIMIT, TAGS_MAX
from ferrex.rules.entities import Candidate
from ferrex.rules.name_lookup import find_entity
from ferrex.rules.store_fields import parse_time
from ferrex.rules.visibility import sees_scope
from ferrex.times import Rfc3339, rfc3339
from journal.errors import JournalError
from journal.events import MemoryType, Visibility, tag_of
from journal.record import to_builtins
from journal.verify import VerifyReport
from projections.rows import Memory
from projections.sqlite import ReadModel

VIEWS = ("history", "entity", "entities", "memories", "tags", "changes", "journal", "verify")
#: Memories an entity page lists per page, and the most it reads to draw the graph.
PAGE = 25
GRAPH_MEMORIES = 200
GRAPH_NODES = 12
JOURNAL_RECORDS = 20


@dataclass(frozen=True)
class Context:
    """What a view reads: the app, the caught-up read model, what the caller may see now
    (``ferrex.read.seen``: its agent id, None for the operator, the instant and the pending
    recall hits) and the namespace."""

    app: App
    rm: ReadModel
    sight: Sight
    namespace: str

    @property
    def agent_id(self) -> str | None:
        return self.sight.agent_id


# The answers of the views, each the type its view is built as (mypy checks the building
# code against it). The HTTP API's answer schemas are read from them
# (:func:`ferrex.server.dashboard.schemas.typed`), so each field is written once.


class ListedMemory(Brief):
    """One memory of a page of ``memories``."""

    namespace: str
    visibility: str
    source: str | None
    superseded_by: str | None


class MemoryPage(TypedDict):
    """``memories``: a page, and the cursor of the next (None: this is the last)."""

    memories: list[ListedMemory]
    next_cursor: str | None


class ChangedMemory(TypedDict):
    id: str
    change: str


class ChangeEvent(TypedDict):
    """One journal record of ``changes``: its position, when, and the memories it changed."""

    position: int
    recorded_at: Rfc3339
    memories: list[ChangedMemory]


class Changes(TypedDict):
    """``changes``: the records found, where the next read starts, and whether more wait."""

    changes: list[ChangeEvent]
    position: int
    more: bool


class TagCount(TypedDict):
    value: str
    count: int


class TagCounts(TypedDict):
    """``tags``: the values of one context key, most held first."""

    key: str
    tags: list[TagCount]
    more: bool


class MemoryVersion(TypedDict):
    """One version of ``history``; ``current``: the memory asked about."""

    id: str
    type: str
    summary: str
    t_valid: Rfc3339
    t_invalid: Rfc3339 | None
    created_at: Rfc3339
    superseded_by: str | None
    confidence: float
    access_count: int
    last_accessed: Rfc3339 | None
    last_validated: Rfc3339 | None
    position: int
    current: bool


class MemoryHistory(TypedDict):
    id: str
    versions: list[MemoryVersion]


class EntityNames(TypedDict):
    """``entities``: the names the caller may see, a page at a time."""

    namespace: str
    prefix: str
    names: list[str]
    offset: int
    total: int


class AliasMatch(TypedDict):
    alias: str
    match: str
    score: float


class GraphNode(TypedDict):
    name: str
    count: int


class GraphEdge(TypedDict):
    a: str
    b: str
    count: int


class Graph(TypedDict):
    memories_read: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class EntityAnswer(TypedDict):
    """``entity``: one entity's spellings, memories (a page) and neighbours."""

    namespace: str
    name: str
    aliases: list[AliasMatch]
    memories: list[Brief]
    offset: int
    more: bool
    graph: Graph


class Verified(TypedDict):
    """``verify``: the outcome of ``journal verify``."""

    ok: bool
    records: int
    head_position: int
    checked_at: Rfc3339
    seconds: float
    problem: str | None


class JournalHead(TypedDict):
    position: int
    hash: str
    recorded_at: Rfc3339 | None


class JournalRecord(TypedDict):
    position: int
    recorded_at: Rfc3339
    hash: str
    events: list[dict[str, Any]]


class GitExport(TypedDict):
    """The git export's state: its resume point, or what is wrong with it (``error``)."""

    directory: str
    error: NotRequired[str]
    position: NotRequired[int]
    recorded_at: NotRequired[str]
    commit: NotRequired[str | None]
    behind: NotRequired[int]
    current: NotRequired[bool]


class JournalView(TypedDict):
    """``journal``: the latest records, the head, the last verify and the git export."""

    head: JournalHead
    records: list[JournalRecord]
    verify: Verified | None
    git_export: GitExport | None


# The outcome of the last verify, per journal (its directory, or its PostgreSQL URL; verify
# reads the whole journal, so the journal view shows the last one and runs it only when asked).
_VERIFIED: dict[Path | str, Verified] = {}


def answer(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    view = args.get("view")
    if view == "history":
        return {**_history(ctx, _text(args.get("id"), "id"))}
    if view == "entity":
        return {**_entity(ctx, _text(args.get("name"), "name"), _offset(args))}
    if view == "entities":
        prefix = args.get("prefix", "")
        if not isinstance(prefix, str):
            raise UsageError("prefix must be text")
        return {**_entities(ctx, prefix, _offset(args))}
    if view == "memories":
        return {**_memories(ctx, args)}
    if view == "tags":
        return {**_tags(ctx, args)}
    if view == "changes":
        return {**_changes(ctx, args)}
    if view == "journal":
        return {**_journal(ctx)}
    if view == "verify":
        return {**_verify(ctx)}
    raise UsageError(f"unknown dashboard view {view!r}", hint=f"views: {', '.join(VIEWS)}")


def _memories(ctx: Context, args: Mapping[str, Any]) -> MemoryPage:
    """A page of the memories the caller sees (``GET /api/v1/memories``), newest first unless
    ``sort`` says otherwise, and the cursor of the next page (None: this is the last)."""
    sort = _choice(args.get("sort", "-created"), SORTS, "sort")
    state = _choice(args.get("state", "current"), STATES, "state")
    # A kind or a visibility that no memory can have is a mistake to name, not a filter
    # that matches nothing ("types=fact", "visibility=public").
    types = tuple(_choice(t, get_args(MemoryType), "types") for t in args.get("types") or ())
    visibility = args.get("visibility")
    if visibility is not None:
        visibility = _choice(visibility, get_args(Visibility), "visibility")
    limit = args.get("limit", PAGE_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= PAGE_MAX:
        raise UsageError(f"limit must be a whole number from 1 to {PAGE_MAX}")
    namespace = args.get("namespace")
    entity_ids = None
    if args.get("entity"):
        spellings = ctx.sight.spellings(ctx.rm, namespace or ctx.namespace)
        candidates = [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings]
        found = find_entity(_text(args["entity"], "entity"), candidates)
        entity_ids = [found] if found else []
    rows = ctx.rm.dashboard.memory_page(
        agent_id=ctx.agent_id, now=ctx.sight.now, namespace=namespace,
        types=types, source=args.get("source"),
        entity_ids=entity_ids, visibility=visibility, state=state,
        after=_when(args.get("after"), "after"), before=_when(args.get("before"), "before"),
        sort=sort, cursor=_cursor(args.get("cursor"), sort), limit=limit + 1,
        context=_context_filters(args),
    )  # fmt: skip
    more = len(rows) > limit
    page = ctx.sight.shown(rows[:limit])
    column = "created_at" if sort.lstrip("-") == "created" else "t_valid"
    after_last = _encode_cursor(rows[limit - 1], column, sort) if more else None
    return {
        "memories": [{**brief(m), "namespace": m.namespace, "source": m.source,
                      "visibility": m.visibility, "superseded_by": m.superseded_by}
                     for m in page],
        "next_cursor": after_last,
    }  # fmt: skip


#: The most journal records one ``changes`` read scans.
CHANGES_SCAN = 500
#: What each memory event is called in the change stream (other events change no memory a
#: caller reads: entities, and recall hits, which are uses, not changes).
CHANGE_NAMES = {
    "memory.stored": "stored",
    "memory.superseded": "superseded",
    "memories.forgotten": "forgotten",
    "memories.validated": "confirmed",
    "memory.marked": "marked",
    "memories.consolidated": "consolidated",
    "memories.unfolded": "unfolded",
}


def _changes(ctx: Context, args: Mapping[str, Any]) -> Changes:
    """The records after ``after`` (None: from now on, nothing read) up to the read model's
    checkpoint, at most :data:`CHANGES_SCAN` of them, each with the memories it changed that
    the caller sees now, or could see before a forget took them; records with none are left
    out. ``position``: where the next read starts; ``more``: records are waiting beyond it."""
    head = ctx.rm.checkpoint()
    after = args.get("after")
    if after is None:
        return {"changes": [], "position": head, "more": False}
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise UsageError(f"after must be a journal position (a whole number ≥ 0), got {after!r}")
    found: list[tuple[int, str, list[tuple[str, str]]]] = []
    position = min(after, head)
    scanned = 0
    try:
        for record in ctx.app.journal().read(after=position):
            if record.position > head or scanned >= CHANGES_SCAN:
                break
            scanned += 1
            position = record.position
            touched: list[tuple[str, str]] = []
            for event in record.events:
                change = CHANGE_NAMES.get(tag_of(event))
                if change is not None:
                    touched.extend((memory_id, change) for memory_id in _memory_ids(event))
            if touched:
                found.append((record.position, rfc3339(record.recorded_at), touched))
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    ids = list(dict.fromkeys(i for _, _, touched in found for i, _ in touched))
    seen = {m.memory_id for m in ctx.sight.memories(ctx.rm, ids)}
    seen |= ctx.rm.dashboard.forgotten_seen([i for i in ids if i not in seen], ctx.agent_id)
    changes: list[ChangeEvent] = []
    for at, when, touched in found:
        memories: list[ChangedMemory] = [
            {"id": i, "change": c} for i, c in dict.fromkeys(touched) if i in seen
        ]
        if memories:
            changes.append({"position": at, "recorded_at": when, "memories": memories})
    return {"changes": changes, "position": position, "more": position < head}


def _memory_ids(event: Any) -> tuple[str, ...]:
    ids: tuple[str, ...] = tuple(getattr(event, "memory_ids", ()))
    for name in ("summary_id", "memory_id"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            ids = (value, *ids)
    return ids


#: The context key whose values are a memory's tags.
TAGS_KEY = "tags"


def _context_key(value: object, name: str) -> str:
    """A top-level context key: text, not empty, at most 100 characters, no ``"``, ``\\``
    or control character (it becomes a JSON path)."""
    if not isinstance(value, str) or not value or len(value) > 100:
        raise UsageError(f"{name} must be a context key of 1 to 100 characters, got {value!r}")
    if any(c in '"\\' or not c.isprintable() for c in value):
        raise UsageError(f"{name} holds a quote, a backslash or a control character: {value!r}",
                         hint="filter on a top-level context key with a plain name")  # fmt: skip
    return value


def _context_filters(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``tags`` (each a value of the context's ``tags``) and ``context`` (each
    ``KEY:VALUE``, the key's value or one item of its list) as (key, value) pairs."""
    pairs: list[tuple[str, str]] = []
    for tag in args.get("tags") or ():
        pairs.append((TAGS_KEY, _text(tag, "tag")))
    for given in args.get("context") or ():
        text = _text(given, "context")
        key, colon, value = text.partition(":")
        if not colon:
            raise UsageError(f"context must be KEY:VALUE, got {text!r}",
                             hint="for example context=project:billing")  # fmt: skip
        pairs.append((_context_key(key, "context's key"), value))
    if len(pairs) > 20:
        raise UsageError("at most 20 tag and context filters at once")
    return pairs


def _tags(ctx: Context, args: Mapping[str, Any]) -> TagCounts:
    """The values of context key ``key`` (``tags``) over the memories the caller sees,
    ``state`` as the list's (current by default), with how many memories hold each."""
    key = _context_key(args.get("key", TAGS_KEY), "key")
    state = _choice(args.get("state", "current"), STATES, "state")
    limit = args.get("limit", TAGS_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= TAGS_MAX:
        raise UsageError(f"limit must be a whole number from 1 to {TAGS_MAX}")
    namespace = args.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise UsageError("namespace must be text")
    values = ctx.rm.dashboard.context_values(key, agent_id=ctx.agent_id, now=ctx.sight.now,
                                   namespace=namespace, state=state, limit=limit + 1)  # fmt: skip
    return {
        "key": key,
        "tags": [{"value": v, "count": n} for v, n in values[:limit]],
        "more": len(values) > limit,
    }


def _choice(value: object, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise UsageError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _when(value: object, name: str) -> float | None:
    """A time of the query, read as the tools read one (a time without a timezone refused)."""
    parsed = parse_time(value, name)
    return None if parsed is None else parsed.timestamp()


def _encode_cursor(last: Memory, column: str, sort: str) -> str:
    raw = json.dumps([getattr(last, column), last.memory_id, sort], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(value: object, sort: str) -> tuple[float, str] | None:
    """The position a cursor names; ``invalid_input`` for one this API did not give, or one
    of a list in another order (a cursor from before cursors named their sort is taken)."""
    if value is None:
        return None
    hint, text = "pass next_cursor of the page before, unchanged", str(value)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        position, memory_id, *rest = decoded
        if isinstance(position, bool) or not isinstance(position, int | float) or len(rest) > 1:
            raise ValueError(position)
    except (ValueError, TypeError) as exc:
        raise UsageError("cursor is not one this API gave", hint=hint) from exc
    if rest and rest[0] != sort:
        raise UsageError(
            f"cursor is of the list with sort={rest[0]}, not sort={sort}",
            hint=f"{hint}, with the same sort; leave cursor out to start the list again",
        )
    return float(position), str(memory_id)


def _history(ctx: Context, memory_id: str) -> MemoryHistory:
    """The versions through ``memory_id``, oldest first (``Sight.history``, the walk the
    memory resource shows too)."""
    found = ctx.sight.memories(ctx.rm, [memory_id])
    if not found:
        raise NotFound(f"no memory {memory_id!r}", hint="recall to find a memory's id")  # fmt: skip
    versions = [_version(m, m.memory_id == memory_id) for m in ctx.sight.history(ctx.rm, found[0])]
    return {"id": memory_id, "versions": versions}


def _version(m: Memory, current: bool) -> MemoryVersion:
    return {"id": m.memory_id, "type": m.type, "summary": one_line(m, 200),
            "t_valid": rfc3339(m.t_valid), "t_invalid": rfc3339(m.t_invalid),
            "created_at": rfc3339(m.created_at), "superseded_by": m.superseded_by,
            "confidence": m.confidence, "access_count": m.access_count,
            "last_accessed": rfc3339(m.last_accessed),
            "last_validated": rfc3339(m.last_validated), "position": m.position,
            "current": current}  # fmt: skip


def _entity(ctx: Context, name: str, offset: int) -> EntityAnswer:
    spellings = ctx.sight.spellings(ctx.rm, ctx.namespace)
    found = find_entity(name, [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings])
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
    memories = {m.memory_id: m for m in ctx.sight.memories(ctx.rm, ordered)}
    newest = sorted(memories.values(), key=lambda m: (-m.position, m.memory_id))
    names = ctx.rm.entity_names([found]) if found else {}
    if found is None or found not in names or not newest:
        raise NotFound(
            f"no entity {name!r} in {ctx.namespace}",
            hint="the entities page lists the names you can see",
        )
    aliases: list[AliasMatch] = [
        {"alias": a.alias, "match": a.match, "score": round(a.score, 4)}
        for a in ctx.rm.dashboard.alias_matches([found])
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
    edges: list[GraphEdge] = []
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
        "memories": [brief(m) for m in page],
        "offset": offset,
        "more": len(newest) > offset + PAGE,
        "graph": {
            "memories_read": len(window),
            "nodes": [{"name": name_of(e), "count": together[e]} for e in top],
            "edges": edges,
        },
    }


def _entities(ctx: Context, prefix: str, offset: int) -> EntityNames:
    wanted = prefix.strip().lower()
    spellings = ctx.sight.spellings(ctx.rm, ctx.namespace)
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
        raise Forbidden(
            f"{what} is the operator's only",
            hint="open the dashboard with the operator's token (`ferrex ui`)",
        )


def _journal(ctx: Context) -> JournalView:
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
        "verify": _VERIFIED.get(_journal_key(app)),
        "git_export": _git_export(app, head.position),
    }


def _record(record: Any) -> JournalRecord:
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


def _journal_key(app: App) -> Path | str:
    return app.journal_url if app.journal_url is not None else app.journal_dir


def _verified(app: App) -> VerifyReport:
    """Verify the journal this server uses: its files, or its PostgreSQL tables."""
    return app.journal().verify()


def _verify(ctx: Context) -> Verified:
    _operator_only(ctx, "verifying the journal")
    started = time.monotonic()
    try:
        report = _verified(ctx.app)
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    problem = report.problem
    doc: Verified = {
        "ok": report.ok,
        "records": report.records,
        "head_position": report.head_position,
        "checked_at": rfc3339(time.time()),
        "seconds": round(time.monotonic() - started, 3),
        "problem": None
        if problem is None
        else f"{problem.segment.name} offset {problem.offset}: {problem.kind}: {problem.reason}",
    }
    _VERIFIED[_journal_key(ctx.app)] = doc
    return doc


def _git_export(app: App, head: int) -> GitExport | None:
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


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name} is required")
    return value


def _offset(args: Mapping[str, Any]) -> int:
    value = args.get("offset", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100_000:
        raise UsageError("offset must be a whole number from 0 to 100000")
    return value
