"""The event catalogue, version 1: every change to ferrex's memory is one of these facts.

Invariants (DESIGN.md section 2):

- Events are frozen msgspec Structs in one tagged union. The tag (``event`` on the wire) is a
  stable string such as ``"memory.stored"``; it never changes once published.
- A new field always gets a default, and ``omit_defaults`` keeps it off the wire while it is
  at its default, so records written before the field existed still hash and verify the same.
- A field is never renamed on the wire: ``msgspec.field(name=...)`` keeps the old name.
- Times are timezone-aware datetimes; a naive datetime is rejected when encoding.
- Memory text (content, triple, steps, context, source) lives in a separate *body* that
  enters the record's hash chain only through ``body_hash``. A later redaction drops the body
  and keeps the hash, so the chain still verifies (see ``journal.record``).

**Time is bitemporal.** A memory's ``t_valid`` is when it became true; the record's
``recorded_at`` is when it was learned. A store without ``valid_from`` has an *unknown* start
at or before the moment it was learned, and its ``t_valid`` is that moment (the decision's
clock), standing in for the start. ``MemoryStored.valid_from_given`` records which of the two
a ``t_valid`` is: True when the store gave its start, False when ``t_valid`` is only the time
it was learned. A ``memory.stored`` written before the field existed has neither (None), and
is read by :func:`start_given`: its start was given unless ``t_valid`` falls within
:data:`UNDATED_WITHIN` seconds at or before the record's ``recorded_at``. An undated store's
``t_valid`` is the decision's clock, taken moments before the append, so it falls there (an
import's chunk is decided whole before its one append: a store of a chunk that took over a
minute reads as dated, as every fact did before the flag); a start an agent gave falls there
only when it named the minute of the store itself, where "from now" and "from a minute ago"
say the same. The two ways of misreading differ: an old dated fact read as
undated would let a late report of an older value replace it (a true fact hidden), while an
old undated fact read as dated only keeps the order it had before the flag existed. So
reading every old record as undated was not an option, and the window errs toward "given".
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec

UtcTime = Annotated[datetime, msgspec.Meta(tz=True)]
"""A timezone-aware datetime. msgpack carries it as a timestamp (UTC)."""


def utc_now() -> datetime:
    """The wall clock in UTC: the default clock of whatever stamps events or records."""
    return datetime.now(UTC)


MemoryType = Literal["episodic", "semantic", "procedural"]
Visibility = Literal["private", "shared"]
SupersedeReason = Literal["explicit", "conflict", "version"]
ForgetReason = Literal["request", "eviction", "cascade", "import", "expired", "consolidation"]
ValidationSource = Literal["agent", "citation", "supersede", "duplicate", "operator"]
AliasMatch = Literal["exact", "normalized", "abbreviation", "fuzzy", "embedding", "operator"]


class MemoryBody(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True, gc=False):
    """The redactable text of a stored memory. Absent (None) once redacted."""

    content: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    predicate_normalized: str | None = None
    procedure_name: str | None = None
    conditions: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    source: str | None = None
    context: dict[str, Any] | None = None
    import_key: str | None = None
    """For a memory stored by ``ferrex import``: the place and text of its line in the file
    (``"line 12 sha256:…"``), which makes a second import of the same file store nothing
    again, while the same text on two lines of a file is two memories. In the body (not on
    the event) because it is derived from the text, and redacted with it."""


class Event(
    msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True, tag_field="event", gc=False
):
    """Base of every event. Subclasses declare ``tag=...``; the tag is the wire name.

    ``gc=False``: events hold only strings, numbers, times, tuples and JSON-like dicts, never
    a cycle, so the garbage collector need not track them. A replay creates millions.
    """


class EpisodeRef(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A derived episode: its id (the id of its first memory) and a memory's place in it."""

    id: str
    index: int = 0


class MemoryStored(Event, tag="memory.stored", frozen=True):
    """A memory was stored. ``body`` carries its text; ``body_hash`` is set by the journal."""

    memory_id: str
    namespace: str
    memory_type: MemoryType
    t_valid: UtcTime
    confidence: float = 1.0
    entity_ids: tuple[str, ...] = ()
    supersedes: str | None = None
    procedure_version: int | None = None
    agent_id: str | None = None
    visibility: Visibility = "shared"
    body_hash: bytes | None = None
    body: MemoryBody | None = None
    multi_valued: bool = False
    """A fact that holds alongside others of its subject and predicate (several owners,
    several dependencies): never a conflict, never a contradiction."""
    episode: EpisodeRef | None = None
    """For an episodic memory stored without a ``source``: the episode it arrived in and its
    place there, derived at store time by ``ferrex.core.decide`` from one agent's
    consecutive stores, so a replay reproduces it. None: no derived episode."""
    valid_from_given: bool | None = None
    """Whether the store gave ``t_valid`` (``valid_from``), or ``t_valid`` is only when the
    memory was learned (see the module docstring). Written on every new ``memory.stored``;
    None on one written before the field existed, read by :func:`start_given`. The field
    made ``memory.stored`` a struct of 16 keys with its tag, so msgspec writes every one of
    them with a map16 header (3 bytes) where it wrote a fixmap (1 byte): records written
    before keep their bytes, and the golden journal of the current format was written again
    for it."""
    learned_at: UtcTime | None = None
    """When ferrex first learned the memory, where that is not when this record was made: a
    dump's restore says when the home it came from recorded it, so a restored memory is as
    old to freshness, consolidation and episodes as it was (the read model's ``created_at``).
    None (every store): the record's ``recorded_at``. A 17th key keeps the map16 header."""

    @property
    def episode_id(self) -> str | None:
        return self.episode.id if self.episode is not None else None

    @property
    def episode_index(self) -> int:
        return self.episode.index if self.episode is not None else 0

    @property
    def redacted(self) -> bool:
        """True when the text was purged from the journal (only the hash remains)."""
        return self.body is None and self.body_hash is not None


UNDATED_WITHIN = 60.0
"""Seconds at or before its record's ``recorded_at`` within which the ``t_valid`` of a
``memory.stored`` without ``valid_from_given`` is read as the time it was learned, not a
start given (:func:`start_given`)."""

_CLOCK_SKEW = 1.0
"""Seconds a ``t_valid`` taken as "now" may lie after its record's time (a wall clock set back
between the decision and the append)."""


def start_given(event: MemoryStored, recorded_at: float) -> bool:
    """Whether ``event``'s ``t_valid`` is a start the store gave (``valid_from``) rather than
    the moment it was learned. ``recorded_at``: its record's time (POSIX seconds). The event
    says so itself since it has ``valid_from_given``; an older one is read by the rule in the
    module docstring."""
    if event.valid_from_given is not None:
        return event.valid_from_given
    return given_by_time(event.t_valid.timestamp(), recorded_at)


def given_by_time(t_valid: float, recorded_at: float) -> bool:
    """How a start not recorded as given or not is read (see the module docstring): given
    unless ``t_valid`` lies within :data:`UNDATED_WITHIN` seconds at or before
    ``recorded_at``. Also the reading of a read model's row folded before the flag existed,
    and of a dump line without it."""
    return not (recorded_at - UNDATED_WITHIN <= t_valid <= recorded_at + _CLOCK_SKEW)


class MemorySuperseded(Event, tag="memory.superseded", frozen=True):
    """A memory stopped being valid at ``t_invalid``, replaced by ``superseded_by`` if any."""

    memory_id: str
    namespace: str
    t_invalid: UtcTime
    superseded_by: str | None = None
    reason: SupersedeReason = "explicit"


class KeptEntity(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """An entity kept, from now on, only for ``agent_ids`` (the agents whose private
    memories still name it): every other caller sees it as dropped."""

    entity_id: str
    agent_ids: tuple[str, ...]


class CurrentAgain(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A memory valid again: the forgotten ``replaced_by`` had superseded it, so with that one
    gone it is current (its ``t_invalid`` and ``superseded_by`` cleared)."""

    memory_id: str
    replaced_by: str


class MemoriesForgotten(Event, tag="memories.forgotten", frozen=True):
    """Memories removed from every projection. ``dropped_entity_ids``: links no longer used."""

    memory_ids: tuple[str, ...]
    namespace: str
    reason: ForgetReason = "request"
    dropped_entity_ids: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    """Per memory, why (for evictions: which rule of the budget chose it); may be empty."""
    kept_entities: tuple[KeptEntity, ...] = ()
    """Entities a cascade took from everyone but some agents (``ferrex.rules.visibility``)."""
    current_again: tuple[CurrentAgain, ...] = ()
    """The memories a forgotten one had replaced, valid again (a request's forget only)."""


class MemoriesValidated(Event, tag="memories.validated", frozen=True):
    """Memories confirmed correct at ``at`` (by an agent, a citation, a supersede...)."""

    memory_ids: tuple[str, ...]
    at: UtcTime
    source: ValidationSource = "agent"


class Access(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """``count`` recall hits of one memory, the last of them at ``last_at``."""

    memory_id: str
    last_at: UtcTime
    count: int = 1


class MemoriesAccessed(Event, tag="memories.accessed", frozen=True):
    """Recall hits, journaled in batches so a replay reproduces staleness."""

    accesses: tuple[Access, ...]


class MemoryMarked(Event, tag="memory.marked", frozen=True):
    """A memory's lifecycle marks, all three as they stand after this event (not a
    difference): its importance, whether it is pinned, and when it expires.

    A store with marks other than the defaults appends one right after its
    ``memory.stored`` (when marks came, one more field on that event would have changed how
    every one of them was encoded); a later change of marks appends another. ``expires_at``
    is absolute, decided at store time, so a replay reads no clock
    (``ferrex.rules.lifecycle``)."""

    memory_id: str
    namespace: str
    importance: float = 0.5
    pinned: bool = False
    expires_at: UtcTime | None = None


class EntityCreated(Event, tag="entity.created", frozen=True):
    """A new entity in a namespace. Entity names are not redactable in format v1."""

    entity_id: str
    namespace: str
    name: str
    normalized: str
    kind: str | None = None
    agent_id: str | None = None
    """Set when a private memory of this agent named the entity first: the entity and its
    spellings are then that agent's alone (other agents neither see nor resolve to it)."""


class EntityAliasAdded(Event, tag="entity.alias_added", frozen=True):
    """``alias`` was resolved to ``entity_id``; ``match`` and ``score`` say how."""

    entity_id: str
    namespace: str
    alias: str
    normalized: str
    match: AliasMatch
    score: float = 1.0
    agent_id: str | None = None
    """Set when a private memory of this agent added the spelling: it is that agent's alone."""


class FactsPossiblyConflicting(Event, tag="facts.possible_conflict", frozen=True):
    """The new fact ``memory_id`` may disagree with the active facts ``others``: the same
    relation, a different object, on a subject that is *possibly* the same as theirs (a
    head word dropped, an embedding near the threshold). Both were kept; readers flag them
    until one is superseded, the entities are merged (a contradiction proper) or said to
    differ. ``entity_id``/``other_entity_id``: the two subjects' entities."""

    memory_id: str
    namespace: str
    others: tuple[str, ...]
    entity_id: str
    other_entity_id: str
    reason: str = "head word"
    score: float = 1.0


class Relink(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A memory's entity links as they stand after an entity correction (all of them)."""

    memory_id: str
    entity_ids: tuple[str, ...] = ()


class EntitiesMerged(Event, tag="entities.merged", frozen=True):
    """An operator or agent said ``entity_id`` is ``into``: every spelling of the first now
    belongs to the second, which keeps its name; ``relinked``: the memories that named the
    first, with their links after the merge (decided once, so a replay reads no view)."""

    entity_id: str
    into: str
    namespace: str
    relinked: tuple[Relink, ...] = ()
    agent_id: str | None = None
    """Who said so (None: the operator)."""


class EntitySplit(Event, tag="entity.split", frozen=True):
    """The spelling ``normalized`` (written ``name``) of ``entity_id`` was a wrong merge: it
    becomes the new entity ``new_entity_id``, with the facts whose subject it spells, and
    the two are said to differ."""

    entity_id: str
    new_entity_id: str
    namespace: str
    name: str
    normalized: str
    entity_agent_id: str | None = None
    """The scope of the spelling that moves (a private spelling stays private)."""
    spelling_entity_id: str | None = None
    """The entity the spelling was recorded under, when that is one merged into
    ``entity_id`` (None: ``entity_id`` itself)."""
    relinked: tuple[Relink, ...] = ()
    """The facts whose subject is that spelling, with their links after the split."""
    agent_id: str | None = None


class EntitiesDiffer(Event, tag="entities.differ", frozen=True):
    """Two entities are not the same: facts about them are never flagged as possible
    conflicts of each other."""

    entity_id: str
    other_id: str
    namespace: str
    agent_id: str | None = None


class FactsDiffer(Event, tag="facts.differ", frozen=True):
    """Two facts both hold: an agent or operator said ``memory_id`` does not replace
    ``other_id``. Any possible conflict between the two is cleared (``facts.possible_conflict``),
    and neither is flagged against the other again."""

    memory_id: str
    other_id: str
    namespace: str
    agent_id: str | None = None


class Fold(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One sentence of a summary and the source memory it was taken from: ``start`` and
    ``end`` are character offsets into the summary's content."""

    memory_id: str
    start: int
    end: int


class MemoriesConsolidated(Event, tag="memories.consolidated", frozen=True):
    """The episodes ``memory_ids`` were folded into the summary ``summary_id`` (an episodic
    memory stored just before, in the same record): from ``at`` they are no longer valid
    (``t_invalid``, ``superseded_by`` the summary) but stay in the journal and the read
    model, reachable with ``as_of`` and from the summary. ``folds``: which sentence of the
    summary came from which source, so a forgotten source can be taken out of it."""

    summary_id: str
    namespace: str
    memory_ids: tuple[str, ...]
    at: UtcTime
    folds: tuple[Fold, ...] = ()


class MemoriesUnfolded(Event, tag="memories.unfolded", frozen=True):
    """A consolidation undone: ``memory_ids`` are valid again (their ``t_invalid`` and
    ``superseded_by`` cleared); the summary is forgotten by a ``memories.forgotten`` in the
    same record."""

    summary_id: str
    namespace: str
    memory_ids: tuple[str, ...]


AnyEvent = (
    MemoryStored
    | MemorySuperseded
    | MemoriesForgotten
    | MemoriesValidated
    | MemoriesAccessed
    | EntityCreated
    | EntityAliasAdded
    | MemoryMarked
    | FactsPossiblyConflicting
    | EntitiesMerged
    | EntitySplit
    | EntitiesDiffer
    | MemoriesConsolidated
    | MemoriesUnfolded
    | FactsDiffer
)
"""The union every reader decodes. Add new event classes here, at the end."""

EVENT_TYPES: tuple[type[Event], ...] = (
    MemoryStored,
    MemorySuperseded,
    MemoriesForgotten,
    MemoriesValidated,
    MemoriesAccessed,
    EntityCreated,
    EntityAliasAdded,
    MemoryMarked,
    FactsPossiblyConflicting,
    EntitiesMerged,
    EntitySplit,
    EntitiesDiffer,
    MemoriesConsolidated,
    MemoriesUnfolded,
    FactsDiffer,
)

KNOWN_TAGS: frozenset[str] = frozenset(str(t.__struct_config__.tag) for t in EVENT_TYPES)


def tag_of(event: Event) -> str:
    """The stable wire tag of an event."""
    return str(type(event).__struct_config__.tag)
