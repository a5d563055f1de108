"""The read model's row types: what a named query answers and what a decision reads.

Pure values (no apsw, no qdrant), so the write side's pure decisions (``ferrex.core``) and
the one fold of events (:mod:`projections.fold`) can use them without loading SQLite.
:mod:`projections.readmodel` fills them from its tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from journal import MemoryBody, MemoryStored
from journal.events import start_given
from projections.documents import subject_key


@dataclass(frozen=True)
class Memory:
    """One row of the memories table, as the query side sees it."""

    memory_id: str
    namespace: str
    type: str
    content: str | None
    subject: str | None
    predicate: str | None
    object: str | None
    predicate_normalized: str | None
    procedure_name: str | None
    procedure_version: int | None
    conditions: tuple[str, ...]
    steps: tuple[str, ...]
    source: str | None
    context: dict[str, Any] | None
    confidence: float
    agent_id: str | None
    visibility: str
    supersedes: str | None
    t_valid: float
    t_invalid: float | None
    superseded_by: str | None
    created_at: float
    position: int
    redacted: bool
    access_count: int
    last_accessed: float | None
    last_validated: float | None
    entity_ids: tuple[str, ...] = ()
    multi_valued: bool = False
    episode: str | None = None
    """The derived episode of an episodic memory stored without a source (see the event)."""
    episode_index: int = 0
    importance: float = 0.5
    pinned: bool = False
    expires_at: float | None = None
    """Lifecycle marks (the last ``memory.marked``; ``ferrex.rules.lifecycle``)."""
    import_key: str | None = None
    """The place and text of the import line that stored it (see ``MemoryBody``)."""
    valid_from_given: bool = True
    """Whether ``t_valid`` is a start the store gave (``valid_from``); False: the start is
    unknown, at or before ``t_valid``, when it was learned (``journal.events.start_given``;
    both constructors, :meth:`from_event` and the read model's, set it)."""

    @classmethod
    def from_event(
        cls,
        event: MemoryStored,
        *,
        position: int,
        created_at: float,
        predicate_normalized: str | None,
        recorded_at: float | None = None,
    ) -> Memory:
        """The memory a ``memory.stored`` event makes, before any later event touches it.

        The one place a stored event becomes a row: the SQLite projection writes exactly
        this, and the command side's overlay (``ferrex.core.view``) holds exactly this for
        a decision not yet applied. ``predicate_normalized`` comes from the read model's
        rules (see :class:`Rules`). ``recorded_at``: when its record was made, where that is
        not ``created_at`` (the overlay's rows have none), to read an event written before
        ``valid_from_given`` existed. A restored event's ``learned_at`` is its ``created_at``
        (when the home it was dumped from learned it)."""
        body = event.body or MemoryBody()
        if recorded_at is None:
            recorded_at = created_at
        if event.learned_at is not None:
            created_at = event.learned_at.timestamp()
        return cls(
            memory_id=event.memory_id, namespace=event.namespace, type=event.memory_type,
            content=body.content, subject=body.subject, predicate=body.predicate,
            object=body.object, predicate_normalized=predicate_normalized,
            procedure_name=body.procedure_name, procedure_version=event.procedure_version,
            conditions=body.conditions, steps=body.steps, source=body.source,
            context=body.context, confidence=event.confidence, agent_id=event.agent_id,
            visibility=event.visibility, supersedes=event.supersedes,
            t_valid=event.t_valid.timestamp(), t_invalid=None, superseded_by=None,
            created_at=created_at, position=position, redacted=event.redacted,
            access_count=0, last_accessed=None, last_validated=None,
            entity_ids=tuple(sorted(set(event.entity_ids))),
            multi_valued=event.multi_valued, episode=event.episode_id,
            episode_index=event.episode_index, import_key=body.import_key,
            valid_from_given=start_given(event, recorded_at),
        )  # fmt: skip

    @property
    def subject_key(self) -> str | None:
        return subject_key(self.subject) if self.subject else None

    def body(self) -> MemoryBody:
        """The memory's text fields, as its event carried them."""
        return MemoryBody(
            content=self.content,
            subject=self.subject,
            predicate=self.predicate,
            object=self.object,
            predicate_normalized=self.predicate_normalized,
            procedure_name=self.procedure_name,
            conditions=self.conditions,
            steps=self.steps,
            source=self.source,
            context=self.context,
            import_key=self.import_key,
        )


@dataclass(frozen=True, slots=True)
class Spelling:
    """One known spelling of an entity (its name or an alias) in a namespace.

    ``agent_id``: the agent whose private memory introduced it (then only that agent sees or
    resolves to it); None for a spelling every caller may use. ``viewers``: the agents who
    may see its entity at all (None: everyone; see :func:`viewers`)."""

    entity_id: str
    alias: str
    normalized: str
    agent_id: str | None = None
    recorded_under: str | None = None
    """The entity the spelling was recorded under when that one was merged into
    ``entity_id`` (None: ``entity_id`` itself)."""
    viewers: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class AliasMatch:
    """One spelling of an entity and how the resolver matched it (see ``alias_matches``)."""

    entity_id: str
    alias: str
    match: str
    score: float
    agent_id: str | None = None
    normalized: str = ""
    viewers: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class Entity:
    entity_id: str
    namespace: str
    name: str
    agent_id: str | None = None
    normalized: str = ""
    kind: str | None = None
    viewers: tuple[str, ...] | None = None


#: The reason of a possible conflict between two facts of *one* subject whose predicates may
#: name one relation (``runs on`` / ``is hosted at``): kept when the two entities are one.
RELATION: Final = "relation"
#: The reason of a possible conflict between two facts under two predicates that state one
#: value in other words (``baud rate | 115200`` / ``speed | 115200 baud``): kept, like
#: :data:`RELATION`, when the two entities are one.
RESTATES: Final = "restates"


@dataclass(frozen=True, slots=True)
class PossibleConflict:
    """Two active-at-the-time facts of one relation on subjects possibly the same, or of
    relations possibly the same on one subject (reason :data:`RELATION`; see
    ``facts.possible_conflict``), seen from ``memory_id``."""

    memory_id: str
    other_id: str
    entity_id: str
    other_entity_id: str
    reason: str
    score: float


@dataclass(frozen=True, slots=True)
class MemoryCount:
    """How many memories of one namespace, type and scope (owner, visibility) are active or
    not and have a time to live or not (the ``memory_counts`` aggregate)."""

    namespace: str
    type: str
    agent_id: str | None
    visibility: str
    active: bool
    expiring: bool
    n: int


def viewers(entity_scope: str | None, kept_for: Sequence[str] = ()) -> tuple[str, ...] | None:
    """Who may see an entity: the agent of its private scope; else, once a cascade kept it
    for some agents only (``memories.forgotten``'s ``kept_entities``), those; else everyone
    (None)."""
    if entity_scope is not None:
        return (entity_scope,)
    return tuple(sorted(kept_for)) if kept_for else None
