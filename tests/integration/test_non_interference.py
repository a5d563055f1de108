"""Non-interference: another agent learns nothing of a private memory.

For random interleavings of alice's private calls and bob's calls, every answer bob gets in a
home where alice made her calls equals the answer he gets in a home where she never did
(memory and entity ids, times, scores and journal positions aside: ids are compared by the
order bob met them, and results as sets, because BM25's collection-wide IDF lets any text,
private or not, move scores a little; see docs/security.md).

Both homes are real: the service over the real journal, SQLite read model, Qdrant Edge and
the bundled model. Every call is forwarded as another process's would be: a peer hub sends
it over the owner's loopback port (``ferrex.server.hub``) with its caller's identity. The
home where alice acted is owned by a process started as alice (``store.agent_id``); the
other by one started without an agent id: which process owns the stores must change
nothing anyone sees. Calls from a process without an agent id (the operator's shared
notes, :data:`OPERATOR_CALLS`) run in both homes as part of bob's world. Each example runs
in a namespace of its own, so the two homes serve every example.

Alice also makes calls that others see (:data:`ALICE_SHARING`: a shared memory that
replaces one of her private ones). Those run in both homes: where she acted as written,
in the other home as the same call without what names her private memories (a plain
shared store). Bob must not be able to tell the two apart either.

**Extension points**, each a table of named strategies; the comparison needs nothing else:

- a new read surface (a tool's option, a resource, a dashboard read, an ``/api/v1/``
  endpoint): one more entry in :data:`BOB_CALLS`;
- a new kind of private write: one more entry in :data:`ALICE_CALLS`;
- a new kind of shared write whose arguments may name alice's private memories: one more
  entry in :data:`ALICE_SHARING`, naming them only under the keys of :data:`PLAIN_WITHOUT`
  (what the other home leaves out).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.core.decide.store import NEW_MEMORY
from ferrex.errors import FerrexError
from ferrex.models import Embedder
from ferrex.server.hub import Hub
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

# A small shared vocabulary, so that alice's private calls collide with bob's on subjects,
# predicates, entity names, procedure names and sources.
SUBJECTS = ["billing-api", "search", "the build"]
PREDICATES = ["uses", "depends on", "owned by", "owner", "written in", "version"]
OBJECTS = ["PostgreSQL", "Postgres 16", "team payments", "Rust", "Go", "v2.3", "Kafka"]
ENTITIES = ["Postgres", "PostgreSQL", "Kafka", "tokio", "Tokio runtime", "Grafana"]
WORDS = ["deploy", "rollback", "backup", "cache", "latency", "incident", "migration", "on-call"]
SOURCES = ["chat-7", "chat-8"]
PROCEDURES = ["deploy", "restore"]
TAGS = ["ops", "billing"]

_ID = re.compile(r"\b(mem|ent)_[0-9A-Z]{26}\b")
#: Keys whose values are times, scores or positions: the comparison keeps only whether
#: they are set (a time set in one home and not in the other is a difference: a memory
#: shown as validated because of an invisible one, say), not their values.
_ASIDE = {
    # bm25_share (under explain) is a BM25 score's share and answer_chance is read from it:
    # BM25's IDF counts every stored text, so they move a little (docs/security.md)
    "score", "bm25_share", "answer_chance",
    "explain", "similarity", "staleness", "position", "event_time", "invalidated_at",
    "last_validated", "last_accessed", "last_referenced", "age_days", "created_at",
    "t_valid", "t_invalid", "expires_at", "next_cursor", "recorded_at",
}  # fmt: skip


def _sentence(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5))
    return f"Note about {' '.join(words)} {draw(st.integers(0, 999))}"


@st.composite
def _store(draw: st.DrawFn, visibility: str | None) -> dict[str, Any]:
    kind = draw(st.sampled_from(["episode", "fact", "procedure"]))
    args: dict[str, Any]
    if kind == "episode":
        args = {"content": _sentence(draw)}
        if draw(st.booleans()):
            args["source"] = draw(st.sampled_from(SOURCES))
    elif kind == "fact":
        args = {
            "subject": draw(st.sampled_from(SUBJECTS)),
            "predicate": draw(st.sampled_from(PREDICATES)),
            "object": draw(st.sampled_from(OBJECTS)),
        }
        if draw(st.booleans()):
            args["multi_valued"] = True
    else:
        args = {
            "name": draw(st.sampled_from(PROCEDURES)),
            "steps": draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
        }
    # Mostly one or two names from a few, so that agents often name the same entities.
    entities = draw(st.lists(st.sampled_from(ENTITIES[:4]), min_size=0, max_size=2, unique=True))
    if not entities and draw(st.integers(0, 3)):
        entities = [draw(st.sampled_from(ENTITIES[:4]))]
    if entities:
        args["entities"] = entities
    if draw(st.integers(0, 2)) == 0:  # tags: a convention over context (the tags list)
        args["context"] = {"tags": draw(st.lists(st.sampled_from(TAGS), min_size=1, unique=True))}
    if visibility is not None:
        args["visibility"] = visibility
    return args


# Each call is (tool, arguments); "@bob:K" / "@alice:K" stand for the id of that agent's K-th
# stored memory in the home the call runs in (alice's only exist where she made her calls),
# K taken modulo their number (so -1 is the latest).
_RECENT = st.sampled_from([-1, -1, 0, 1, 2])
"""Which memory a call names, the latest more often (a leak needs calls on the same one)."""
ALICE_CALLS: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    "store": _store("private").map(lambda a: ("store", a)),
    "store citing her own": st.integers(0, 5).map(
        lambda k: ("store", {"content": f"follow-up on backup {k}", "source": f"@alice:{k}"})
    ),
    "forget her own": st.integers(0, 5).map(lambda k: ("forget", {"ids": [f"@alice:{k}"]})),
    # Cascading: the entities only her memories named go, for her; a shared entity her
    # private memory also names stays for everyone else as it was.
    "forget her own, cascading": st.integers(0, 5).map(
        lambda k: ("forget", {"ids": [f"@alice:{k}"], "cascade": True})
    ),
    # Supersede chains: private → private (her own), and the attempt private → shared (a
    # private memory replacing bob's shared one is refused; nothing changes).
    "supersede her own privately": st.tuples(st.integers(0, 5), _store("private")).map(
        lambda ka: ("store", {**ka[1], "supersedes": f"@alice:{ka[0]}"})
    ),
    "supersede bob's privately": st.tuples(st.integers(0, 5), _store("private")).map(
        lambda ka: ("store", {**ka[1], "supersedes": f"@bob:{ka[0]}"})
    ),
    # Lifecycle marks on her private memories: pinned, important, or scratch that expires
    # (already expired, or not yet); and marking her own later.
    "store marked": st.tuples(
        _store("private"),
        st.sampled_from(
            [
                {"pinned": True},
                {"importance": 0.95},
                {"importance": 0.05},
                {"ttl": 1},
                {"ttl": "2h"},
            ]
        ),
    ).map(lambda am: ("store", {**am[0], **am[1]})),
    "mark her own": st.tuples(
        st.integers(0, 5), st.sampled_from([{"pinned": True}, {"importance": 1.0}])
    ).map(lambda km: ("confirm", {"ids": [f"@alice:{km[0]}"], **km[1]})),
    # Settling a possible conflict from her private fact: it and one of hers or bob's both
    # hold (a facts.differ), or it replaces one (her own; bob's is refused).
    "say her fact differs": st.builds(
        lambda k, who, j: ("confirm", {"ids": [f"@alice:{k}"], "differs_from": f"@{who}:{j}"}),
        st.integers(0, 5),
        st.sampled_from(["alice", "bob"]),
        st.integers(0, 5),
    ),
    "settle by replacing": st.builds(
        lambda k, who, j: ("confirm", {"ids": [f"@alice:{k}"], "supersedes": f"@{who}:{j}"}),
        st.integers(0, 5),
        st.sampled_from(["alice", "bob"]),
        st.integers(0, 5),
    ),
    # Her private note naming what one of bob's memories names ("@bob-names:K" stands for
    # the entity names of bob's K-th memory): the entity is then bob's shared one, and his
    # cascading forget of that memory must leave it gone for him as where she never wrote.
    "store naming bob's entities": st.tuples(_RECENT, st.sampled_from(WORDS)).map(
        lambda kw: (
            "store",
            {
                "content": f"alice's note on {kw[1]} {kw[0]}",
                "entities": f"@bob-names:{kw[0]}",
                "visibility": "private",
            },
        )
    ),
    # A name only her private memories use: listing entities must not show it to bob.
    "store naming her own entity": st.sampled_from(["Zanzibar", "Kafka Connect"]).map(
        lambda name: (
            "store",
            {"content": f"backup note on {name}", "entities": [name], "visibility": "private"},
        )
    ),
}

#: The arguments of an :data:`ALICE_SHARING` call that name her private memories: the home
#: where she made no private calls runs the call without them.
PLAIN_WITHOUT = frozenset({"supersedes"})


@st.composite
def _shared_note(draw: st.DrawFn) -> dict[str, Any]:
    # Distinct numbers, so that two of them are never duplicates of each other (a duplicate
    # must carry the same identifiers) unless they are the same note.
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    args: dict[str, Any] = {
        "content": f"Shared handover {draw(st.integers(0, 99))}: {' '.join(words)}",
        "visibility": "shared",
    }
    entities = draw(st.lists(st.sampled_from(ENTITIES[:4]), max_size=2, unique=True))
    if entities:
        args["entities"] = entities
    return args


# Alice's calls that others see, whose arguments name her private memories (run in both
# homes; see the module docstring).
ALICE_SHARING: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    # A supersede chain crossing visibility, private → shared: to others it must be a plain
    # shared memory (not validated, no link, no history, version counted among shared ones).
    "share a replacement of her own": st.tuples(st.integers(0, 5), _shared_note()).map(
        lambda ka: ("store", {**ka[1], "supersedes": f"@alice:{ka[0]}"})
    ),
    "share a new version of her procedure": st.tuples(
        st.integers(0, 5), st.sampled_from(PROCEDURES), st.sampled_from(WORDS)
    ).map(
        lambda knw: (
            "store",
            {
                "name": knw[1],
                "steps": [f"shared step {knw[2]}"],
                "visibility": "shared",
                "supersedes": f"@alice:{knw[0]}",
            },
        )
    ),
}

# Calls from a process started without an agent id (the operator): shared by default,
# whichever agent's process owns the stores. Run in both homes; bob must see them alike.
OPERATOR_CALLS: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    "store a note": _shared_note().map(
        lambda a: ("store", {k: v for k, v in a.items() if k != "visibility"})
    ),
}

# Bob's calls: every tool and its options, every resource, every dashboard read. The
# dashboard's pages and /api/v1/ reach the service through these same entries: /api/v1/recall
# and the search page are "dashboard search", /api/v1/memory and the memory page "resource
# memory", /api/v1/history "dashboard history", /api/v1/entities "dashboard entity" and
# "dashboard entities", /api/v1/stats "stats" (detailed), the journal page "dashboard
# journal"; its actions are "confirm" and "forget".
BOB_CALLS: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    "store": st.one_of(_store(None), _store("shared")).map(lambda a: ("store", a)),
    "recall": st.builds(
        lambda q, stale, history, entities: (
            "recall",
            {
                "query": q,
                "limit": 100,
                "include_stale": stale,
                "include_invalidated": history,
                **({"entities": entities} if entities else {}),
            },
        ),
        st.sampled_from([*WORDS, *SUBJECTS, *ENTITIES, "what does billing-api use"]),
        st.booleans(),
        st.booleans(),
        st.lists(st.sampled_from(ENTITIES), max_size=1),
    ),
    # Strategies reweigh the legs and lift memories naming the query's entities (through
    # the spellings bob may see); the query names entities alice's private memories add.
    "recall by strategy": st.builds(
        lambda strategy, entity, word: (
            "recall",
            {"query": f"{entity} {word}", "limit": 100, "strategy": strategy},
        ),
        st.sampled_from(["balanced", "semantic", "lexical", "recent", "relational"]),
        st.sampled_from(ENTITIES),
        st.sampled_from(WORDS),
    ),
    # The entity graph leg: memories naming the query's entities or one hop out (entities
    # co-mentioned with them); alice's private memories add entities and co-mentions.
    "recall through the entity graph": st.builds(
        lambda names, word: (
            "recall",
            {"query": f"{' and '.join(names)} {word}", "limit": 100, "strategy": "relational"},
        ),
        st.lists(st.sampled_from(ENTITIES), min_size=1, max_size=2, unique=True),
        st.sampled_from(["", *WORDS]),
    ),
    # Relevance and its cut: labels, nothing_relevant and hidden["irrelevant"] too.
    "recall above a relevance": st.builds(
        lambda q, cut: ("recall", {"query": q, "limit": 100, "min_relevance": cut}),
        st.sampled_from([*WORDS, *SUBJECTS, "what does billing-api use"]),
        st.sampled_from([0.2, 0.46, 0.76]),
    ),
    "stats": st.booleans().map(lambda d: ("stats", {"detailed": d})),
    "reflect": st.just(("reflect", {"limit": 100})),
    "forget": st.integers(0, 5).map(lambda k: ("forget", {"ids": [f"@bob:{k}"]})),
    # Cascading: an entity only alice's private memories still name is gone for bob, as
    # it is where she has none (and his answer's dropped_entities say so in both homes).
    "forget, cascading": _RECENT.map(lambda k: ("forget", {"ids": [f"@bob:{k}"], "cascade": True})),
    # Forgetting what alice shared (her replacements of her private memories), cascading.
    "forget alice's shared": st.integers(0, 5).map(
        lambda k: ("forget", {"ids": [f"@alice-shared:{k}"], "cascade": True})
    ),
    # Bob's supersede chains: shared → shared, and the attempt shared → private (bob's own
    # private memory replacing a shared one is refused).
    "supersede": st.tuples(
        st.sampled_from(["bob", "alice-shared"]), st.integers(0, 5), st.sampled_from(WORDS)
    ).map(
        lambda wkw: (
            "store",
            {
                "content": f"bob replaces it {wkw[1]}: {wkw[2]}",
                "visibility": "shared",
                "supersedes": f"@{wkw[0]}:{wkw[1]}",
            },
        )
    ),
    "supersede privately": st.tuples(st.integers(0, 5), _store("private")).map(
        lambda ka: ("store", {**ka[1], "supersedes": f"@bob:{ka[0]}"})
    ),
    # An invisible id must behave exactly like one that does not exist.
    "forget alice's": st.integers(0, 5).map(lambda k: ("forget", {"ids": [f"@alice:{k}"]})),
    "cite alice's": st.integers(0, 5).map(
        lambda k: ("store", {"content": f"bob read incident {k}", "source": f"@alice:{k}"})
    ),
    "supersede alice's": st.integers(0, 5).map(
        lambda k: ("store", {"content": f"bob's rollback plan {k}", "supersedes": f"@alice:{k}"})
    ),
    "validate via recall": st.integers(0, 5).map(
        lambda k: ("recall", {"query": "rollback", "limit": 100, "validate_ids": [f"@bob:{k}"]})
    ),
    "confirm": st.tuples(st.sampled_from(["bob", "alice"]), st.integers(0, 5)).map(
        lambda wk: ("confirm", {"ids": [f"@{wk[0]}:{wk[1]}"]})
    ),
    # Settling: two of his facts both hold, or one of alice's (unknown to him: not_found).
    "say facts differ": st.builds(
        lambda k, who, j: ("confirm", {"ids": [f"@bob:{k}"], "differs_from": f"@{who}:{j}"}),
        st.integers(0, 5),
        st.sampled_from(["bob", "bob", "alice", "alice-shared"]),
        st.integers(0, 5),
    ),
    # Marking: alice's private ids must read as unknown; bob's own marks and expiring
    # stores next to hers must answer alike (recall's hidden counts, stats' expiring).
    "mark": st.tuples(
        st.sampled_from(["bob", "alice"]),
        st.integers(0, 5),
        st.sampled_from([{"pinned": True}, {"pinned": False}, {"importance": 0.9}]),
    ).map(lambda wkm: ("confirm", {"ids": [f"@{wkm[0]}:{wkm[1]}"], **wkm[2]})),
    "store marked": st.tuples(
        st.one_of(_store(None), _store("shared")),
        st.sampled_from([{"pinned": True}, {"importance": 0.9}, {"ttl": "2h"}]),
    ).map(lambda am: ("store", {**am[0], **am[1]})),
    "cut recall": st.sampled_from([*WORDS, *ENTITIES]).map(
        lambda q: ("recall", {"query": q, "limit": 100, "max_tokens": 60})
    ),
    # Resources: "{id}" in a URI is filled with the resolved "id" argument (see Home.call).
    "resource stats, recent": st.sampled_from(["ferrex://stats", "ferrex://recent"]).map(
        lambda uri: ("resource", {"uri": uri})
    ),
    "resource memory": st.tuples(
        st.sampled_from(["bob", "alice", "alice-shared"]), st.integers(0, 5)
    ).map(lambda wk: ("resource", {"uri": "ferrex://memory/{id}", "id": f"@{wk[0]}:{wk[1]}"})),
    "resource entity": st.sampled_from([*ENTITIES, "postgres", "kafka", "Tokio"]).map(
        lambda name: ("resource", {"uri": f"ferrex://entity/{name}"})
    ),
    # The dashboard's reads (its /api/v1/history and /api/v1/entities, and the journal page,
    # which is the operator's only).
    "dashboard history": st.tuples(
        st.sampled_from(["bob", "alice", "alice-shared"]), st.integers(0, 5)
    ).map(lambda wk: ("dashboard", {"view": "history", "id": f"@{wk[0]}:{wk[1]}"})),
    "dashboard entity": st.tuples(
        st.sampled_from([*ENTITIES, "postgres", "kafka", "Tokio"]), st.sampled_from([0, 1])
    ).map(lambda no: ("dashboard", {"view": "entity", "name": no[0], "offset": no[1]})),
    # /api/v1/memories: a page (whether a next one exists is compared, not its cursor)
    "dashboard memories": st.tuples(
        st.integers(1, 4),
        st.sampled_from(["-created", "created", "-valid_from"]),
        st.sampled_from(["current", "superseded", "all"]),
        st.sampled_from(
            [
                {},
                {"types": ["semantic"]},
                {"visibility": "shared"},
                {"source": SOURCES[0]},
                {"entity": ENTITIES[0]},
                {"tags": [TAGS[0]]},
                {"context": [f"tags:{TAGS[1]}"]},
            ]
        ),
    ).map(
        lambda lsso: (
            "dashboard",
            {"view": "memories", "limit": lsso[0], "sort": lsso[1], "state": lsso[2], **lsso[3]},
        )
    ),
    # /api/v1/changes (the change stream's one read): every record from the start, and from
    # the head now (nothing). Positions are aside: they count every agent's records.
    "dashboard changes": st.sampled_from([0, None]).map(
        lambda after: ("dashboard", {"view": "changes", "after": after})
    ),
    # /api/v1/tags: the tags bob's memories and the shared ones carry, with counts.
    "dashboard tags": st.sampled_from(["current", "all"]).map(
        lambda state: ("dashboard", {"view": "tags", "state": state})
    ),
    "dashboard entities": st.tuples(
        st.sampled_from(["", "p", "k", "t"]), st.sampled_from([0, 1])
    ).map(lambda po: ("dashboard", {"view": "entities", "prefix": po[0], "offset": po[1]})),
    # The dashboard's search (/ and /api/v1/recall): explained, not counted as a use,
    # optionally by type and entity.
    "dashboard search": st.builds(
        lambda q, types, entities: (
            "recall",
            {
                "query": q,
                "explain": True,
                "count_access": False,
                "limit": 10,
                **({"types": types} if types else {}),
                **({"entities": entities} if entities else {}),
            },
        ),
        st.sampled_from([*WORDS, *ENTITIES, "handover"]),
        st.lists(st.sampled_from(["episodic", "semantic", "procedural"]), max_size=1),
        st.lists(st.sampled_from([*ENTITIES, "Zanzibar"]), max_size=1),
    ),
    # Recall at a time and in a period: as of a moment (what was valid then, superseded
    # memories included), after/before an event time.
    "recall in time": st.builds(
        lambda q, when: ("recall", {"query": q, "limit": 100, **when}),
        st.sampled_from([*WORDS, "handover", "deploy"]),
        st.sampled_from(
            [
                {"as_of": "2099-01-01T00:00:00Z"},
                {"after": "2000-01-01T00:00:00Z"},
                {"before": "2099-01-01T00:00:00Z", "include_invalidated": True},
            ]
        ),
    ),
    # Recall naming entities by filter (unknown_entities tells which names resolve).
    "recall by entity": st.builds(
        lambda names: ("recall", {"query": "note", "limit": 100, "entities": names}),
        st.lists(
            st.sampled_from([*ENTITIES, "Zanzibar", "Kafka Connect"]),
            min_size=1,
            max_size=2,
            unique=True,
        ),
    ),
    "dashboard journal": st.sampled_from(["journal", "verify"]).map(
        lambda view: ("dashboard", {"view": view})
    ),
}


@dataclass
class Home:
    service: Service
    """The owner's service (in this process: for calls a test makes directly)."""
    peer: Hub
    """Another process's hub: what :meth:`call` sends through, over the owner's port."""
    stored: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    """The entity names of each stored memory, by id."""

    def fresh(self) -> None:
        """Forget the ids of the previous example (each example has a namespace of its own)."""
        self.stored = {"alice": [], "alice-shared": [], "bob": [], "operator": []}
        self.names = {}

    def resolve(self, value: Any, alice_ids: list[str]) -> Any:
        """Replace ``@who:K`` by that memory's id: ``@alice`` her private memories (from the
        home where she acted, so in the other home they name memories that do not exist),
        ``@alice-shared`` and ``@bob`` the shared ones of the home the call runs in."""
        if isinstance(value, str) and value.startswith("@bob-names:"):
            ids = self.stored["bob"]
            k = int(value.split(":")[1])
            return self.names.get(ids[k % len(ids)], []) if ids else []
        if isinstance(value, str) and value.startswith("@"):
            who, k = value[1:].split(":")
            ids = alice_ids if who == "alice" else self.stored[who]
            if not ids:
                return "mem_00000000000000000000000000"
            return ids[int(k) % len(ids)]
        if isinstance(value, list):
            return [self.resolve(v, alice_ids) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v, alice_ids) for k, v in value.items()}
        return value

    def call(
        self,
        who: str,
        tool: str,
        args: dict[str, Any],
        namespace: str,
        alice_ids: list[str],
        keep_as: str | None = None,
    ) -> dict[str, Any]:
        real = self.resolve(args, alice_ids)
        if tool == "resource" and "id" in real:
            real = {"uri": real["uri"].replace("{id}", real.pop("id"))}
        try:
            agent = None if who == "operator" else who
            answer = self.peer.call(decode(tool, real), Caller(agent_id=agent, namespace=namespace))
        except FerrexError as exc:
            return {"error": exc.code, "message": exc.message}
        if tool == "store" and answer.get("status") in NEW_MEMORY:
            self.stored[keep_as or who].append(answer["id"])
            self.names[answer["id"]] = [e["name"] for e in answer.get("entities", [])]
        return answer


class Canon:
    """Turns one home's answers into a comparable form: ids by order of first meeting."""

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}
        self.counter = itertools.count()

    def label(self, raw: str) -> str:
        if raw not in self.labels:
            self.labels[raw] = f"{raw[:3]}#{next(self.counter)}"
        return self.labels[raw]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            out = {
                k: (None if v is None else "<set>") if k in _ASIDE else self(v)
                for k, v in value.items()
            }
            if isinstance(out.get("entities"), list) and all(
                isinstance(e, str) for e in out["entities"]
            ):  # listed by entity id, and ids are random
                out["entities"] = sorted(out["entities"])
            return out
        if isinstance(value, list):
            items = [self(v) for v in value]
            if items and all(isinstance(v, str) and _ID.fullmatch(v) for v in value):
                return sorted(items)  # lists of ids (forgotten, dropped...): ordered by id
            if items and all(isinstance(i, dict) and "id" in i for i in items):
                # Compared as sets: results are ordered by score (see the docstring), other
                # lists by time or id, which differ between homes for reasons of their own.
                return sorted(items, key=repr)
            return items
        if isinstance(value, str):
            return _ID.sub(lambda m: self.label(m.group(0)), value)
        return value


@pytest.fixture(scope="module")
def homes(
    tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder
) -> Iterator[tuple[Home, Home]]:
    made: list[tuple[Home, Hub]] = []
    for name, owner_agent in (("with-alice", "alice"), ("without-alice", None)):
        home = tmp_path_factory.mktemp(name) / "home"
        home.mkdir()
        as_owner = f'[store]\nagent_id = "{owner_agent}"\n' if owner_agent else ""
        (home / "ferrex.toml").write_text(f"{as_owner}[server]\nwarm_peers = false\n")

        def opened(home: Path = home) -> App:
            return App(home=home, config=load_config(home, None), _embedder=shared_embedder)

        app = opened()
        owner = Hub(home, lambda app=app: app, Caller.from_config(app.config), flush_every=None,
                    sweep_every=None)  # fmt: skip
        owner.call(decode("stats", {}))  # elected: this hub's process owns the stores
        assert owner.role == "owner"
        peer = Hub(home, opened, Caller(), flush_every=None, sweep_every=None)
        peer.call(decode("stats", {}))
        assert peer.role == "peer"
        service = owner._ownership.service.service  # type: ignore[union-attr]
        made.append((Home(service, peer), owner))
    yield made[0][0], made[1][0]
    for h, owner in made:
        h.peer.close()
        owner.close()


_examples = itertools.count()

_alice = st.one_of(*(s.map(lambda c: ("alice", *c)) for s in ALICE_CALLS.values()))
_sharing = st.one_of(*(s.map(lambda c: ("alice shares", *c)) for s in ALICE_SHARING.values()))
_bob = st.one_of(*(s.map(lambda c: ("bob", *c)) for s in BOB_CALLS.values()))
_operator = st.one_of(*(s.map(lambda c: ("operator", *c)) for s in OPERATOR_CALLS.values()))
#: Bob's calls drawn more often than the others: the shared writes a leak needs as its
#: setting (a shared memory naming what alice's private ones also name, then its forget).
BOB_OFTEN = ("store", "forget, cascading")
_bob_often = st.one_of(*(BOB_CALLS[name].map(lambda c: ("bob", *c)) for name in BOB_OFTEN))
# Each side by a weight of its own, not by how many entries its table has (bob's is long):
# a leak needs alice's private state *and* bob's calls that touch it.
step = st.integers(0, 20).flatmap(
    lambda n: (
        _alice
        if n < 6
        else _sharing
        if n < 8
        else _operator
        if n < 9
        else _bob_often
        if n < 12
        else _bob
    )
)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])  # fmt: skip
@given(steps=st.lists(step, min_size=4, max_size=16))
# A process without an agent id stores through an owner started as alice: its note is the
# operator's, shared, in both homes (it was stamped as alice's private memory).
@example(
    steps=[
        ("operator", "store", {"content": "Shared handover 7: deploy cache"}),
        ("bob", "recall", {"query": "handover deploy", "limit": 100}),
        ("bob", "stats", {"detailed": True}),
    ]
)
# The four leaks the issue found, always tried: entity names in reflect and stats, entity
# resolution, a citation of an invisible id, a contradiction with an invisible fact.
@example(
    steps=[
        (
            "alice",
            "store",
            {"content": "Note about cache 1", "entities": ["Postgres"], "visibility": "private"},
        ),
        ("bob", "reflect", {"limit": 100}),
        ("bob", "stats", {"detailed": True}),
        ("bob", "store", {"content": "Note about deploy 2", "entities": ["postgres"]}),
    ]
)
@example(
    steps=[
        ("alice", "store", {"content": "Note about backup 3", "visibility": "private"}),
        ("bob", "store", {"content": "bob read incident 0", "source": "@alice:0"}),
    ]
)
@example(
    steps=[
        (
            "bob",
            "store",
            {"subject": "search", "predicate": "uses", "object": "Kafka", "visibility": "shared"},
        ),
        (
            "alice",
            "store",
            {
                "subject": "search",
                "predicate": "depends on",
                "object": "Rust",
                "visibility": "private",
            },
        ),
        ("bob", "recall", {"query": "search uses", "limit": 100}),
        ("bob", "stats", {"detailed": False}),
    ]
)
# The dashboard's entity list and entity page: a name only alice's private memory uses.
@example(
    steps=[
        ("alice", "store", {"content": "backup note on Zanzibar", "entities": ["Zanzibar"],
                            "visibility": "private"}),
        ("bob", "dashboard", {"view": "entities", "prefix": ""}),
        ("bob", "dashboard", {"view": "entity", "name": "Zanzibar", "offset": 0}),
    ]
)  # fmt: skip
# Issue 24, item 3: bob's cascading forget of his shared memory naming an entity alice's
# private memory also names (then only she still sees the entity); and alice's cascading
# forget of her private mention of a shared entity no memory names any more.
@example(
    steps=[
        (
            "bob",
            "store",
            {
                "content": "Note about deploy 1",
                "entities": ["Osprey Gateway"],
                "visibility": "shared",
            },
        ),
        (
            "alice",
            "store",
            {
                "content": "Note about cache 2",
                "entities": ["Osprey Gateway"],
                "visibility": "private",
            },
        ),
        ("bob", "forget", {"ids": ["@bob:0"], "cascade": True}),
        ("bob", "stats", {"detailed": True}),
        ("bob", "reflect", {"limit": 100}),
        ("bob", "recall", {"query": "note", "limit": 100, "entities": ["Osprey Gateway"]}),
        ("bob", "dashboard", {"view": "entities", "prefix": ""}),
        (
            "bob",
            "store",
            {
                "content": "Note about backup 3",
                "entities": ["Osprey Gateway"],
                "visibility": "private",
            },
        ),
        ("bob", "dashboard", {"view": "entities", "prefix": ""}),
    ]
)
@example(
    steps=[
        (
            "bob",
            "store",
            {"content": "Note about deploy 3", "entities": ["Grafana"], "visibility": "shared"},
        ),
        ("bob", "forget", {"ids": ["@bob:0"]}),
        (
            "alice",
            "store",
            {"content": "Note about cache 4", "entities": ["Grafana"], "visibility": "private"},
        ),
        ("alice", "forget", {"ids": ["@alice:0"], "cascade": True}),
        ("bob", "stats", {"detailed": True}),
        ("bob", "reflect", {"limit": 100}),
    ]
)
# A spelling alice's private memory adds to a shared entity never replaces bob's private
# spelling of the same form (the read model keeps one per scope).
@example(
    steps=[
        (
            "bob",
            "store",
            {"content": "Note about deploy 5", "entities": ["Postgres"], "visibility": "shared"},
        ),
        ("bob", "store", {"content": "Note about cache 6", "entities": ["PostgreSQL"]}),
        (
            "alice",
            "store",
            {"content": "Note about backup 7", "entities": ["PostgreSQL"], "visibility": "private"},
        ),
        ("bob", "store", {"content": "Note about latency 8", "entities": ["PostgreSQL"]}),
    ]
)
# Item 4: a shared memory replacing a private one (an episode; a procedure's next version).
@example(
    steps=[
        ("alice", "store", {"content": "Note about rollback 5", "visibility": "private"}),
        (
            "alice shares",
            "store",
            {
                "content": "Shared handover 5: rollback",
                "visibility": "shared",
                "supersedes": "@alice:0",
            },
        ),
        ("bob", "resource", {"uri": "ferrex://memory/{id}", "id": "@alice-shared:0"}),
        ("bob", "dashboard", {"view": "history", "id": "@alice-shared:0"}),
        ("bob", "recall", {"query": "handover rollback", "limit": 100}),
    ]
)
@example(
    steps=[
        ("alice", "store", {"name": "deploy", "steps": ["backup"], "visibility": "private"}),
        ("alice shares", "store", {"name": "deploy", "steps": ["shared step cache"],
                                   "visibility": "shared", "supersedes": "@alice:0"}),
        ("bob", "resource", {"uri": "ferrex://memory/{id}", "id": "@alice-shared:0"}),
        ("bob", "store", {"name": "deploy", "steps": ["rollback"], "visibility": "shared"}),
        ("bob", "recall", {"query": "deploy", "limit": 100}),
    ]
)  # fmt: skip
def test_bob_cannot_tell_whether_alice_made_her_private_calls(
    homes: tuple[Home, Home], steps: list[tuple[str, str, dict[str, Any]]]
) -> None:
    acted, control = homes
    acted.fresh()
    control.fresh()
    namespace = f"ni-{next(_examples)}"
    seen_with, seen_without = Canon(), Canon()
    for who, tool, args in steps:
        if who == "alice":
            acted.call("alice", tool, args, namespace, acted.stored["alice"])
            continue
        if who == "alice shares":
            _share(acted, control, tool, args, namespace)
            continue
        if who == "operator":  # seen by all: what it is told may differ, what bob sees not
            acted.call("operator", tool, args, namespace, acted.stored["alice"])
            control.call("operator", tool, args, namespace, acted.stored["alice"])
            continue
        alice_ids = acted.stored["alice"]
        with_alice = acted.call("bob", tool, args, namespace, alice_ids)
        without = control.call("bob", tool, args, namespace, alice_ids)
        seen, unseen = seen_with(with_alice), seen_without(without)
        assert seen == unseen, (tool, args, _difference(seen, unseen))


def _difference(a: Any, b: Any, path: str = "") -> str:
    """Where two canonical answers first differ, and how (for the failure message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys(), key=str):
            if a.get(key, "<absent>") != b.get(key, "<absent>"):
                return _difference(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _difference(x, y, f"{path}[{i}]")
    return f"{path or '.'}: with alice {a!r}, without {b!r}"


def _share(acted: Home, control: Home, tool: str, args: dict[str, Any], namespace: str) -> None:
    """Alice's shared call naming her private memories: as written where she acted, plain
    (without :data:`PLAIN_WITHOUT`) in the other home, and only if it was stored where she
    acted (a refusal there, say of an id she has forgotten, changes nothing)."""
    alice_ids = acted.stored["alice"]
    got = acted.call("alice", tool, args, namespace, alice_ids, keep_as="alice-shared")
    if got.get("status") not in NEW_MEMORY:
        return
    plain = {k: v for k, v in args.items() if k not in PLAIN_WITHOUT}
    other = control.call("alice", tool, plain, namespace, alice_ids, keep_as="alice-shared")
    # Stored in one home and not in the other is a difference everyone can see.
    assert other.get("status") == got.get("status"), (tool, args, got, other)


def test_the_property_can_see_a_leak(homes: tuple[Home, Home]) -> None:
    """A positive control: what alice stores *shared* does change bob's answers, and the
    comparison notices."""
    acted, control = homes
    acted.fresh()
    control.fresh()
    namespace = "ni-control"
    acted.call("alice", "store", {"content": "Shared runbook for the cache incident",
                                  "visibility": "shared"}, namespace, [])  # fmt: skip
    args = {"query": "cache incident", "limit": 100}
    with_alice = acted.call("bob", "recall", args, namespace, [])
    without = control.call("bob", "recall", args, namespace, [])
    assert Canon()(with_alice) != Canon()(without)


def test_a_cascade_leaves_the_entity_to_the_agent_whose_private_memory_names_it(
    homes: tuple[Home, Home],
) -> None:
    """Issue 24, item 3, from alice's side: bob's cascading forget takes the entity from
    bob (and every agent but her); she still resolves, lists and counts it, as does the
    operator, and a later shared memory naming it gets an entity of its own."""
    home, _ = homes
    home.fresh()
    ns = "ni-kept"

    def call(who: str | None, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        real = home.resolve(args, home.stored["alice"])
        return home.service.call(decode(tool, real), Caller(agent_id=who, namespace=ns))

    shared = call("bob", "store", {"content": "Osprey Gateway runbook 1", "visibility": "shared",
                                   "entities": ["Osprey Gateway"]})  # fmt: skip
    mine = call("alice", "store", {"content": "my Osprey Gateway notes 2",
                                   "entities": ["Osprey Gateway"]})  # fmt: skip
    entity = shared["entities"][0]["entity_id"]
    assert mine["entities"][0]["entity_id"] == entity
    gone = call("bob", "forget", {"ids": [shared["id"]], "cascade": True})
    assert gone["dropped_entities"] == [entity]

    def entity_count(who: str | None) -> int:
        return int(call(who, "stats", {"detailed": True})["entities"])

    assert (entity_count("bob"), entity_count("carol"), entity_count("alice")) == (0, 0, 1)
    assert entity_count(None) == 1
    found = call("alice", "resource", {"uri": "ferrex://entity/Osprey Gateway"})
    assert [m["id"] for m in found["memories"]] == [mine["id"]]
    assert (
        call("alice", "recall", {"query": "notes", "entities": ["Osprey Gateway"]}).get(
            "unknown_entities", []
        )
        == []
    )
    assert call("bob", "recall", {"query": "notes", "entities": ["Osprey Gateway"]})[
        "unknown_entities"
    ] == ["Osprey Gateway"]
    listed = call("alice", "dashboard", {"view": "entities", "prefix": "o"})
    assert "Osprey Gateway" in repr(listed)
    assert "Osprey Gateway" not in repr(
        call("bob", "dashboard", {"view": "entities", "prefix": "o"})
    )
    again = call("bob", "store", {"content": "Osprey Gateway runbook 3", "visibility": "shared",
                                  "entities": ["Osprey Gateway"]})  # fmt: skip
    assert again["entities"][0]["entity_id"] != entity
    # Her last mention going takes it from her too.
    last = call("alice", "forget", {"ids": [mine["id"]], "cascade": True})
    assert last["dropped_entities"] == [entity]
    assert entity_count("alice") == 1  # bob's new shared one
