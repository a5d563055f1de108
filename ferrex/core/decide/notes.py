"""The prose the decisions put into answers: the notes that tell an agent what became of its
store and the one line that settles it, why a fact was stored as history, and the hints
that name a ``ferrex`` command.

They stay beside the decisions rather than in an answer renderer: the notes are fields of
the answer's JSON document itself (``StoreResult.as_dict``: ``possible_conflict_note``,
``plural_note``, ``replaced_note``, ``similar.note``, ``history_reason``), which the MCP
tools, the HTTP API, the hub and ``ferrex import``'s report all send as it is; the one
renderer (``ferrex/server/answers.py``) only turns a finished document into compact text,
and ``core/`` may not import ``server/``. The hints belong to refusals raised inside the
decisions. Written here once, apart from the rules, so rewording an answer touches no
decision."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ferrex.times import rfc3339
from projections.rows import RELATION, RESTATES, Memory

from .shared import Flagged


def flag_note(new: str, flagged: Sequence[Flagged]) -> str:
    """The one line that tells the agent how to settle the first flagged fact."""
    if not flagged:
        return ""
    first = flagged[0]
    more = f" (and {len(flagged) - 1} more)" if len(flagged) > 1 else ""
    also = "" if first.reason in (RELATION, RESTATES) else " (or `ferrex entity merge`/`differ`)"
    if first.reason == RESTATES:
        return (
            f"restates {first.id} ({first.fact}){more}, its value under another predicate: "
            f"if it is that fact in other words, confirm ids=[{new}] supersedes={first.id}; "
            f"if both hold, confirm ids=[{new}] differs_from={first.id}"
        )
    return (
        f"may replace {first.id} ({first.fact}){more}: if it does, confirm ids=[{new}] "
        f"supersedes={first.id}; if both hold, confirm ids=[{new}] differs_from={first.id}"
        f"{also}"
    )


def similar_note(memory_id: str, kept_because: str | None) -> str:
    """The note of a memory a store is close to: how to say the new one replaces it (and,
    for a near copy kept, why it was kept)."""
    if kept_because is not None:
        return (
            f"near-identical to {memory_id} but kept: {kept_because}; if it replaces "
            f"that memory, forget it or store with supersedes={memory_id}"
        )
    return (
        f"similar to {memory_id}; if it replaces that memory, store with "
        f"supersedes={memory_id} (or forget the older one)"
    )


def replaced_multi_note(count: int) -> str:
    """The note of a single-valued fact that replaced ``count`` multi-valued ones."""
    return (
        f"replaced {count} multi-valued fact(s) "
        "of this relation; store with multi_valued=true to add a value instead"
    )


def plural_note(new: str, beside: Sequence[Flagged]) -> str:
    """The one line for a value kept beside others of a plainly plural relation: which, and
    how to say it replaces one instead."""
    if not beside:
        return (
            "stored as one value of a relation of many values (multi_valued); a later value "
            "is kept beside it"
        )
    first = beside[0]
    more = f" (and {len(beside) - 1} more)" if len(beside) > 1 else ""
    return (
        f"kept beside {first.id} ({first.fact}){more} as one more value of a relation of many "
        f"values; if it replaces it, confirm ids=[{new}] supersedes={first.id}"
    )


def replaced_note(replaced: Sequence[Flagged]) -> str:
    """The one line that names a fact replaced as the new value of its slot, and how to keep
    both when both hold."""
    first = replaced[0]
    more = f" (and {len(replaced) - 1} more)" if len(replaced) > 1 else ""
    return (
        f"replaced {first.id} ({first.fact}){more}; if both hold, store that fact again "
        "with multi_valued=true"
    )


def history_note(start: datetime | None, now: datetime, successor: Memory) -> str:
    """What a fact stored as history says: the fact that stays current, and since when."""
    began = (
        f"valid from {rfc3339(start)}" if start is not None else f"undated (learned {rfc3339(now)})"
    )
    return (
        f"{began}, so it began before {successor.memory_id} ({successor.subject} "
        f"{successor.predicate} {successor.object!r}, valid from {rfc3339(successor.t_valid)}), "
        "which stays current; stored as history ending there: recall with as_of before that "
        "time answers this one"
    )


SPLIT_HINT = "to undo a wrong merge, split the spelling: ferrex entity split NAME SPELLING"
"""Told to an agent that says two spellings of one entity differ."""


def merge_other_way(shared: str, private: str) -> str:
    """Told to a caller that merged a shared entity into a private one."""
    return f"merge the other way: ferrex entity merge {shared!r} {private!r}"


UNFOLD_HINT = "`ferrex consolidate --dry-run` and recall show summaries; their ids start mem_"
"""Told to a caller undoing a consolidation that does not exist."""


def current_again_note(older: Memory, forgotten: str) -> str:
    """What a forget says of a memory that the forgotten one had replaced: current again,
    named as a person reads it (a fact by its triple, else by its id)."""
    said = older.memory_id
    if older.type == "semantic" and older.subject and older.predicate:
        fact = " ".join(p for p in (older.subject, older.predicate, older.object) if p)
        said = f'"{fact}" ({older.memory_id})'
    return f"{said} is current again ({forgotten}, which had replaced it, is forgotten)"
