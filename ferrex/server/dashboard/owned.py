"""Entries kept per owner within two bounds (:class:`PerOwner`): the dashboard's sessions
(``web.Sessions``) and the write API's idempotency keys (``keys.IdempotencyKeys``), each
owned by a principal (the operator, or one agent)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


class PerOwner(Generic[V]):
    """Values by name, each of one owner, oldest first (not thread-safe: the caller locks).

    Beyond ``per_owner`` entries of one owner, that owner's oldest is dropped; beyond
    ``total`` in all, the oldest of the owner holding the most. So an owner adding again and
    again only ever replaces its own entries, never another's."""

    def __init__(self, per_owner: int, total: int) -> None:
        self.per_owner = per_owner
        self.total = total
        self._entries: OrderedDict[str, tuple[str, V]] = OrderedDict()  # name → (owner, value)
        self._of: dict[str, OrderedDict[str, None]] = {}  # owner → its names, oldest first

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: str) -> V | None:
        found = self._entries.get(name)
        return None if found is None else found[1]

    def items(self) -> Iterator[tuple[str, V]]:
        """(name, value), oldest first."""
        return ((name, value) for name, (_, value) in self._entries.items())

    def put(self, name: str, owner: str, value: V) -> None:
        """Keep ``value`` as the newest of ``owner`` (replacing any of ``name``), then drop
        what the two bounds leave no room for."""
        self.drop(name)
        self._entries[name] = (owner, value)
        mine = self._of.setdefault(owner, OrderedDict())
        mine[name] = None
        while len(mine) > self.per_owner:
            self.drop(next(iter(mine)))
        while len(self._entries) > self.total:
            busiest = max(self._of.values(), key=len)
            self.drop(next(iter(busiest)))

    def drop(self, name: str) -> None:
        found = self._entries.pop(name, None)
        if found is None:
            return
        names = self._of[found[0]]
        names.pop(name, None)
        if not names:
            del self._of[found[0]]
