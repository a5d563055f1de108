"""The five agent tools (store, recall, forget, reflect, stats) over one :class:`App`.

This is the one place the tools' semantics live: the MCP server calls it in the process that
owns the data directory, and other processes reach it through :mod:`ferrex.server.hub`. Arguments
arrive as plain JSON values (already shaped by the MCP schema in the usual case, but a call
over the local socket is checked again here), answers leave as JSON documents, and failures
are :class:`FerrexError` with a stable code.

Who is asking matters: a :class:`Caller` carries the agent id and default namespace of the
process the agent talks to. An agent sees shared memories, memories with no owner and its
own private ones; a caller without an agent id is the operator and sees everything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ferrex.app import App, translated
from ferrex.config import Config, staleness_config
from ferrex.errors import FerrexError, UsageError
from ferrex.models.sparse import Bm25Encoder
from ferrex.read.insight import directory_bytes, reflect, stats
from ferrex.read.recall import RecallRequest
from ferrex.rules.memory_input import StoreRequest
from ferrex.rules.spelling import did_you_mean
from ferrex.rules.visibility import sees
from projections.sqlite import ReadModel

TOOLS = ("store", "recall", "forget", "reflect", "stats")
READ_ONLY = frozenset({"recall", "reflect", "stats"})

_STORE_FIELDS = frozenset(
    {
        "type", "content", "subject", "predicate", "object", "name", "steps", "conditions",
        "entities", "supersedes", "source", "confidence", "context", "namespace",
        "valid_from", "visibility", "split_long",
    }
)  # fmt: skip
_LIST_FIELDS = frozenset({"steps", "conditions", "entities"})


@dataclass(frozen=True)
class Caller:
    """Who a tool call comes from: the agent (None: the operator) and its default namespace."""

    agent_id: str | None = None
    namespace: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"agent_id": self.agent_id, "namespace": self.namespace}

    @classmethod
    def from_config(cls, config: Config) -> Caller:
        """A server's caller: its configured agent id and default namespace."""
        return cls(agent_id=config["store.agent_id"],
                   namespace=config["store.default_namespace"])  # fmt: skip

    @classmethod
    def from_dict(cls, raw: object) -> Caller:
        if not isinstance(raw, Mapping):
            return cls()
        agent, namespace = raw.get("agent_id"), raw.get("namespace")
        return cls(
            agent_id=agent if isinstance(agent, str) and agent else None,
            namespace=namespace if isinstance(namespace, str) and namespace else None,
        )

    def sees(self, agent_id: str | None, visibility: str) -> bool:
        """Whether this caller may see a memory owned by ``agent_id`` with ``visibility``."""
        return sees(self.agent_id, agent_id, visibility)


class Service:
    """The tools over one App; one call at a time (the stores are not shared across threads)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._lock = threading.RLock()
        self._tools: dict[str, Callable[[dict[str, Any], Caller], dict[str, Any]]] = {
            "store": self._store,
            "recall": self._recall,
            "forget": self._forget,
            "reflect": self._reflect,
            "stats": self._stats,
        }

    def warm(self) -> None:
        """Open the journal, the projections and the models now rather than at the first call."""
        with self._lock:
            self.app.writer()
            self.app.reader()

    def reconfigure(self, config: Config) -> None:
        with self._lock:
            self.app.reconfigure(config)

    def flush_access(self) -> None:
        """Journal the recall hits counted so far (a server does it every few seconds)."""
        with self._lock:
            self.app.flush_access()

    def close(self) -> None:
        """Close the stores once the call (or warm-up) in progress has finished."""
        with self._lock:
            self.app.close()

    def call(self, tool: str, args: Mapping[str, Any], caller: Caller) -> dict[str, Any]:
        handler = self._tools.get(tool)
        if handler is None:
            raise UsageError(f"unknown tool {tool!r}", hint=f"tools: {', '.join(TOOLS)}")
        if not isinstance(args, Mapping):
            raise UsageError("tool arguments must be a JSON object")
        clean = {k: v for k, v in args.items() if v is not None}
        with self._lock, translated():
            return handler(clean, caller)

    # -- the tools ------------------------------------------------------------------------

    def _store(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        multi_valued = _flag(args.pop("multi_valued", False), "multi_valued")
        unknown = sorted(set(args) - _STORE_FIELDS)
        if unknown:
            known = sorted(_STORE_FIELDS | {"multi_valued"})
            raise UsageError(
                f"unknown argument {unknown[0]!r} for store{did_you_mean(unknown[0], known)}",
                hint=f"store takes: {', '.join(known)}",
            )
        fields: dict[str, Any] = {}
        for key, value in args.items():
            if key in _LIST_FIELDS:
                value = _texts(value, key)
            elif key == "split_long":
                value = _flag(value, key)
            fields[key] = value
        fields.setdefault("namespace", caller.namespace)
        request = StoreRequest(**fields, agent_id=caller.agent_id)
        return self.app.writer().store(request, multi_valued=multi_valued).as_dict()

    def _recall(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        query = args.get("query")
        if not isinstance(query, str):
            raise UsageError("query is required: the words to look for")
        limit = args.get("limit", self.app.config["recall.limit"])
        request = RecallRequest(
            query=query,
            types=_texts(args.get("types", []), "types"),
            entities=_texts(args.get("entities", []), "entities"),
            namespace=_namespace(args, caller),
            limit=limit,
            include_stale=_flag(args.get("include_stale", False), "include_stale"),
            include_invalidated=_flag(
                args.get("include_invalidated", False), "include_invalidated"
            ),
            as_of=_optional_text(args.get("as_of"), "as_of"),
            after=_optional_text(args.get("after"), "after"),
            before=_optional_text(args.get("before"), "before"),
            explain=_flag(args.get("explain", False), "explain"),
            agent_id=caller.agent_id,
            min_relevance=args.get("min_relevance", 0.0),
        )
        validate = _texts(args.get("validate_ids", []), "validate_ids")
        return self.app.recall(request, validate).as_dict()

    def _forget(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        ids = _texts(args.get("ids", []), "ids")
        if not ids:
            raise UsageError("ids is required: the ids of the memories to forget")
        cascade = _flag(args.get("cascade", False), "cascade")
        # Another agent's private memory is reported exactly like one that does not exist.
        result = self.app.writer().forget(ids, cascade=cascade, caller=caller.agent_id)
        doc: dict[str, Any] = {
            "forgotten": list(result.forgotten),
            "not_found": list(result.not_found),
            "dropped_entities": list(result.dropped_entities),
            "position": result.position,
        }
        if result.warnings:
            doc["warnings"] = list(result.warnings)
        return doc

    def _reflect(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        namespace = _namespace(args, caller)
        limit = _whole(args.get("limit", 10), "limit", 1, 100)
        return reflect(
            self._read_model(),
            _now(),
            staleness_config(self.app.config),
            namespace=namespace,
            limit=limit,
            visible=caller.sees,
            pending=self.app.access.snapshot(),
        )

    def _stats(self, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
        namespace = _namespace(args, caller)
        detailed = _flag(args.get("detailed", False), "detailed")
        doc = stats(
            self._read_model(),
            _now(),
            staleness_config(self.app.config),
            namespace=namespace,
            detailed=detailed,
            visible=caller.sees,
            pending=self.app.access.snapshot(),
        )
        if detailed:
            health = self._health()
            if caller.agent_id is not None:
                # Journal positions and storage sizes count every agent's writes, private
                # ones included: only the operator sees them.
                health = {"models": health["models"]}
            doc.update(health)
        return doc

    def _health(self) -> dict[str, Any]:
        """Journal position, projection lag, storage sizes and the models in use."""
        app = self.app
        projections = app.projections()
        head = app.journal().refresh().position
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
        """The read model, caught up with the journal (other processes' writes included)."""
        projections = self.app.projections()
        projections.catch_up()
        return projections.read_model


def _now() -> float:
    return datetime.now(UTC).timestamp()


def _namespace(args: Mapping[str, Any], caller: Caller) -> str | None:
    """The namespace a call names, else the caller's default (None: the configured one)."""
    return _optional_text(args.get("namespace"), "namespace") or caller.namespace


def _flag(value: object, name: str) -> bool:
    """A JSON boolean; the text "true" is not one."""
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be true or false, got {_kind(value)}")
    return value


def _whole(value: object, name: str, low: int, high: int) -> int:
    """A JSON integer in [low, high]; a boolean, a float or the text "5" is not one."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number, got {_kind(value)}")
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _kind(value: object) -> str:
    """The JSON kind of a value, for an error message (the value itself may be private)."""
    match value:
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "text"
        case list() | tuple():
            return "a list"
        case None:
            return "null"
        case _:
            return "an object"


def _optional_text(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{name} must be text")
    return value


def _texts(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise UsageError(f"{name} must be a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise UsageError(f"every item of {name} must be a string")
    return tuple(value)


def error_document(exc: FerrexError) -> dict[str, Any]:
    """The JSON form of an error that crosses a process boundary or reaches an agent."""
    return {"kind": type(exc).__name__, **exc.as_dict()}
