"""The agent tools (store, recall, confirm, forget, reflect, stats) and resources over one App.

This is the one place the tools' semantics live: the MCP server calls it in the process that
owns the data directory, and other processes reach it through :mod:`ferrex.server.hub`. A call
arrives as its typed request (:mod:`ferrex.server.tool_calls`: decoded once where it entered
the process), answers leave as JSON documents, and failures are :class:`FerrexError` with a
stable code.

Who is asking matters: a :class:`Caller` carries the agent id and default namespace of the
process the agent talks to. An agent sees shared memories, memories with no owner and its
own private ones; a caller without an agent id is the operator and sees everything. The
resources (:meth:`Service.resource`) follow the same rule: an id the caller may not see reads
exactly like one that does not exist, an entity only invisible memories name is unknown.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import unquote

from ferrex.app import App, translated
from ferrex.config import Config, staleness_config
from ferrex.core.decide.forget import ConfirmAnswer
from ferrex.errors import NotFound, UsageError
from ferrex.ids import ID_IN_TEXT
from ferrex.models.sparse import Bm25Encoder
from ferrex.read.insight import directory_bytes, reflect, stats
from ferrex.read.request import RecallAnswer, RecallRequest
from ferrex.read.seen import MemoryDetail, MemoryLink, Sight, brief, one_line
from ferrex.rules.arguments import (
    DEFAULT_STRATEGY,
    MAX_MAX_TOKENS,
    MAX_REFLECT_LIMIT,
    MIN_MAX_TOKENS,
)
from ferrex.rules.entities import Candidate
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE, check_importance, marks_doc
from ferrex.rules.memory_input import StoreRequest
from ferrex.rules.name_lookup import find_entity
from ferrex.server.answers import recall_text
from ferrex.server.caller import Caller as Caller
from ferrex.server.caller import error_document as error_document
from ferrex.server.tool_calls import (
    READ_ONLY,
    RESOURCE_HINT,
    Confirm,
    Consolidate,
    DashboardRead,
    EntityCommand,
    Forget,
    ReadResource,
    Recall,
    Reflect,
    Stats,
    Store,
    ToolRequest,
    optional_text,
    within,
)
from ferrex.times import rfc3339
from projections.gate import Gate
from projections.readmodel.predicates import is_current
from projections.rows import Memory
from projections.sqlite import ReadModel

if TYPE_CHECKING:
    from ferrex.write.writer import Writer

_RECENT = 10
_ENTITY_ACTIONS: tuple[Literal["merge", "split", "differ"], ...] = ("merge", "split", "differ")


#: The most tokens one id takes in the embedding model's tokenizer (measured on 3,000 ids: 19
#: to 30, its random letters split unevenly).
ID_TOKENS: Final = 30


class Service:
    """The tools over one App, called from many threads at once.

    Reads (recall, stats, reflect, the resources) run in parallel with each other and with a
    write, each on one consistent state of the projections (``Projections.reading``: a SQLite
    snapshot on the thread's own connection, applies held off while it runs). Writes take
    turns here and then the journal's writer lock (``ferrex.core.runner``). Opening the
    stores takes its own lock, and :meth:`close` waits for the calls in progress.
    """

    def __init__(self, app: App) -> None:
        self.app = app
        self._calls = Gate()  # calls share it; close() takes it alone
        self._opening = threading.Lock()  # the App opens its parts lazily, once
        self._writes = threading.Lock()
        self._consolidated_at: float | None = None  # the last consolidation pass (monotonic)

    def warm(self) -> None:
        """Open the journal, the projections and the models now rather than at the first call."""
        with self._calls.shared(), self._opening:
            # On its own thread: a first call that needs no model does not wait for it.
            self.app.embedder().load_in_background()
            self.app.writer()
            self.app.reader()
            # Qdrant Edge opens a collection at its first query: 0.2-0.3 s of the first
            # recall's, unless it is opened here.
            projections = self.app.projections()
            projections.backend.count(projections.live.memories)

    def reconfigure(self, config: Config) -> None:
        with self._calls.shared(), self._writes, self._opening:
            self.app.reconfigure(config)

    def flush_access(self) -> None:
        """Journal the recall hits counted so far (a server does it every few seconds)."""
        with self._calls.shared(), self._writes:
            if not self.app.read_only and len(self.app.access):
                self._writer()  # the flush goes through it
            self.app.flush_access()

    def sweep_expired(self) -> int:
        """Forget the memories whose time to live has run out (the owner does it every
        few seconds); how many."""
        with self._calls.shared(), self._writes:
            if self.app.read_only:
                return 0
            with translated():
                return self._writer().sweep_due()

    def consolidate_due(self) -> int:
        """The owner's consolidation pass (off unless ``consolidation.after_days`` is set):
        at most every ``consolidation.every_seconds``, fold every agent's episodes learned
        more than that many days ago; how many memories were folded."""
        after = self.app.config["consolidation.after_days"]
        if after is None or self.app.read_only:
            return 0
        now = time.monotonic()
        last = self._consolidated_at
        if last is not None and now - last < self.app.config["consolidation.every_seconds"]:
            return 0
        self._consolidated_at = now
        with self._calls.shared(), self._writes, translated():
            return self._writer().consolidate_due(older_than_days=after)

    def _writer(self) -> Writer:
        """The App's writer, opened (and the projections with it) under the opening lock.

        The App opens its parts lazily and without a lock of its own. The warm-up, the calls
        and the owner's timers (access flush, expiry sweep, consolidation) may each be the
        first to need them: one that opened them beside another built a new home's
        projections twice at once, the second build dropping the collections the first had
        just made ("collection ... does not exist"; tests/integration/test_warm_start.py)."""
        with self._opening:
            return self.app.writer()

    def index_due(self) -> list[str]:
        """The owner's background index: build the vector indexes the embedded collections
        are due on copies, in a child process, and switch them in (``App.index_beside``);
        the collections switched in. Calls go on meanwhile: they wait only while a
        collection is copied and while the copy catches up and is switched in."""
        if self.app.read_only:
            return []
        with self._calls.shared():
            with self._opening:
                self.app.projections()
            with translated():
                return self.app.index_beside()

    def close(self) -> None:
        """Close the stores once the calls (or warm-up) in progress have finished; a
        background index build is cancelled rather than waited for."""
        self.app.cancel_indexing()
        with self._calls.exclusive():
            self.app.close()

    def call(self, request: ToolRequest, caller: Caller) -> dict[str, Any]:
        """Run one call (its arguments' shapes already checked where it entered the process:
        :mod:`ferrex.server.tool_calls`)."""
        tool = request.tool
        recall = isinstance(request, Recall)
        confirms = isinstance(request, Recall) and bool(request.validate_ids)
        with self._calls.shared(), translated():
            if tool not in READ_ONLY or confirms:
                with self._writes:
                    with self._opening:
                        self.app.writer()
                        if recall:  # a recall that confirms: App.recall reads too
                            self.app.reader()
                    return self._run(request, caller)
            with self._opening:
                if recall:
                    self.app.reader()
                else:
                    self.app.projections()
            if recall:  # the reader takes its own snapshot (Reader.recall)
                return self._run(request, caller)
            with self.app.projections().reading():
                return self._run(request, caller)

    def _run(self, request: ToolRequest, caller: Caller) -> dict[str, Any]:
        match request:
            case Store():
                return self._store(request, caller)
            case Recall():
                return self._recall(request, caller)
            case Confirm():
                return self._confirm(request, caller)
            case Forget():
                return self._forget(request, caller)
            case Reflect():
                return self._reflect(request, caller)
            case Stats():
                return self._stats(request, caller)
            # Not tools: the resources' reads, routed like tools to the owning process; the
            # web dashboard's reads (ferrex.server.dashboard.reads); `ferrex entity
            # merge|split|differ` and `ferrex consolidate`, writes (a dry run writes nothing).
            case ReadResource():
                return self._resource(request.uri, caller)
            case DashboardRead():
                return self._dashboard(request, caller)
            case EntityCommand():
                return self._entity_command(request, caller)
            case Consolidate():
                return self._consolidate(request, caller)

    # -- the tools ------------------------------------------------------------------------

    def _store(self, request: Store, caller: Caller) -> dict[str, Any]:
        a = request.args
        # An agent's default visibility (store.default_visibility of the process the call came
        # through), so a forwarded store is shared or private as its client configured; the
        # operator's memories are everyone's (decide's rule), whatever the setting.
        visibility = a.visibility
        if visibility is None and caller.agent_id is not None:
            visibility = caller.visibility
        store = StoreRequest(
            type=a.type, content=a.content, subject=a.subject, predicate=a.predicate,
            object=a.object, name=a.name, steps=a.steps or (), conditions=a.conditions or (),
            entities=a.entities or (), supersedes=a.supersedes, source=a.source,
            confidence=1.0 if a.confidence is None else a.confidence, context=a.context,
            namespace=caller.namespace if a.namespace is None else a.namespace,
            valid_from=a.valid_from, visibility=visibility, split_long=a.split_long or False,
            importance=DEFAULT_IMPORTANCE if a.importance is None else a.importance,
            pinned=a.pinned or False, ttl=a.ttl, agent_id=caller.agent_id,
            # The HTTP API's request key or a capture's import key, journaled with the memory.
            import_key=request.request_key or request.import_key,
        )  # fmt: skip
        writer = self.app.writer()
        return {**writer.store(store, multi_valued=request.args.multi_valued).as_dict()}

    def _recall(self, call: Recall, caller: Caller) -> dict[str, Any]:
        args = call.args
        limit = self.app.config["recall.limit"] if args.limit is None else args.limit
        request = RecallRequest(
            query=args.query,
            types=args.types,
            entities=args.entities,
            namespace=args.namespace or caller.namespace,
            limit=limit,
            include_stale=args.include_stale,
            include_invalidated=args.include_invalidated,
            as_of=args.as_of,
            after=args.after,
            before=args.before,
            explain=args.explain,
            agent_id=caller.agent_id,
            strategy=args.strategy or DEFAULT_STRATEGY,  # type: ignore[arg-type]
            min_relevance=args.min_relevance,
            count_access=call.count_access,
        )
        max_tokens = args.max_tokens
        if max_tokens is not None:
            max_tokens = within(max_tokens, "max_tokens", MIN_MAX_TOKENS, MAX_MAX_TOKENS)
        doc = self.app.recall(request, call.validate_ids).as_dict()
        if max_tokens is not None:
            doc = self._fit(doc, max_tokens)
        return {**doc}

    def _fit(self, doc: RecallAnswer, max_tokens: int) -> RecallAnswer:
        """The answer cut to ``max_tokens`` tokens of its text (best results kept, in order),
        saying how many were cut; the first result is kept even if alone it is longer."""
        count = self.app.embedder().model().count_tokens
        results = list(doc["results"])

        def tokens(kept: int) -> int:
            trial: RecallAnswer = {**doc, "results": results[:kept]}
            if kept < len(results):
                trial["truncated"] = {"max_tokens": max_tokens, "omitted": len(results) - kept}
            text = recall_text(trial)
            # Each id counted at the most one takes (its random letters split into 19 to 30
            # tokens): what is cut depends on what the memories say, never on their random ids.
            measured = count(ID_IN_TEXT.sub("", text))
            if measured is None:
                return len(text) // 4
            return measured + ID_TOKENS * len(ID_IN_TEXT.findall(text))

        if tokens(len(results)) <= max_tokens:
            return doc
        # The most results that fit, by halving (more results never make the text shorter):
        # a long answer is measured a dozen times, not once per result it drops.
        fits, over = 1, len(results)
        while over - fits > 1:
            middle = (fits + over) // 2
            fits, over = (middle, over) if tokens(middle) <= max_tokens else (fits, middle)
        kept = fits
        if kept == len(results):  # one result, alone longer than max_tokens: nothing was cut
            return doc
        return {
            **doc,
            "results": results[:kept],
            "truncated": {"max_tokens": max_tokens, "omitted": len(results) - kept},
        }

    def _confirm(self, request: Confirm, caller: Caller) -> dict[str, Any]:
        ids = request.ids
        if not ids:
            raise UsageError("ids is required: the ids of the memories you confirmed")
        importance, pinned = request.importance, request.pinned
        writer = self.app.writer()
        if importance is not None or pinned is not None:
            # Checked before anything is written: bad marks confirm nothing either.
            check_importance(importance if importance is not None else 0.5)
        differs_from, supersedes = request.differs_from, request.supersedes
        # Settled first: a settle refused (an unknown other fact, a supersede that cannot
        # be) confirms nothing either.
        settled = None
        if differs_from or supersedes is not None:
            settled = writer.settle(ids, differs_from=differs_from, supersedes=supersedes,
                                    caller=caller.agent_id)  # fmt: skip
        # Another agent's private memory is reported exactly like one that does not exist.
        doc: ConfirmAnswer = writer.validate_memories(list(ids), caller=caller.agent_id).as_dict()
        if settled is not None:
            if differs_from:
                doc["differ"] = [list(pair) for pair in settled.differ]
            if supersedes is not None:
                doc["superseded"] = list(settled.superseded)
            gone = [i for i in settled.not_found if i not in doc["not_found"]]
            doc["not_found"] = [*doc["not_found"], *gone]
        if importance is not None or pinned is not None:
            marked = writer.mark(ids, importance=importance, pinned=pinned, caller=caller.agent_id)
            doc["marked"] = list(marked.marked)
            if marked.position is not None:
                doc["position"] = marked.position
            if marked.warnings:
                doc["warnings"] = [*doc.get("warnings", []), *marked.warnings]
        return {**doc}

    def _forget(self, request: Forget, caller: Caller) -> dict[str, Any]:
        if not request.ids:
            raise UsageError("ids is required: the ids of the memories to forget")
        # Another agent's private memory is reported exactly like one that does not exist.
        result = self.app.writer().forget(
            request.ids, cascade=request.cascade, caller=caller.agent_id
        )
        return {**result.as_dict()}

    def _entity_command(self, request: EntityCommand, caller: Caller) -> dict[str, Any]:
        first, second = request.first, request.second
        action = next((a for a in _ENTITY_ACTIONS if a == request.action), None)
        if action is None:
            raise UsageError(
                f"unknown entity action {request.action!r}", hint="merge, split or differ"
            )
        if not first or not second:
            raise UsageError("an entity action takes two names", hint="first and second")
        namespace = request.namespace or caller.namespace
        result = self.app.writer().entity(
            action, first, second, namespace=namespace, caller=caller.agent_id
        )
        return result.as_dict()

    def _consolidate(self, request: Consolidate, caller: Caller) -> dict[str, Any]:
        """Fold old episodes (``older_than_days``, ``namespace``, ``dry_run``, at most
        ``max_groups`` summaries), undo one consolidation (``undo``: a summary's id) or up to
        ``limit`` of them (``undo_all``), or list the summaries (``list``; with
        ``summary_id``, that one and its sources' text). An agent sees, folds and undoes
        only its own."""
        writer = self.app.writer()
        undo, namespace = request.undo, request.namespace
        if request.list:
            return {"summaries": self._summaries(namespace, caller, request.summary_id)}
        if request.undo_all:
            limit = within(request.limit, "limit", 1, 10_000)
            ids = [s["summary_id"] for s in self._summaries(namespace, caller, None)]
            results = writer.unfold_many(ids[:limit])
            return {
                "undone": [r.as_dict() for r in results],
                "restored": sum(len(r.restored) for r in results),
                "left": max(len(ids) - limit, 0),
            }
        if undo is not None:
            if caller.agent_id is not None:
                summary = self.app.projections().read_model.get(undo)
                if summary is not None and summary.agent_id != caller.agent_id:
                    raise NotFound(f"no consolidation summary {undo!r}")
            return writer.unfold(undo).as_dict()
        days = request.older_than_days
        if days is None:
            days = self.app.config["consolidation.after_days"]
        if isinstance(days, bool) or not isinstance(days, int | float):
            raise UsageError(
                "give the age of what to fold, in days",
                hint="--older-than DAYS, or set consolidation.after_days",
            )
        most = request.max_groups
        return writer.consolidate(
            older_than_days=float(days),
            namespace=namespace,
            agent_id=caller.agent_id,
            dry_run=request.dry_run,
            max_groups=None if most is None else within(most, "max_groups", 1, 10_000),
        ).as_dict()

    def _summaries(
        self, namespace: str | None, caller: Caller, one: str | None
    ) -> list[dict[str, Any]]:
        """The consolidation summaries the caller made (the operator: all), in id order; with
        ``one``, only that summary, with its sources' text (``not_found`` when it is none)."""
        rm = self._read_model()
        folds = rm.summaries(namespace)
        if one is not None:
            folds = {one: folds[one]} if one in folds else {}
        rows = {m.memory_id: m for m in rm.memories(memory_ids=sorted(folds))} if folds else {}
        found: list[dict[str, Any]] = []
        for summary_id, memory_ids in folds.items():
            m = rows.get(summary_id)
            if m is None or (caller.agent_id is not None and m.agent_id != caller.agent_id):
                continue
            doc: dict[str, Any] = {
                "summary_id": summary_id, "namespace": m.namespace, "agent_id": m.agent_id,
                "group": f"source:{m.source}" if m.source else f"episode:{m.episode or ''}",
                "visibility": m.visibility, "memory_ids": memory_ids,
                "chars": len(m.content or ""),
            }  # fmt: skip
            if one is not None:
                doc["content"] = m.content
                doc["sources"] = [
                    {"id": s.memory_id, "content": s.content}
                    for s in rm.memories(memory_ids=memory_ids)
                ]
            found.append(doc)
        if one is not None and not found:
            raise NotFound(
                f"no consolidation summary {one!r}",
                hint="`ferrex consolidate --list` lists the summaries",
            )
        return found

    def _reflect(self, request: Reflect, caller: Caller) -> dict[str, Any]:
        namespace = request.namespace or caller.namespace
        limit = within(request.limit, "limit", 1, MAX_REFLECT_LIMIT)
        doc = reflect(
            self._read_model(),
            self._sight(caller),
            staleness_config(self.app.config),
            namespace=namespace,
            limit=limit,
        )
        return {**doc}

    def _stats(self, request: Stats, caller: Caller) -> dict[str, Any]:
        namespace = request.namespace or caller.namespace
        detailed = request.detailed
        doc = stats(
            self._read_model(),
            self._sight(caller),
            staleness_config(self.app.config),
            namespace=namespace,
            detailed=detailed,
        )
        if detailed:
            health = self._health()
            # Journal positions and storage sizes count every agent's writes, private ones
            # included: only the operator sees them.
            if caller.agent_id is None:
                doc["journal"] = health["journal"]
                doc["storage_bytes"] = health["storage_bytes"]
            doc["models"] = health["models"]
        return {**doc}

    # -- the resources ----------------------------------------------------------------------

    def resource(self, uri: str, caller: Caller) -> dict[str, Any]:
        """The document a resource URI names, as ``caller`` may see it (see RESOURCES)."""
        return self.call(ReadResource(uri=uri), caller)

    def _resource(self, uri: str, caller: Caller) -> dict[str, Any]:
        if not uri.startswith("ferrex://"):
            raise UsageError("a resource URI starts with ferrex://", hint=RESOURCE_HINT)
        path = uri.removeprefix("ferrex://")
        kind, _, rest = path.partition("/")
        if kind == "stats" and not rest:
            return self._stats(Stats(), caller)
        if kind == "recent" and not rest:
            return self._recent(caller)
        if kind == "memory" and rest:
            return {**self._memory(unquote(rest), caller)}
        if kind == "entity" and rest:
            return self._entity(unquote(rest), caller)
        raise UsageError(f"unknown resource {uri!r}", hint=RESOURCE_HINT)

    def _sight(self, caller: Caller) -> Sight:
        """What ``caller`` may see now (``ferrex.read.seen``), recall hits not yet journaled
        counted."""
        return Sight(caller.agent_id, _now(), self.app.access.snapshot())

    def _recent(self, caller: Caller) -> dict[str, Any]:
        """The latest active memories of the caller's namespace, newest first."""
        namespace = caller.namespace or self.app.config["store.default_namespace"]
        rm = self._read_model()
        seen = self._sight(caller).shown(rm.memories(namespace=namespace))
        active = [m for m in seen if is_current(m)]
        latest = sorted(active, key=lambda m: (-m.created_at, m.memory_id))[:_RECENT]
        return {"namespace": namespace, "memories": [brief(m) for m in latest]}

    def _memory(self, memory_id: str, caller: Caller) -> MemoryDetail:
        """One memory with its versions (oldest first: ``Sight.history``) and its use."""
        rm = self._read_model()
        sight = self._sight(caller)
        found = sight.memories(rm, [memory_id])
        if not found:
            raise NotFound(f"no memory {memory_id!r}", hint="recall to find a memory's id")
        memory = found[0]
        names = rm.entity_names(memory.entity_ids)
        doc: MemoryDetail = {
            **brief(memory),
            "namespace": memory.namespace,
            "visibility": memory.visibility,
            "entities": sorted(names.get(e, e) for e in memory.entity_ids),
            "body": _body(memory),
            "confidence": memory.confidence,
            "access_count": memory.access_count,
            "last_accessed": rfc3339(memory.last_accessed),
            "last_validated": rfc3339(memory.last_validated),
            **marks_doc(memory.importance, memory.pinned, memory.expires_at),
            "history": [_link(m) for m in sight.history(rm, memory)],
        }
        return doc

    def _entity(self, name: str, caller: Caller) -> dict[str, Any]:
        """What is known about an entity (any of its spellings the caller may see)."""
        namespace = caller.namespace or self.app.config["store.default_namespace"]
        rm = self._read_model()
        sight = self._sight(caller)
        spellings = sight.spellings(rm, namespace)
        # Any spelling, abbreviated or not: "kubernetes cluster" finds "k8s cluster".
        entity_id = find_entity(
            name, [Candidate(s.entity_id, s.alias, s.normalized) for s in spellings]
        )
        names = rm.entity_names([entity_id]) if entity_id else {}
        memory_ids = [m for e, m in rm.links([entity_id])] if entity_id else []
        memories = [m for m in sight.memories(rm, memory_ids) if is_current(m)]
        if entity_id is None or entity_id not in names or not memories:
            # An entity only memories the caller may not see (or none) name is unknown.
            raise NotFound(f"no entity {name!r} in {namespace}",
                           hint="name it as a memory does (a fact's subject)")  # fmt: skip
        memories.sort(key=lambda m: (-m.t_valid, m.memory_id))
        return {
            "namespace": namespace,
            "name": names[entity_id],
            "aliases": sorted({s.alias for s in spellings if s.entity_id == entity_id}),
            "memories": [brief(m) for m in memories],
        }

    def _dashboard(self, request: DashboardRead, caller: Caller) -> dict[str, Any]:
        from ferrex.server.dashboard.reads import Context, answer

        given = optional_text(request.query.get("namespace"), "namespace")
        namespace = given or caller.namespace or self.app.config["store.default_namespace"]
        context = Context(
            app=self.app, rm=self._read_model(), sight=self._sight(caller), namespace=namespace
        )
        return answer(context, request.query)

    def _health(self) -> dict[str, Any]:
        """Journal position, projection lag, storage sizes and the models in use."""
        app = self.app
        projections = app.projections()
        # Not refresh(): it waits for the writer lock, and a write in progress waits for
        # this read to end before it applies (Projections.reading) — what reading() caught
        # up to is the head this snapshot is at.
        head = app.journal().head.position
        rm = projections.read_model
        live = projections.live
        sqlite = sum(directory_bytes(app.home / f"{live.sqlite}{s}") for s in ("", "-wal", "-shm"))
        identity = app.embedder().identity
        return {
            "journal": {
                "position": head,
                "lag": {"sqlite": head - rm.checkpoint(),
                        "qdrant": head - projections.qdrant_position},
                "qdrant_unsynced": projections.qdrant_position - rm.checkpoint("qdrant"),
            },
            "storage_bytes": {
                "journal": directory_bytes(app.journal_dir),
                "sqlite": sqlite,
                "qdrant": directory_bytes(app.home / "qdrant"),
                "embedding_cache": directory_bytes(app.home / "cache"),
            },
            "models": {
                "dense": {"name": identity.name, "dim": identity.dim,
                          "sha256": identity.file_sha256},
                "sparse": Bm25Encoder().identity,
                "reranker": app.reranker().status,
            },
        }  # fmt: skip

    def _read_model(self) -> ReadModel:
        """The read model, at the snapshot :meth:`call` took (caught up with the journal
        when no write was in progress)."""
        return self.app.projections().read_model


def _body(m: Memory) -> dict[str, Any]:
    """A memory's own fields, those it has."""
    fields = {
        "content": m.content, "subject": m.subject, "predicate": m.predicate,
        "object": m.object, "name": m.procedure_name, "version": m.procedure_version,
        "steps": list(m.steps), "conditions": list(m.conditions), "source": m.source,
        "context": m.context,
    }  # fmt: skip
    return {k: v for k, v in fields.items() if v not in (None, [])}


def _link(m: Memory) -> MemoryLink:
    """One step of a supersede chain: when the memory held and what it said."""
    return {"id": m.memory_id, "t_valid": rfc3339(m.t_valid), "t_invalid": rfc3339(m.t_invalid),
            "summary": one_line(m, 200)}  # fmt: skip


def _now() -> float:
    return datetime.now(UTC).timestamp()
