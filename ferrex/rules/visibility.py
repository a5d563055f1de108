"""Who may see what: the one visibility rule, shared by every read and every decision.

An agent sees shared memories, memories with no owning agent and its own private ones; a
caller without an agent id is the operator and sees everything. Entities and their spellings
carry the same scope as the memory that introduced them (``scope_of``): a spelling that a
private memory of agent A added belongs to A alone, so no other agent sees it, resolves a
name to it, or can tell that it exists.

An entity may also be *kept for* some agents only (``viewers``): a shared entity whose
every mention others could see was forgotten, with a cascade, while private memories still
name it. It is then gone for everyone but the agents whose private memories name it
(``after_forget``), so what the others see is what they would see had those private memories
never existed. ``viewers`` is None for an entity everyone may see, and an entity of a
private scope is kept for its agent alone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from projections.vectors import Clause, passes, visible

Mention = tuple[str | None, str]
"""A memory naming an entity, as visibility sees it: (owning agent, visibility)."""


def sees(caller: str | None, owner: str | None, visibility: str) -> bool:
    """Whether ``caller`` (an agent id; None: the operator) may see a memory owned by
    ``owner`` with ``visibility``: the rule *visible* read from its spec
    (:func:`projections.vectors.visible`), which the read model's SQL and the vector
    filters render too; the operator needs no clause."""
    if caller is None:
        return True
    return passes((_visible(caller),), {"visibility": visibility, "agent_id": owner})


@lru_cache(maxsize=1024)
def _visible(caller: str) -> Clause:
    """The rule's clause for one agent, built once (recall asks it for every row)."""
    return visible(caller)


def scope_of(owner: str | None, visibility: str) -> str | None:
    """The entity scope of a memory: its agent for a private memory, else None (shared)."""
    return owner if visibility == "private" and owner else None


def in_scope(
    scope: str | None, spelling_scope: str | None, viewers: Collection[str] | None
) -> bool:
    """Whether a spelling whose scope is ``spelling_scope``, of an entity kept for
    ``viewers``, may be used by a store whose memory has ``scope``: shared spellings of
    entities everyone sees always; private ones, and those of an entity kept for some
    agents, only by a private memory of one of them."""
    if viewers is not None and (scope is None or scope not in viewers):
        return False
    return spelling_scope is None or spelling_scope == scope


def own_private(
    agent_id: str | None, spelling_scope: str | None, viewers: Collection[str] | None
) -> bool:
    """Whether a spelling is one of ``agent_id``'s own private ones (of an entity it still
    sees): what a shared store of that agent weighs for possible conflicts beside the shared
    spellings (flags naming its private facts, which only it sees), never resolves to."""
    return (agent_id is not None and spelling_scope == agent_id
            and (viewers is None or agent_id in viewers))  # fmt: skip


def sees_scope(
    caller: str | None, spelling_scope: str | None, viewers: Collection[str] | None
) -> bool:
    """Whether ``caller`` may see an entity or spelling of ``spelling_scope``, of an entity
    kept for ``viewers`` (None: for everyone)."""
    if caller is None:
        return True
    if viewers is not None and caller not in viewers:
        return False
    return spelling_scope is None or spelling_scope == caller


@dataclass(frozen=True)
class Fate:
    """What a cascading forget does to an entity its memories named: nothing, drop it
    (``dropped``), or keep it for ``kept_for`` only."""

    dropped: bool = False
    kept_for: tuple[str, ...] | None = None


def after_forget(
    viewers: Sequence[str] | None, forgotten: Sequence[Mention], remaining: Sequence[Mention]
) -> Fate:
    """The fate of an entity seen by ``viewers`` (None: everyone) when, with a cascade, the
    memories ``forgotten`` that named it go and ``remaining`` still name it.

    Per viewer: an entity whose mentions that viewer could see are all gone, some of them
    by this forget, is gone for that viewer; the others keep it as it was. So an entity
    stays for everyone while a memory everyone sees names it; it is kept for the agents
    whose private memories name it once the last such memory goes; and a forget of private
    memories alone never takes a shared entity from anyone (what one agent keeps to itself
    changes nothing others see, forgetting it included)."""

    def everyone(mentions: Sequence[Mention]) -> bool:
        return any(visibility != "private" or owner is None for owner, visibility in mentions)

    if everyone(remaining):
        return Fate()
    owners = {owner for owner, _ in remaining if owner is not None}
    if viewers is None:
        if not everyone(forgotten):
            return Fate()
        keep = owners
    else:
        losing = {owner for owner, _ in forgotten if owner is not None} - owners
        if everyone(forgotten):
            losing = set(viewers) - owners
        keep = set(viewers) - losing
        if keep == set(viewers):
            return Fate()
    if not keep:
        return Fate(dropped=True)
    return Fate(kept_for=tuple(sorted(keep)))


def all_readers_see(
    agent: str | None, visibility: str, owner: str | None, old_visibility: str
) -> bool:
    """Whether every caller who may see a memory stored by ``agent`` with ``visibility``
    also sees an older memory owned by ``owner`` with ``old_visibility``.

    When not (a shared memory replacing its author's private one), the new memory must show
    no trace of the old one to those readers: no link, no validation, no version counted
    from it."""
    if visibility == "private" and agent is not None:
        return sees(agent, owner, old_visibility)
    return old_visibility == "shared" or owner is None


def may_change(agent: str | None, visibility: str, owner: str | None, old_visibility: str) -> bool:
    """Whether a memory stored by ``agent`` with ``visibility`` may change an older memory
    (supersede it, version it, re-validate it by repeating or citing it).

    A private memory changes only its own agent's private memories: what one agent keeps to
    itself never alters what others see. Any other store changes what its author may see."""
    if visibility == "private" and agent is not None:
        return old_visibility == "private" and owner == agent
    return sees(agent, owner, old_visibility)
