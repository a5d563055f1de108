"""The journal: ferrex's only source of truth, an fsynced, hash-chained event log.

Imports nothing of ferrex's (DESIGN.md section 1). The on-disk format is documented in
``journal.segment`` (files) and ``journal.record`` (frames, hashing).

The names below are loaded when first used (a module ``__getattr__``), so that importing one
light module of the package (``journal.errors``, ``journal.files``, ``journal.version``)
does not load msgspec, the event catalogue and the file backend: a short-lived process
such as the prompt hook's lean path needs none of them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        CurrentAgain,
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
    from journal.record import Record, to_builtins
    from journal.repairs import plan_repair, repair
    from journal.verify import Problem, VerifyReport, verify
    from journal.version import FORMAT_VERSION

_WHERE: dict[str, str] = {
    "Access": "journal.events",
    "AnyEvent": "journal.events",
    "CurrentAgain": "journal.events",
    "EncodeError": "journal.errors",
    "EntitiesDiffer": "journal.events",
    "EntitiesMerged": "journal.events",
    "EntityAliasAdded": "journal.events",
    "EntityCreated": "journal.events",
    "EntitySplit": "journal.events",
    "Event": "journal.events",
    "FORMAT_VERSION": "journal.version",
    "FactsDiffer": "journal.events",
    "FactsPossiblyConflicting": "journal.events",
    "Fold": "journal.events",
    "Head": "journal.log",
    "Journal": "journal.log",
    "JournalBackend": "journal.backend",
    "JournalDamaged": "journal.errors",
    "JournalError": "journal.errors",
    "JournalFormatError": "journal.errors",
    "JournalTooNew": "journal.errors",
    "KeptEntity": "journal.events",
    "MemoriesAccessed": "journal.events",
    "MemoriesConsolidated": "journal.events",
    "MemoriesForgotten": "journal.events",
    "MemoriesUnfolded": "journal.events",
    "MemoriesValidated": "journal.events",
    "MemoryBody": "journal.events",
    "MemoryMarked": "journal.events",
    "MemoryStored": "journal.events",
    "MemorySuperseded": "journal.events",
    "Problem": "journal.verify",
    "Record": "journal.record",
    "Relink": "journal.events",
    "RepairEntry": "journal.manifest",
    "TornTail": "journal.log",
    "VerifyReport": "journal.verify",
    "plan_repair": "journal.repairs",
    "repair": "journal.repairs",
    "tag_of": "journal.events",
    "to_builtins": "journal.record",
    "verify": "journal.verify",
}


class _Package(types.ModuleType):
    """The package's module: ``journal.verify`` names the function, as it always has, even
    once the submodule of that name is loaded (the import system then sets the package's
    attribute to the submodule; an eager ``__init__`` bound the function after it)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "verify" and isinstance(value, types.ModuleType):
            value = value.verify
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'journal' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "FORMAT_VERSION",
    "Access",
    "AnyEvent",
    "CurrentAgain",
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
