"""Bearer tokens for the HTTP transport: who a request speaks for.

Every HTTP request needs a token, on loopback too (a browser page or another local user can
reach a loopback port). Tokens are never stored or logged in the clear by ferrex, apart from
the one file the operator reads:

- ``<home>/run/http.token`` is made on the first ``serve --http`` (mode 0600). It is the
  operator's (sees every agent's memories) unless ``[[auth.tokens]]`` maps its hash otherwise.
- ``[[auth.tokens]]`` in ferrex.toml maps a token's SHA-256 hex to ``agent = "id"`` (that
  agent's view: its own, shared and unowned memories) or ``operator = true``. Editing the
  file adds or revokes tokens without a restart (the server follows its configuration).

A presented token is hashed and compared with every known hash by ``hmac.compare_digest``, so
the time taken says nothing about how close a guess was. Only the token decides who a request
is: no header (X-Forwarded-For, X-Real-IP, …) and no client address promotes it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from ferrex.errors import UsageError
from journal.files import make_private_dir

TOKEN_FILE = Path("run") / "http.token"
OPERATOR = "operator"
_AGENT_PREFIX = "agent:"


def token_hash(token: str) -> str:
    """The SHA-256 hex of a token, as ``[[auth.tokens]]`` names it."""
    return hashlib.sha256(token.encode()).hexdigest()


def ensure_token_file(home: Path) -> Path:
    """``<home>/run/http.token``, made (random, mode 0600) if it does not exist yet."""
    path = home / TOKEN_FILE
    make_private_dir(path.parent)  # 0700 from the start, the home too if it is new
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600)  # a copy made with a looser mode is tightened, not trusted
        return path
    try:
        os.fchmod(fd, 0o600)  # explicitly: the umask must not loosen it
        os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def read_token_file(path: Path) -> str:
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise UsageError(f"{path} is empty", hint="delete it; the next serve --http makes one")
    return token


@dataclass(frozen=True)
class Grant:
    """What a token may do: speak for one agent, or be the operator (``agent`` None)."""

    agent: str | None

    @property
    def client_id(self) -> str:
        return OPERATOR if self.agent is None else _AGENT_PREFIX + self.agent

    @classmethod
    def from_client_id(cls, client_id: str) -> Grant:
        if client_id.startswith(_AGENT_PREFIX):
            return cls(agent=client_id.removeprefix(_AGENT_PREFIX))
        return cls(agent=None)


def grants(entries: Sequence[Mapping[str, object]], file_token: str | None) -> dict[str, Grant]:
    """Token hash → grant: the configured entries, and the token file's as the operator's
    unless an entry names its hash."""
    table: dict[str, Grant] = {}
    if file_token is not None:
        table[token_hash(file_token)] = Grant(agent=None)
    for entry in entries:
        agent = entry.get("agent")
        table[str(entry["sha256"])] = Grant(agent=agent if isinstance(agent, str) else None)
    return table


class TokenTable:
    """The SDK's token verifier over the current grants (replaced whole on a reload)."""

    def __init__(self, table: Mapping[str, Grant]) -> None:
        self._table = dict(table)

    def replace(self, table: Mapping[str, Grant]) -> None:
        self._table = dict(table)  # one reference swap: a request sees the old or the new table

    def lookup(self, token: str) -> Grant | None:
        presented = token_hash(token)
        found: Grant | None = None
        for digest, grant in self._table.items():  # no early exit: every hash is compared
            if hmac.compare_digest(presented, digest):
                found = grant
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        grant = self.lookup(token)
        if grant is None:
            return None
        # The access token carries the hash, never the token itself, in case anything logs it.
        return AccessToken(token=token_hash(token), client_id=grant.client_id, scopes=[])
