"""The journal: ferrex's only source of truth, an fsynced, hash-chained event log.

Imports nothing of ferrex's (DESIGN.md section 1). The on-disk format is documented in
``journal.segment`` (files) and ``journal.record`` (frames, hashing).
"""

from journal.backend import JournalBackend
from journal.errors import (
    EncodeError,
    JournalDamaged,
    JournalError,
    JournalFormatError,
    JournalTooNew,
)
from journal.events import (
    Access,
    AnyEvent,
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
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
    Relink,
    tag_of,
)
from journal.log import Head, Journal, TornTail
from journal.manifest import RepairEntry
from journal.record import FORMAT_VERSION, Record, to_builtins
from journal.repairs import plan_repair, repair
from journal.verify import Problem, VerifyReport, verify

__all__ = [
    "FORMAT_VERSION",
    "Access",
    "AnyEvent",
    "EncodeError",
    "EntitiesDiffer",
    "EntitiesMerged",
    "EntityAliasAdded",
    "EntityCreated",
    "EntitySplit",
    "Event",
    "FactsDiffer",
    "FactsPossiblyConflicting",
    "Fold",
    "Head",
    "Journal",
    "JournalBackend",
    "JournalDamaged",
    "JournalError",
    "JournalFormatError",
    "JournalTooNew",
    "KeptEntity",
    "MemoriesAccessed",
    "MemoriesConsolidated",
    "MemoriesForgotten",
    "MemoriesUnfolded",
    "MemoriesValidated",
    "MemoryBody",
    "MemoryMarked",
    "MemoryStored",
    "MemorySuperseded",
    "Problem",
    "Record",
    "Relink",
    "RepairEntry",
    "TornTail",
    "VerifyReport",
    "plan_repair",
    "repair",
    "tag_of",
    "to_builtins",
    "verify",
]
