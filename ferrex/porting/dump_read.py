"""Reading a dump back: each line decoded into its :mod:`ferrex.porting.lines` structure and
checked as a store is, into what :mod:`ferrex.core.decide.restore` journals.

A key the kind does not have, a value of the wrong type or outside the catalogue's
enumeration is refused by the decoding, naming the key and the line; what follows checks
what types cannot say (ids, ranges, times, which type of memory a field is for), and a
memory line passes the same validation as a store but for the window (a dumped text was
stored once). The format (:mod:`ferrex.porting.dump`) is described there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ferrex.core.decide.restore import (
    DIFFER,
    FACTS_DIFFER,
    POSSIBLE,
    Restored,
    RestoredAlias,
    RestoredEntity,
    RestoredFlag,
    RestoredFold,
)
from ferrex.errors import UsageError
from ferrex.ids import plausible_id
from ferrex.porting.dump import CONSOLIDATION, ENTITY, FORMAT, GIVEN_SAID, HEADER, DumpHeader
from ferrex.porting.lines import (
    AliasLine,
    EntityLine,
    FlagLine,
    FoldLine,
    HeaderLine,
    MemoryLine,
    decode,
)
from ferrex.rules.entities import normalize_entity
from ferrex.rules.memory_input import DEFAULT_LIMITS, Limits, StoreRequest, validate
from ferrex.rules.secrets import SecretsMode
from ferrex.rules.store_fields import parse_time
from journal.events import EpisodeRef, given_by_time

THIS_LINE: Final = "this line"
"""The ``where`` of a line whose report names its number already (``ferrex import``'s): its
errors then say no place before a field's own message (``t_valid 'soon' is not ...``)."""


def placed(message: str, where: str) -> str:
    """A lower layer's ``message`` about one field, told at ``where``."""
    return message if where == THIS_LINE else f"{where}: {message}"


def parse_header(raw: Mapping[str, Any], where: str) -> DumpHeader:
    """Check a header line: a format this code reads, or a refusal naming it."""
    line = decode(raw, HeaderLine, where, "a dump header")
    version = _at_least(line.format, "format", where, minimum=1)
    assert version is not None  # a header's format is a required key
    if version > FORMAT:
        raise UsageError(
            f"the dump is format {version}, newer than this ferrex reads ({FORMAT})",
            hint="import it with the ferrex version that wrote it, or a newer one",
        )
    return DumpHeader(
        format=version,
        journal_position=_at_least(line.journal_position, "journal_position", where, minimum=0),
        current_only=line.current_only,
        namespace=_text(line.namespace, "namespace", where),
    )


def is_header(raw: Mapping[str, Any]) -> bool:
    return raw.get("type") == HEADER


def parse_fold_line(raw: Mapping[str, Any], where: str) -> RestoredFold:
    """Check one consolidation line; raise UsageError naming ``where`` and the field."""
    line = decode(raw, FoldLine, where, "a consolidation line")
    if not plausible_id(line.id):
        raise UsageError(f"id in {where} is not a memory id", hint="ids come from a dump")
    namespace = _namespace(line.namespace, where)
    if not line.memory_ids or not all(plausible_id(m) for m in line.memory_ids):
        raise UsageError(f"memory_ids in {where} must be a list of memory ids")
    try:
        at = parse_time(line.at, "at")
    except UsageError as exc:
        raise exc.reworded(placed(exc.message, where)) from exc
    assert at is not None  # a consolidation line's at is a required key
    return RestoredFold(line.id, namespace, line.memory_ids, at)


def parse_flag_line(raw: Mapping[str, Any], where: str) -> RestoredFlag:
    """Check one flag line; raise UsageError naming ``where`` and the field."""
    line = decode(raw, FlagLine, where, f"a {raw.get('type')} line")
    kind = line.type
    ids: dict[str, str | None] = {"id": line.id, "other_id": line.other_id}
    if kind == POSSIBLE:
        ids |= {"entity_id": line.entity_id, "other_entity_id": line.other_entity_id}
    for key, value in ids.items():
        if not plausible_id(value):
            raise UsageError(f"{key} in {where} is not an id", hint="ids come from a dump")
    namespace = _namespace(line.namespace, where)
    if kind != POSSIBLE:
        return RestoredFlag(kind, namespace, line.id, line.other_id)
    reason = line.reason if line.reason is not None else "head word"
    if not reason.strip():
        raise UsageError(f"reason in {where} must be a text")
    score = _fraction(line.score, "score", where)
    assert line.entity_id is not None and line.other_entity_id is not None  # checked above
    return RestoredFlag(POSSIBLE, namespace, line.id, line.other_id, line.entity_id,
                        line.other_entity_id, reason, score)  # fmt: skip


_STORE_FIELDS: Final = (
    "type", "content", "subject", "predicate", "object", "name", "source", "confidence",
    "context", "supersedes", "namespace", "agent_id", "visibility", "importance", "pinned",
)  # fmt: skip
_LISTS: Final = ("steps", "conditions", "entities")


def is_dump_line(raw: Mapping[str, Any]) -> bool:
    """Whether a parsed JSON line is a dump line (store lines never carry an ``id``), or a
    dump's header."""
    return "id" in raw or is_header(raw)


@dataclass(frozen=True)
class MemoryChecks:
    """How a dump's memory lines are checked (:func:`parse_line`): against ``limits``,
    ``count_tokens`` and ``window`` as a store is, ``secrets`` what a likely secret in the
    text does (``ferrex import --secrets``), ``dump_format`` the format the dump's header
    named (1 without one: how a line without ``valid_from_given`` reads)."""

    limits: Limits = DEFAULT_LIMITS
    count_tokens: Callable[[str], int | None] | None = None
    window: int | None = None
    secrets: SecretsMode = "refuse"
    dump_format: int = FORMAT


DEFAULT_CHECKS: Final = MemoryChecks()


def parse_dump_line(
    raw: Mapping[str, Any], where: str, checks: MemoryChecks = DEFAULT_CHECKS
) -> Restored | RestoredEntity | RestoredFlag | RestoredFold:
    """Check one parsed dump line, an entity's, a memory's (``checks``), a flag's or a
    consolidation's."""
    if raw.get("type") == ENTITY:
        return parse_entity_line(raw, where)
    if raw.get("type") == CONSOLIDATION:
        return parse_fold_line(raw, where)
    if raw.get("type") in (POSSIBLE, DIFFER, FACTS_DIFFER):
        return parse_flag_line(raw, where)
    return parse_line(raw, where, checks)


def parse_entity_line(raw: Mapping[str, Any], where: str) -> RestoredEntity:
    """Check one entity line; raise UsageError naming ``where`` and the field."""
    line = decode(raw, EntityLine, where, "an entity line")
    if not plausible_id(line.id):
        raise UsageError(f"id in {where} is not an entity id", hint="ids come from a dump")
    name = _text(line.name, "name", where)
    assert name is not None  # an entity line's name is a required key
    merged_into = line.merged_into
    if merged_into is not None and (not plausible_id(merged_into) or merged_into == line.id):
        raise UsageError(f"merged_into in {where} is not another entity's id")
    kept_for = line.kept_for or ()
    if not all(a.strip() for a in kept_for):
        raise UsageError(f"kept_for in {where} must be a list of agent ids")
    return RestoredEntity(
        entity_id=line.id,
        namespace=_text(line.namespace, "namespace", where),
        name=name,
        normalized=_text(line.normalized, "normalized", where) or normalize_entity(name),
        kind=_text(line.kind, "kind", where),
        agent_id=_text(line.agent_id, "agent_id", where),
        aliases=tuple(
            _alias(a, f"alias {n} of {where}") for n, a in enumerate(line.aliases or (), 1)
        ),
        merged_into=merged_into,
        kept_for=kept_for,
    )


def _alias(line: AliasLine, where: str) -> RestoredAlias:
    alias = _text(line.alias, "alias", where)
    assert alias is not None  # an alias's alias is a required key
    return RestoredAlias(
        alias=alias,
        normalized=_text(line.normalized, "normalized", where) or normalize_entity(alias),
        match=line.match,
        score=_fraction(line.score, "score", where),
        agent_id=_text(line.agent_id, "agent_id", where),
    )


def parse_line(
    raw: Mapping[str, Any], where: str, checks: MemoryChecks = DEFAULT_CHECKS
) -> Restored:
    """Check one parsed dump line of a memory as ``checks`` say; raise UsageError naming
    ``where`` and the field."""
    line = decode(raw, MemoryLine, where, "a dump line")
    if not plausible_id(line.id):
        raise UsageError(f"id in {where} is not a memory id", hint="ids come from a dump")
    fields: dict[str, Any] = {
        k: v for k in (*_STORE_FIELDS, *_LISTS) if (v := getattr(line, k)) is not None
    }
    try:  # each time named as the dump spells it (a store's valid_from is its t_valid)
        t_valid = parse_time(line.t_valid, "t_valid")
        t_invalid = parse_time(line.t_invalid, "t_invalid")
        last_validated = parse_time(line.last_validated, "last_validated")
        last_accessed = parse_time(line.last_accessed, "last_accessed")
        expires_at = parse_time(line.expires_at, "expires_at")
        created_at = parse_time(line.created_at, "created_at")
    except UsageError as exc:
        raise exc.reworded(placed(exc.message, where)) from exc
    try:
        # A dumped memory was stored once: a text longer than the window was kept whole then
        # and is embedded in parts again, whatever this home's model reads (split_long).
        valid = validate(
            StoreRequest(valid_from=t_valid, split_long=True, **fields),
            checks.limits,
            count_tokens=checks.count_tokens,
            window=checks.window,
            secrets=checks.secrets,
        )
    except UsageError as exc:
        raise exc.reworded(placed(exc.message, where), details=exc.details) from exc
    superseded_by = line.superseded_by
    if superseded_by is not None and not plausible_id(superseded_by):
        raise UsageError(f"superseded_by in {where} is not a memory id")
    version = _at_least(line.version, "version", where, minimum=1)
    if version is not None and valid.type != "procedural":
        raise UsageError(f"version in {where} is only for procedural memories")
    if superseded_by is not None and t_invalid is None:
        raise UsageError(f"{where} has superseded_by but no t_invalid")
    if expires_at is not None and valid.pinned:
        raise UsageError(
            f"{where} is both pinned and expiring (expires_at)",
            hint="a pinned memory does not expire: drop one of the two",
        )
    access_count = _at_least(line.access_count, "access_count", where, minimum=0) or 0
    if access_count and last_accessed is None:
        raise UsageError(f"{where} has access_count but no last_accessed")
    multi_valued = bool(line.multi_valued)
    if multi_valued and valid.type != "semantic":
        raise UsageError(f"multi_valued in {where} is only for semantic memories")
    episode = _text(line.episode, "episode", where)
    episode_index = _at_least(line.episode_index, "episode_index", where, minimum=0)
    if episode is not None and valid.type != "episodic":
        raise UsageError(f"episode in {where} is only for episodic memories")
    if episode_index is not None and episode is None:
        raise UsageError(f"{where} has episode_index but no episode")
    entity_ids = line.entity_ids or ()
    if not all(plausible_id(e) for e in entity_ids):
        raise UsageError(f"entity_ids in {where} must be a list of entity ids")
    given = line.valid_from_given
    if given is None and checks.dump_format >= GIVEN_SAID:
        given = False
    if given is None:
        assert valid.t_valid is not None  # checked above: a dump line has t_valid
        given = created_at is None or given_by_time(
            valid.t_valid.timestamp(), created_at.timestamp()
        )
    return Restored(
        memory_id=line.id,
        valid=valid,
        predicate_normalized=_text(line.predicate_normalized, "predicate_normalized", where),
        version=version,
        t_invalid=t_invalid,
        superseded_by=superseded_by,
        last_validated=last_validated,
        last_accessed=last_accessed,
        access_count=access_count,
        expires_at=expires_at,
        multi_valued=multi_valued,
        episode=None if episode is None else EpisodeRef(episode, episode_index or 0),
        entity_ids=entity_ids,
        import_key=_text(line.import_key, "import_key", where),
        valid_from_given=given,
        created_at=created_at,
    )


def _text(value: str | None, key: str, where: str) -> str | None:
    """A decoded text value, refused when blank."""
    if value is not None and not value.strip():
        raise UsageError(f"{key} in {where} must be a non-empty string")
    return value


def _namespace(value: str, where: str) -> str:
    if not value.strip():
        raise UsageError(f"namespace in {where} must be a namespace name")
    return value


def _at_least(value: int | None, key: str, where: str, *, minimum: int) -> int | None:
    if value is not None and not minimum <= value < 2**63:
        raise UsageError(f"{key} in {where} must be an integer of at least {minimum}")
    return value


def _fraction(value: float | None, key: str, where: str) -> float:
    """A score: 1.0 when not given, else a number from 0 to 1."""
    score = 1.0 if value is None else value
    if not 0 <= score <= 1:
        raise UsageError(f"{key} in {where} must be a number from 0 to 1")
    return float(score)
