"""Duplicates: when a store is a copy of what is already stored, or an import line
already imported (step 5 of a store, :mod:`ferrex.core.decide.store`).

A memory of the same namespace and type whose text is a near copy (dense
cosine at or above ``dedup_threshold``, or the same words up to case, spacing and
punctuation among the neighbours the dedup check reads, and no difference of meaning found by
:func:`ferrex.rules.dedup.meaning_difference`: identifiers, quantities, dates, negation,
opposite words, names, the order of named things) refuses the store as ``duplicate``.
An episodic memory that is another *event* is no duplicate (:func:`another_event`): the
same words with an explicitly given event time (``valid_from``) or a ``source`` that
differs from the old memory's, or another line of an import (both carry an
``import_key`` and the keys differ). A retried plain store is still a duplicate, and so
is a reworded report of the same event with its own time. A
memory kept beside a near copy says so in its answer (``similar``: the id, the
similarity and why it was kept), and so does one merely close to another (at or above
``near_threshold``), so the agent can supersede it. An import line whose
``import_key`` (its place and text) already stored a memory is refused as ``duplicate``
with ``imported`` in its details, before any other rule: importing a file twice stores
nothing new. So is one whose ``former_import_keys`` (a key's older form) stored a memory
with the same ``context``. When that memory's text is not the line's (a message edited
under its id), ``changed`` is in the details too: the import reports it and stores
nothing, so no item silently becomes two memories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import NotRequired, TypedDict

from ferrex.errors import Duplicate
from ferrex.rules.arguments import is_request_key
from ferrex.rules.dedup import meaning_difference, near_copy, same_text
from ferrex.rules.lifecycle import expired
from ferrex.rules.memory_input import ValidStore
from projections.documents import memory_text
from projections.readmodel.predicates import is_current
from projections.rows import Memory

from ..settings import StoreSettings
from ..view import View
from .notes import similar_note
from .shared import Measures, Who


class SimilarAnswer(TypedDict):
    """A :class:`SimilarMemory` as the store's answer names it."""

    id: str
    similarity: float
    note: str
    kept_because: NotRequired[str]


@dataclass(frozen=True)
class SimilarMemory:
    """A memory the new one is close to, named in the store's answer."""

    id: str
    similarity: float
    kept_because: str | None = None
    """Set when the similarity reached the duplicate threshold: why it is no duplicate."""

    def as_dict(self) -> SimilarAnswer:
        similarity, note = round(self.similarity, 4), similar_note(self.id, self.kept_because)
        if self.kept_because is None:
            return {"id": self.id, "similarity": similarity, "note": note}
        return {"id": self.id, "similarity": similarity, "kept_because": self.kept_because,
                "note": note}  # fmt: skip


def refuse_imported(valid: ValidStore, key: str, view: View, who: Who) -> None:
    """An import line that already stored a memory (the same place and text of the same
    file, imported again) stores nothing: refused as ``duplicate``, ``imported`` in the
    details (``ferrex import`` reports it as skipped).

    A memory stored under one of ``valid.former_import_keys`` (the form an older ferrex
    gave the key) counts only when its ``context`` is the line's: the older form may have
    been too coarse (a chat message's id alone, which two conversations may share), and the
    context names the item whole (format, conversation, message, part). A memory found
    whose text is not the line's is an item changed since its import: refused too,
    ``changed`` in the details. Storing the new text beside the old would leave two
    memories for one item, and superseding it would drop what was imported without
    anyone asking; the import reports it instead (forget the old memory and import again
    to take the new text)."""
    done = [m for m in view.imported(who.namespace, key) if who.sees(m)]
    for former in valid.former_import_keys:
        done += [
            m
            for m in view.imported(who.namespace, former)
            if who.sees(m) and m.context == valid.context
        ]
    if not done:
        return
    ids = [m.memory_id for m in done]
    if valid.content is None or any(m.content == valid.content for m in done):
        raise Duplicate(
            f"this import line was already imported as {ids[0]}",
            hint="nothing to do: importing a file again stores only its new lines",
            details={"ids": ids, "imported": True, "similarity": 1.0},
        )
    raise Duplicate(
        f"this import line was imported as {ids[0]} with another text, since changed",
        hint=f"the memory imported then stays; to take the new text, forget {ids[0]} and "
        "import again",
        details={"ids": ids, "imported": True, "changed": True},
    )


def another_event(valid: ValidStore, text: str, old: Memory, old_text: str) -> str | None:
    """Why an episodic store is another event than ``old`` (which has much the same text),
    or None: another line of an import (both carry an import key, and the keys differ); or
    the same words (up to case, spacing and punctuation) with an explicitly given event time
    or a source that differs from the old memory's. A reworded report with its own time is
    still a duplicate (it tells the same event again), and so is a plain retried store (no
    time, no source, no import; an HTTP request's key is no import line)."""
    keys = (valid.import_key, old.import_key)
    if None not in keys and keys[0] != keys[1] and not any(map(is_request_key, keys)):
        return "another event: another line of an import"
    if not same_text(text, old_text):
        return None
    if valid.t_valid is not None and abs(valid.t_valid.timestamp() - old.t_valid) >= 0.001:
        return "another event: the same text at a different event time (valid_from)"
    if valid.source is not None and valid.source != old.source:
        return "another event: the same text from a different source"
    return None


def neighbour_floor(settings: StoreSettings) -> float:
    """The lowest similarity of a neighbour that the dedup check looks at: a measurer may
    leave out the neighbours below it (:meth:`Measures.neighbours`)."""
    return min(settings.near_threshold, settings.dedup_threshold)


def refuse_duplicates(
    valid: ValidStore,
    text: str,
    view: View,
    who: Who,
    measures: Measures,
    skip: set[str],
    settings: StoreSettings,
    now: datetime,
) -> SimilarMemory | None:
    """Refuse a near copy of a memory (as ``duplicate``); otherwise the closest memory at or
    above the duplicate threshold it was kept beside (and why), else the closest at or above
    the near threshold, else None."""
    kept: SimilarMemory | None = None
    near: SimilarMemory | None = None
    floor = neighbour_floor(settings)
    for memory_id, score in sorted(measures.neighbours(), key=lambda h: (-h[1], h[0])):
        if not math.isfinite(score):  # it would fail every comparison, silently
            raise ValueError(f"similarity must be a finite number, got {score!r}")
        if memory_id in skip or score < floor:
            continue
        old = view.memory(memory_id)
        if (
            old is None
            or not is_current(old)
            or expired(old.expires_at, now.timestamp())
            or old.namespace != who.namespace
            or old.type != valid.type
            or not who.sees(old)
        ):
            continue
        score = min(score, 1.0)
        old_text = memory_text(old.type, old.body())
        if not near_copy(score, text, old_text, settings.dedup_threshold):
            near = near or SimilarMemory(memory_id, score)
            continue
        why = another_event(valid, text, old, old_text) if valid.type == "episodic" else None
        if why is None:
            why = meaning_difference(text, old_text)
        if why is None:
            raise Duplicate(
                f"a similar memory exists: {memory_id} (similarity {score:.3f})",
                hint=f"pass supersedes={memory_id} to replace it",
                details={"ids": [memory_id], "similarity": round(score, 4)},
            )
        kept = kept or SimilarMemory(memory_id, score, why)
    return kept or near
