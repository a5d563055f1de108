"""The decisions of the write side, as pure functions, by command family.

Each ``decide_*`` function takes a validated request, a :class:`~ferrex.core.view.View` of
the committed state (plus what is pending in the batch), the time and an id generator, and
returns a :class:`Decision`: the events to append and the answer to give. It reads no clock,
draws no id, runs no SQL, asks no Qdrant and embeds nothing; so every rule here is
unit-tested with a small in-memory view.

What a store's rules need measured (cosines of names, objects and predicate phrases; the
nearest memories by dense vector) they ask of a :class:`~ferrex.core.decide.shared.Measures`
they are given, at the moment they need it: the writer answers (and remembers each answer),
a test answers from a table. The command runner (:mod:`ferrex.core.runner`) runs them:
decide (measuring as asked) → append → apply.

The families: :mod:`.store` (one store, in the order of its rules), with :mod:`.facts` (a
fact's relation: replace, repeat, history, plural, possible conflicts), :mod:`.copies`
(duplicates and re-imports) and :mod:`.entities` (a store's names resolved; merge, split and
differ); :mod:`.forget` (forget, confirm and settle, marks, expiry, accesses, eviction);
:mod:`.consolidate` (fold, unfold, refold). :mod:`.shared` holds what they share and
:mod:`.notes` the prose they put into answers. This module defines only what every
decision is: the :class:`Decision` and the id generator it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from journal import Event

NewId = Callable[[str], str]
"""Draws a new id with the given prefix (``mem``, ``ent``)."""

R = TypeVar("R")


@dataclass(frozen=True)
class Decision(Generic[R]):
    """The events one command appends (none: nothing to write) and its answer, whose
    ``position`` and ``warnings`` the runner fills in once the record is appended."""

    events: tuple[Event, ...]
    result: R
