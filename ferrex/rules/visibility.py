"""Who may see what: the one visibility rule, shared by every read and every decision.

An agent sees shared memories, memories with no owning agent and its own private ones; a
caller without an agent id is the operator and sees everything. Entities and their spellings
carry the same scope as the memory that introduced them (``scope_of``): a spelling that a
private memory of agent A added belongs to A alone, so no other agent sees it, resolves a
name to it, or can tell that it exists.
"""

from __future__ import annotations


def sees(caller: str | None, owner: str | None, visibility: str) -> bool:
    """Whether ``caller`` (an agent id; None: the operator) may see a memory owned by
    ``owner`` with ``visibility``."""
    return caller is None or visibility == "shared" or owner is None or owner == caller


def scope_of(owner: str | None, visibility: str) -> str | None:
    """The entity scope of a memory: its agent for a private memory, else None (shared)."""
    return owner if visibility == "private" and owner else None


def in_scope(scope: str | None, spelling_scope: str | None) -> bool:
    """Whether a spelling whose scope is ``spelling_scope`` may be used by a store whose
    memory has ``scope``: shared spellings always, private ones only by their own agent."""
    return spelling_scope is None or spelling_scope == scope


def sees_scope(caller: str | None, spelling_scope: str | None) -> bool:
    """Whether ``caller`` may see an entity or spelling of ``spelling_scope``."""
    return caller is None or spelling_scope is None or spelling_scope == caller


def may_change(agent: str | None, visibility: str, owner: str | None, old_visibility: str) -> bool:
    """Whether a memory stored by ``agent`` with ``visibility`` may change an older memory
    (supersede it, version it, re-validate it by repeating or citing it).

    A private memory changes only its own agent's private memories: what one agent keeps to
    itself never alters what others see. Any other store changes what its author may see."""
    if visibility == "private" and agent is not None:
        return old_visibility == "private" and owner == agent
    return sees(agent, owner, old_visibility)
