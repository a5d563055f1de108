"""The portable dump: a home's memories and entities as JSON lines, read back for a restore.

Format 4 (:data:`FORMAT`). First a header (``"type": "ferrex_dump"``: the format, the
journal position the whole dump is of, ``current_only``, the namespace when only one);
then one line per entity (``"type": "entity"``: its id, namespace, name, normalized form,
kind, scope ``agent_id``, every spelling recorded for it that its creation does not make,
with how each was matched (any kind of the catalogue's ``AliasMatch``), ``merged_into`` for
one merged into another (those come last) and ``kept_for``, the agents a cascading forget
kept it for; every entity but those only memories left out name), then one line per
memory, keys in a fixed order, absent values left out::

    {"id": "mem_01J…", "type": "semantic", "namespace": "default",
     "subject": "api", "predicate": "uses", "object": "tokio 1.36",
     "predicate_normalized": "depends_on", "entities": ["Tokio", "api"],
     "source": "…", "confidence": 1.0, "visibility": "shared",
     "t_valid": "2026-11-28T09:00:00Z", "created_at": "2026-11-28T09:00:01.5Z",
     "last_validated": "…", "last_accessed": "…", "access_count": 3}

Episodic memories carry ``content`` (a text longer than the model's window too: it was
stored with ``split_long`` and is embedded in parts again; a line may say ``split_long``,
which a restore accepts and never needs, and the export, which loads no model, does not
write it); procedures
``name``, ``version``, ``steps`` and ``conditions``; superseded memories (all of them
unless ``current_only``) ``t_invalid`` and ``superseded_by``. A memory's entities are
listed by name, sorted, for people, and by id (``entity_ids``) for the restore, which keeps
entity ids as it keeps memory ids (an entity line whose spelling and scope a home already
holds merges into that entity instead). A line without ``entity_ids`` (an older dump) has
its names resolved. A fact that holds beside others has ``multi_valued``; an episodic
memory of a derived episode ``episode`` (the episode's id) and ``episode_index``.
``valid_from_given`` is ``true`` on the line of a memory stored with its start
(``valid_from``, a chat message's time) and absent otherwise (``t_valid`` is only when the
memory was learned). Format 2 wrote it only where the line's ``t_valid`` and ``created_at``
would be read otherwise (``journal.events.given_by_time``, the rule for journal records
written before the flag), so a line of a format 2 or 1 dump without it is read by that rule,
or as given without ``created_at``; but ``created_at`` was the import's then, so a home
restored more than a minute after its memories were stored wrote the flag on lines its first
dump had left without it. Format 3 says it whatever ``created_at`` is, and a restore keeps
``created_at`` (the ``learned_at`` of the ``memory.stored`` it journals).
Lifecycle marks appear only when not at their default: ``importance`` (not 0.5),
``pinned`` (true) and ``expires_at`` (a memory with a time to live; restored as that same
absolute time, so one already past is hidden at once and swept). Last come the flags
between dumped memories and entities (possible conflicts, entities said to differ, and, since
format 4, facts said to both hold), and a ``consolidation`` line per summary naming the
sources folded into it and when, so a restored summary can be undone.

Format 1 (what ``export jsonl`` wrote before: no header, no consolidation lines, live
memories unless ``--include-invalidated``) still imports; its folded sources come back
superseded by their summary, not folded.

Invariants: lines are in journal order (a memory comes after any it supersedes); the same
read model always dumps to the same bytes; a line read back
(:func:`ferrex.porting.dump_read.parse_line`) passes the same validation as a store, but for
the window (a dumped text was stored once), so a dump restores only what a store could have
written. Memories whose text was redacted cannot be restored and are not dumped. Each kind
of line is a typed structure of :mod:`ferrex.porting.lines`, which every line is written
through and whose keys a line read back may have. What the dump carries of a row is
:data:`ROW_KEYS`, of each field of each event :data:`EVENT_KEYS`, of each kind of event
:data:`CARRIED`; a test holds the three to the row type and the event catalogue.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final, cast

import msgspec

from ferrex.core.decide.restore import DIFFER, FACTS_DIFFER, POSSIBLE
from ferrex.errors import UsageError
from ferrex.porting.lines import (
    AliasLine,
    EntityLine,
    FlagLine,
    FoldLine,
    HeaderLine,
    Line,
    MemoryLine,
    encode,
    keys,
    values,
)
from ferrex.rules.lifecycle import DEFAULT_IMPORTANCE, expired
from journal.events import (
    Access,
    CurrentAgain,
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    EpisodeRef,
    Event,
    FactsDiffer,
    FactsPossiblyConflicting,
    Fold,
    KeptEntity,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    MemoryType,
    Relink,
    Visibility,
)
from journal.events import AliasMatch as AliasMatchKind
from projections.readmodel.predicates import is_current
from projections.rows import AliasMatch, Entity, Memory
from projections.sqlite import ReadModel

FIELDS: Final = keys(MemoryLine)
"""Every key a memory's dump line may have, in the order it is written."""

ROW_KEYS: Final = {
    "memory_id": "id", "type": "type", "namespace": "namespace", "content": "content",
    "subject": "subject", "predicate": "predicate", "object": "object",
    "predicate_normalized": "predicate_normalized", "procedure_name": "name",
    "procedure_version": "version", "steps": "steps", "conditions": "conditions",
    "entity_ids": "entity_ids", "source": "source", "confidence": "confidence",
    "context": "context", "agent_id": "agent_id", "visibility": "visibility",
    "t_valid": "t_valid", "t_invalid": "t_invalid", "superseded_by": "superseded_by",
    "supersedes": "supersedes", "created_at": "created_at",
    "last_validated": "last_validated", "last_accessed": "last_accessed",
    "access_count": "access_count", "importance": "importance", "pinned": "pinned",
    "expires_at": "expires_at", "multi_valued": "multi_valued", "episode": "episode",
    "episode_index": "episode_index", "import_key": "import_key",
    "valid_from_given": "valid_from_given",
}  # fmt: skip
"""Each field of a read-model row (:class:`projections.rows.Memory`) and the dump key that
carries it; a test holds the row type to this table, so a new column is dumped or named in
:data:`ROW_NOT_DUMPED`."""

ROW_NOT_DUMPED: Final = ("position", "redacted")
"""Row fields a dump does not carry: the journal position is the restore's own, and a
redacted memory is not dumped at all."""

FORMAT: Final = 4
"""The dump format this code writes. 4: ``facts_differ`` lines (two facts an agent or
operator said both hold, so the restored home never flags the pair again). 3:
``valid_from_given`` said on every line whose start was given, whatever its ``created_at``
(a restored home dumps the same lines again). 2: a header line first (:data:`HEADER`),
history included unless ``current_only``, consolidations as their own lines. 1: what
``export jsonl`` wrote before, no header. All of them import (``tests/golden/dump-v1.jsonl``,
``dump-v2.jsonl``, ``dump-v3.jsonl``)."""

GIVEN_SAID: Final = 3
"""The first format whose memory lines say ``valid_from_given`` whenever it is true (a line
without it was not given); an older line without it is read by ``given_by_time``."""

HEADER: Final = "ferrex_dump"
"""The ``type`` of a dump's first line: its format, and the journal position it is of."""

HEADER_FIELDS: Final = keys(HeaderLine)

CONSOLIDATION: Final = "consolidation"
"""The ``type`` of a line recording that dumped memories were folded into a dumped summary
(``id``: the summary's; after the memories)."""

FOLD_FIELDS: Final = keys(FoldLine)

ENTITY: Final = "entity"
"""The ``type`` of an entity's line."""

ENTITY_FIELDS: Final = keys(EntityLine)
"""Every key an entity's dump line may have, in the order it is written."""

FLAG_FIELDS: Final = keys(FlagLine)
"""Every key a flag's line may have (``id`` is the memory's, or the first entity's)."""

ALIAS_FIELDS: Final = keys(AliasLine)
"""Every key of one of an entity line's ``aliases``."""

ALIAS_MATCHES: Final = values(AliasLine, "match")
"""How a spelling may have been matched: the values of the alias line's ``match``, typed as
the event catalogue's ``AliasMatch``, so a kind the resolver learns (``abbreviation``) is one
a dump can carry back."""

CARRIED: Final[Mapping[type[Event], str]] = {
    MemoryStored: "a memory line (every field of the event and its body; ROW_KEYS)",
    MemorySuperseded: "t_invalid and superseded_by of the memory's line",
    MemoriesForgotten: (
        "nothing of a forgotten memory (gone from the read model); the entities a cascade "
        "dropped are not dumped, those it kept for some agents carry kept_for; a memory "
        "it made current again is dumped valid (no t_invalid, no superseded_by)"
    ),
    MemoriesValidated: "last_validated of each memory's line (restored as source operator)",
    MemoriesAccessed: "access_count and last_accessed of each memory's line",
    MemoryMarked: "importance, pinned and expires_at of the memory's line",
    EntityCreated: "an entity line (name, normalized, kind, agent_id)",
    EntityAliasAdded: "aliases of the entity's line, match any of the catalogue's AliasMatch",
    FactsPossiblyConflicting: "a possible_conflict line per pair still flagged",
    EntitiesMerged: (
        "merged_into of the absorbed entity's line; the relinks as entity_ids of memory lines"
    ),
    EntitySplit: (
        "the new entity's line (its spelling, match operator), an entities_differ line, the "
        "relinks as entity_ids of memory lines; restored as the split again when the dump "
        "holds the merged entity that lost the spelling"
    ),
    EntitiesDiffer: "an entities_differ line",
    FactsDiffer: (
        "a facts_differ line for the pair (the possible conflict it cleared has no line), so "
        "neither a store nor an entity merge in the restored home flags the pair again"
    ),
    MemoriesConsolidated: "a consolidation line (the summary, its sources, when)",
    MemoriesUnfolded: "the sources' lines valid again; the summary, forgotten, is not dumped",
}
"""How each kind of the event catalogue comes back from a dump: what its read-model rows
become in the lines (a test holds this to ``journal.events.EVENT_TYPES``, and the round-trip
property draws every kind). What stays in the journal only, and so in no dump: who said so
(``agent_id`` of a merge, split, difference or facts.differ), a forget's reason and details,
a supersede's reason, a validation's source, a consolidation's sentence offsets (``folds``)
and a split's ``spelling_entity_id``; ``ferrex export git`` carries those."""

EVENT_KEYS: Final[Mapping[type[msgspec.Struct], Mapping[str, str | None]]] = {
    MemoryStored: {
        "memory_id": "memory.id", "namespace": "memory.namespace", "memory_type": "memory.type",
        "t_valid": "memory.t_valid", "confidence": "memory.confidence",
        "entity_ids": "memory.entity_ids", "supersedes": "memory.supersedes",
        "procedure_version": "memory.version", "agent_id": "memory.agent_id",
        "visibility": "memory.visibility", "body": "memory.content",
        "body_hash": None, "multi_valued": "memory.multi_valued", "episode": "memory.episode",
        "valid_from_given": "memory.valid_from_given", "learned_at": "memory.created_at",
    },
    MemoryBody: {
        "content": "memory.content", "subject": "memory.subject",
        "predicate": "memory.predicate", "object": "memory.object",
        "predicate_normalized": "memory.predicate_normalized",
        "procedure_name": "memory.name", "conditions": "memory.conditions",
        "steps": "memory.steps", "source": "memory.source", "context": "memory.context",
        "import_key": "memory.import_key",
    },
    EpisodeRef: {"id": "memory.episode", "index": "memory.episode_index"},
    MemorySuperseded: {
        "memory_id": "memory.id", "namespace": "memory.namespace",
        "t_invalid": "memory.t_invalid", "superseded_by": "memory.superseded_by",
        "reason": None,
    },
    MemoriesForgotten: {
        "memory_ids": None, "namespace": None, "reason": None, "dropped_entity_ids": None,
        "details": None, "kept_entities": "entity.kept_for", "current_again": "memory.t_invalid",
    },
    KeptEntity: {"entity_id": "entity.id", "agent_ids": "entity.kept_for"},
    CurrentAgain: {"memory_id": "memory.id", "replaced_by": "memory.superseded_by"},
    MemoriesValidated: {"memory_ids": "memory.id", "at": "memory.last_validated", "source": None},
    MemoriesAccessed: {"accesses": "memory.access_count"},
    Access: {
        "memory_id": "memory.id", "last_at": "memory.last_accessed",
        "count": "memory.access_count",
    },
    MemoryMarked: {
        "memory_id": "memory.id", "namespace": "memory.namespace",
        "importance": "memory.importance", "pinned": "memory.pinned",
        "expires_at": "memory.expires_at",
    },
    EntityCreated: {
        "entity_id": "entity.id", "namespace": "entity.namespace", "name": "entity.name",
        "normalized": "entity.normalized", "kind": "entity.kind", "agent_id": "entity.agent_id",
    },
    EntityAliasAdded: {
        "entity_id": "entity.id", "namespace": "entity.namespace", "alias": "alias.alias",
        "normalized": "alias.normalized", "match": "alias.match", "score": "alias.score",
        "agent_id": "alias.agent_id",
    },
    FactsPossiblyConflicting: {
        "memory_id": "flag.id", "namespace": "flag.namespace", "others": "flag.other_id",
        "entity_id": "flag.entity_id", "other_entity_id": "flag.other_entity_id",
        "reason": "flag.reason", "score": "flag.score",
    },
    Relink: {"memory_id": "memory.id", "entity_ids": "memory.entity_ids"},
    EntitiesMerged: {
        "entity_id": "entity.id", "into": "entity.merged_into", "namespace": "entity.namespace",
        "relinked": "memory.entity_ids", "agent_id": None,
    },
    EntitySplit: {
        "entity_id": "flag.id", "new_entity_id": "entity.id", "namespace": "entity.namespace",
        "name": "alias.alias", "normalized": "alias.normalized",
        "entity_agent_id": "alias.agent_id", "spelling_entity_id": None,
        "relinked": "memory.entity_ids", "agent_id": None,
    },
    EntitiesDiffer: {
        "entity_id": "flag.id", "other_id": "flag.other_id", "namespace": "flag.namespace",
        "agent_id": None,
    },
    FactsDiffer: {
        "memory_id": "flag.id", "other_id": "flag.other_id", "namespace": "flag.namespace",
        "agent_id": None,
    },
    MemoriesConsolidated: {
        "summary_id": "fold.id", "namespace": "fold.namespace",
        "memory_ids": "fold.memory_ids", "at": "fold.at", "folds": None,
    },
    Fold: {"memory_id": None, "start": None, "end": None},
    MemoriesUnfolded: {"summary_id": None, "namespace": None, "memory_ids": None},
}  # fmt: skip
"""Every field of every event of the catalogue, and of the structures events hold, with the
dump key that carries what it left in the read model (``line.key``, the line types of
:data:`LINES`), or None: in no dump, the journal keeps it (who said so, why, a forget's
ids, a consolidation's sentence offsets; see :data:`CARRIED`). ``tests/unit/
test_dump_schema.py`` holds it to the catalogue, so a new field is placed here or fails."""

LINES: Final[Mapping[str, type[Line]]] = {
    "header": HeaderLine, "entity": EntityLine, "alias": AliasLine, "memory": MemoryLine,
    "flag": FlagLine, "fold": FoldLine,
}  # fmt: skip
"""The line types by the names :data:`EVENT_KEYS` uses."""

NOT_RESTORED: Final = ("journal_position",)
"""Dumped, but a restore cannot keep it: the journal records at which position the restore
journaled each memory (a row's ``position``), so a dump of the restored home names its own
(the header's ``journal_position``). A memory's ``created_at`` comes back: its
``memory.stored`` says when the dumped home learned it (``learned_at``)."""


def iso(timestamp: float) -> str:
    """A read-model time (float seconds, UTC) as RFC 3339 with ``Z``."""
    text = datetime.fromtimestamp(timestamp, UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def live_memories(
    read_model: ReadModel, *, include_invalidated: bool = False, namespace: str | None = None
) -> tuple[list[Memory], int]:
    """The memories to dump, in journal order, and how many were left out as redacted."""
    memories = read_model.memories(namespace=namespace)
    kept = [m for m in memories if not m.redacted and (include_invalidated or is_current(m))]
    kept.sort(key=lambda m: (m.position, m.memory_id))
    redacted = sum(1 for m in memories if m.redacted)
    return kept, redacted


def entity_names(read_model: ReadModel) -> dict[str, str]:
    """Entity id → its name, for every entity of the read model."""
    return read_model.entity_names()


def dumped_entities(
    read_model: ReadModel, memories: Sequence[Memory], namespace: str | None
) -> list[tuple[Entity, str | None, tuple[str, ...]]]:
    """The entities a dump of ``memories`` carries, by id, each with the entity it was merged
    into (None: not merged; merged ones last, so what they merged into comes first) and the
    agents a cascading forget kept it for (``ReadModel.entity_rows``): those a
    dumped memory names, and those no memory names; not those only memories left out name
    (superseded ones with ``current_only``, redacted ones)."""
    entities = read_model.export.entity_rows(namespace)
    dumped = {m.memory_id for m in memories}
    named: dict[str, bool] = {}
    for entity_id, memory_id in read_model.links([e.entity_id for e, _, _ in entities]):
        named[entity_id] = named.get(entity_id, False) or memory_id in dumped
    return [row for row in entities if named.get(row[0].entity_id, True)]


def dumped_flags(
    read_model: ReadModel,
    memories: Sequence[Memory],
    entities: Sequence[tuple[Entity, str | None, tuple[str, ...]]],
    namespace: str | None,
) -> list[FlagLine]:
    """The pairs of dumped facts said to both hold, the possible conflicts between dumped
    facts and the differences between dumped entities, as dump lines (after the memories they
    name). The pairs come first: a restore journals each line as its event, and a
    ``facts.differ`` clears the pair's possible conflict, so a conflict the home holds beside
    the pair (flagged after it was settled) comes back only when journaled after it."""
    namespaces = {m.memory_id: m.namespace for m in memories}
    flags = [
        FlagLine(id=first, type=FACTS_DIFFER, namespace=ns, other_id=other)
        for ns, first, other in read_model.export.facts_differing(namespace)
        if first in namespaces and other in namespaces
    ]
    flags += [
        FlagLine(id=c.memory_id, type=POSSIBLE, namespace=namespaces[c.memory_id],
                 other_id=c.other_id, entity_id=c.entity_id, other_entity_id=c.other_entity_id,
                 reason=c.reason, score=c.score)
        for c in read_model.export.possible_conflict_rows(namespace)
        if c.memory_id in namespaces and c.other_id in namespaces
    ]  # fmt: skip
    dumped = {e.entity_id for e, _, _ in entities}
    flags += [
        FlagLine(id=first, type=DIFFER, namespace=ns, other_id=other)
        for ns, first, other in read_model.export.differing(namespace)
        if first in dumped and other in dumped
    ]
    return flags


def dumped_folds(
    read_model: ReadModel, memories: Sequence[Memory], namespace: str | None
) -> list[FoldLine]:
    """The consolidations between dumped memories, a line per summary: the sources folded
    into it and when (their ``t_invalid``, the summary's event time if none still says so)."""
    dumped = {m.memory_id: m for m in memories}
    folded: dict[tuple[str, str], list[str]] = {}
    for ns, summary, memory in read_model.export.fold_rows(namespace):
        if summary in dumped and memory in dumped:
            folded.setdefault((ns, summary), []).append(memory)
    lines: list[FoldLine] = []
    for (ns, summary), sources in folded.items():
        times = [
            t for m in sources if (t := dumped[m].t_invalid) is not None
            and dumped[m].superseded_by == summary
        ]  # fmt: skip
        at = min(times) if times else dumped[summary].t_valid
        lines.append(FoldLine(id=summary, namespace=ns, memory_ids=tuple(sources), at=iso(at)))
    return lines


@dataclass(frozen=True)
class DumpHeader:
    """A dump's first line, checked (a dump without one is format 1)."""

    format: int
    journal_position: int | None = None
    current_only: bool = False
    namespace: str | None = None


def header_line(header: DumpHeader) -> bytes:
    return encode(
        HeaderLine(format=header.format, journal_position=header.journal_position,
                   current_only=header.current_only, namespace=header.namespace)
    )  # fmt: skip


def entity_line(
    entity: Entity,
    spellings: Sequence[AliasMatch],
    merged_into: str | None = None,
    kept_for: Sequence[str] = (),
) -> bytes:
    """One entity as one dump line (without the newline): its name, normalized form, kind
    and scope, every spelling recorded for it that its ``entity.created`` does not make
    again, the entity it was merged into, and the agents a cascading forget kept it for."""
    made = AliasLine(alias=entity.name, normalized=entity.normalized, match="exact", score=1.0,
                     agent_id=entity.agent_id)  # fmt: skip
    ordered = sorted(spellings, key=lambda a: (a.alias, a.normalized, a.match, a.score,
                                                a.agent_id or ""))  # fmt: skip
    aliases = [
        AliasLine(alias=a.alias, normalized=a.normalized, score=a.score, agent_id=a.agent_id,
                  match=cast(AliasMatchKind, a.match))  # a spelling's match the catalogue wrote
        for a in ordered
    ]  # fmt: skip
    return encode(
        EntityLine(
            id=entity.entity_id,
            namespace=entity.namespace,
            name=entity.name,
            normalized=entity.normalized,
            kind=entity.kind,
            agent_id=entity.agent_id,
            aliases=tuple(a for a in aliases if a != made) or None,
            merged_into=merged_into,
            kept_for=tuple(kept_for) or None,
        )
    )


def dump_line(memory: Memory, names: Mapping[str, str]) -> bytes:
    """One memory as one dump line (without the newline)."""
    m = memory
    entities = sorted(
        {names[e] for e in m.entity_ids if e in names}, key=lambda n: (n.casefold(), n)
    )
    line = MemoryLine(
        id=m.memory_id,
        type=cast(MemoryType, m.type),  # a row's type is one the catalogue wrote
        namespace=m.namespace,
        content=m.content,
        subject=m.subject,
        predicate=m.predicate,
        object=m.object,
        predicate_normalized=m.predicate_normalized if m.type == "semantic" else None,
        name=m.procedure_name,
        version=m.procedure_version,
        steps=m.steps or None,
        conditions=m.conditions or None,
        entities=tuple(entities) or None,
        source=m.source,
        confidence=m.confidence,
        context=m.context,
        agent_id=m.agent_id,
        visibility=cast(Visibility, m.visibility),
        t_valid=iso(m.t_valid),
        t_invalid=None if m.t_invalid is None else iso(m.t_invalid),
        superseded_by=m.superseded_by,
        supersedes=m.supersedes,
        created_at=iso(m.created_at),
        last_validated=None if m.last_validated is None else iso(m.last_validated),
        last_accessed=None if m.last_accessed is None else iso(m.last_accessed),
        access_count=m.access_count or None,
        importance=m.importance if m.importance != DEFAULT_IMPORTANCE else None,
        pinned=True if m.pinned else None,
        expires_at=None if m.expires_at is None else iso(m.expires_at),
        multi_valued=True if m.multi_valued else None,
        episode=m.episode,
        episode_index=m.episode_index if m.episode is not None else None,
        entity_ids=tuple(sorted(e for e in m.entity_ids if e in names)) or None,
        import_key=m.import_key,
        valid_from_given=True if m.valid_from_given else None,
        # split_long: never needed to restore (see dump_read.parse_line), so never written
    )
    return encode(line)


@dataclass(frozen=True)
class DumpResult:
    memories: int
    entities: int
    invalidated: int
    """How many of them are invalidated (none with ``current_only``)."""
    redacted: int
    """Memories left out because their text was redacted."""
    journal_position: int = 0
    """The journal position the dump is of (its header says so)."""
    consolidations: int = 0
    expired: int = 0
    """How many of them had outlived their time to live when dumped: dumped all the same (the
    dump is of the journal, not of the clock), they are hidden and swept once restored."""

    def as_dict(self) -> dict[str, int]:
        return {"memories": self.memories, "entities": self.entities,
                "invalidated": self.invalidated, "expired": self.expired,
                "redacted_left_out": self.redacted, "consolidations": self.consolidations,
                "journal_position": self.journal_position}  # fmt: skip


def write_dump(
    read_model: ReadModel,
    out: IO[bytes],
    *,
    current_only: bool = False,
    namespace: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DumpResult:
    """Write the dump of ``read_model`` to ``out``: the header, a line per entity, one per
    memory (superseded ones too unless ``current_only``), then the flags and the
    consolidations between them. All of it at the read model's one journal position."""
    position = read_model.checkpoint()
    header = DumpHeader(FORMAT, position, current_only, namespace)
    out.write(header_line(header) + b"\n")
    memories, redacted = live_memories(
        read_model, include_invalidated=not current_only, namespace=namespace
    )
    entities = dumped_entities(read_model, memories, namespace)
    spellings: dict[str, list[AliasMatch]] = {}
    for spelling in read_model.export.spelling_rows(namespace):
        spellings.setdefault(spelling.entity_id, []).append(spelling)
    for entity, merged_into, kept_for in entities:
        own = spellings.get(entity.entity_id, ())
        out.write(entity_line(entity, own, merged_into, kept_for) + b"\n")
    names = {e.entity_id: e.name for e, _, _ in entities}
    for done, memory in enumerate(memories, start=1):
        out.write(dump_line(memory, names) + b"\n")
        if progress is not None and (done % 512 == 0 or done == len(memories)):
            progress(done, len(memories))
    folds = dumped_folds(read_model, memories, namespace)
    for line in [*dumped_flags(read_model, memories, entities, namespace), *folds]:
        out.write(encode(line) + b"\n")
    invalidated = sum(1 for m in memories if not is_current(m))
    now = time.time()
    past_ttl = sum(1 for m in memories if expired(m.expires_at, now))
    return DumpResult(len(memories), len(entities), invalidated, redacted, position, len(folds),
                      past_ttl)  # fmt: skip


def check_dump_target(path: Path) -> None:
    """Refuse (``invalid_input``) a dump file that cannot be written: a directory, or one in a
    directory that does not exist; checked before the journal is read, not after."""
    if path.is_dir():
        raise UsageError(f"{path} is a directory", hint="give a file name for the dump")
    if not path.parent.is_dir():
        raise UsageError(
            f"cannot write {path}: {path.parent} is not a directory",
            hint="create the directory first",
        )


def write_dump_file(
    read_model: ReadModel,
    path: Path,
    *,
    current_only: bool = False,
    namespace: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DumpResult:
    """Write the dump to ``path`` atomically: a reader sees the old file or the whole new one."""
    check_dump_target(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            result = write_dump(
                read_model,
                out,
                current_only=current_only,
                namespace=namespace,
                progress=progress,
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return result
