"""Who a tool call comes from, and how its failure travels back: what every process of a data
directory speaks (the hub's frames, the MCP answers), kept apart from the tools themselves so
that a server can name its caller before it loads anything the tools need.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ferrex.errors import FerrexError
from ferrex.rules.visibility import sees

if TYPE_CHECKING:
    from ferrex.config import Config


@dataclass(frozen=True)
class Caller:
    """Who a tool call comes from: the agent (None: the operator), its default namespace,
    and the visibility its stores take when they name none (None: private for an agent)."""

    agent_id: str | None = None
    namespace: str | None = None
    visibility: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"agent_id": self.agent_id, "namespace": self.namespace,
                "visibility": self.visibility}  # fmt: skip

    @classmethod
    def from_config(cls, config: Config) -> Caller:
        """A server's caller: its configured agent id, default namespace and visibility."""
        return cls(agent_id=config["store.agent_id"],
                   namespace=config["store.default_namespace"],
                   visibility=config["store.default_visibility"])  # fmt: skip

    @classmethod
    def from_dict(cls, raw: object) -> Caller:
        if not isinstance(raw, Mapping):
            return cls()
        agent, namespace = raw.get("agent_id"), raw.get("namespace")
        visibility = raw.get("visibility")
        return cls(
            agent_id=agent if isinstance(agent, str) and agent else None,
            namespace=namespace if isinstance(namespace, str) and namespace else None,
            visibility=visibility if visibility in ("private", "shared") else None,
        )

    def sees(self, agent_id: str | None, visibility: str) -> bool:
        """Whether this caller may see a memory owned by ``agent_id`` with ``visibility``."""
        return sees(self.agent_id, agent_id, visibility)


def error_document(exc: FerrexError) -> dict[str, Any]:
    """The JSON form of an error that crosses a process boundary or reaches an agent."""
    return {"kind": exc.kind, **exc.as_dict()}
