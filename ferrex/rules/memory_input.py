"""The store request and its validation: reject bad input before anything is written.

:func:`validate` turns a :class:`StoreRequest` (as an adapter parsed it from MCP arguments,
CLI options or an import line) into a :class:`ValidStore`, or raises :class:`UsageError`
(code ``invalid_input``) whose message names the field and what is wrong with it, and whose
hint says what to do. It reads no clock, no store and no model: the one model-dependent check
(an episodic memory must fit the embedding model's window) takes the token counter and the
window as parameters.

Rules, and why:

- **Type.** An explicit type (``episodic``, ``semantic``, ``procedural``; case-insensitive)
  wins; otherwise :func:`detect_type` infers it from the fields given. A field that belongs to
  another type is an error, never silently dropped: ``steps`` on a semantic fact would
  otherwise vanish without the agent knowing.
- **Text.** Strings are stripped; an empty or whitespace-only string is an error, not
  "absent" (an agent that sent ``source: ""`` meant something). ``\\r\\n`` and lone ``\\r``
  become ``\\n``. Control characters other than newline and tab are rejected; in one-line
  fields (entity names, predicate, procedure name, namespace, agent id, supersedes) newline
  and tab are rejected too. Lengths count characters after stripping.
- **Time.** ``valid_from`` is a timezone-aware datetime or an ISO 8601 string with an offset
  (``2024-05-01T09:00:00Z``, ``...+02:00``). A naive time is *rejected*, not read as UTC:
  agents run in every timezone, and a silent guess would shift a fact by hours with nobody
  noticing; the error costs one retry. The result is converted to UTC.
- **Context** is a JSON object (string keys all the way down, finite numbers), at most
  ``max_context_bytes`` as compact UTF-8 JSON. It is structured data that is escaped wherever
  it is shown, so its strings are not checked for control characters.
- **Entities** are deduplicated case-insensitively, keeping the first spelling.
- **Marks** (:mod:`ferrex.rules.lifecycle`): ``importance`` a finite number from 0 to 1,
  ``pinned`` a boolean, ``ttl`` whole seconds or ``\\d+[smhd]`` up to a year; pinned with
  a ttl is refused (a kept memory does not expire).
- **Window.** An episodic memory is one event, embedded as one vector: content longer than
  the model's window is rejected ("break it into separate events"), never cut short. A
  request with ``split_long`` keeps a long text (an article, an abstract, a transcript) as
  *one* memory instead: the vector projection embeds it in parts that each fit the window
  (split on sentence boundaries, one vector per part, the memory found by its best part) and
  indexes the whole text for BM25, so nothing is truncated. Semantic facts are short, and a
  procedure is embedded in parts on step boundaries downstream, so neither is window-checked.
- **Secrets** (:mod:`ferrex.rules.secrets`), last, over every text field an agent sends
  (content, subject, predicate, object, name, steps, conditions, entities, source, namespace,
  and the keys and strings of context): under ``refuse`` (the default) a likely secret is an
  error coded ``secret_refused`` naming each one's kind, field and character position, never
  its text (a context key that carries one is shown redacted in the field's path); under
  ``redact`` each is replaced by ``[redacted:KIND]`` (an entity name carrying one is
  dropped) and :attr:`ValidStore.redacted` says where, for the answer to tell; ``allow``
  keeps the text as sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, TypedDict, assert_never, cast, get_args

from ferrex.errors import SecretRefused
from ferrex.rules.lifecycle import (
    DEFAULT_IMPORTANCE,
    check_importance,
    check_marks,
    check_pinned,
    parse_ttl,
)
from ferrex.rules.predicates import predicate_shape
from ferrex.rules.secret_fold import Finding
from ferrex.rules.secrets import (
    SECRETS_MODES,
    SecretsMode,
    find_in_named_value,
    find_secrets,
    redact,
)
from ferrex.rules.store_fields import (
    checked_confidence,
    checked_context,
    checked_list,
    checked_supersedes,
    checked_text,
    checked_texts,
    input_error,
    parse_time,
    quoted,
)
from journal.events import MemoryType, Visibility

MEMORY_TYPES: Final = cast(tuple[MemoryType, ...], get_args(MemoryType))
"""The catalogue's own list, so a store, an import line and a dump line accept the same types."""
VISIBILITIES: Final = cast(tuple[Visibility, ...], get_args(Visibility))

_TRIPLE: Final = ("subject", "predicate", "object")
_PROCEDURE: Final = ("name", "steps", "conditions")


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits of a store request, in characters unless the name says otherwise."""

    content_chars: int = 8000
    field_chars: int = 500
    step_chars: int = 2000
    max_steps: int = 100
    max_conditions: int = 32
    max_entities: int = 32
    max_context_bytes: int = 16384
    source_chars: int = 500
    namespace_chars: int = 128
    agent_id_chars: int = 128


@dataclass(frozen=True, slots=True)
class StoreRequest:
    """A store request as an adapter received it: nothing checked yet."""

    type: str | None = None
    content: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    confidence: float = 1.0
    source: str | None = None
    entities: tuple[str, ...] = ()
    context: dict[str, Any] | None = None
    supersedes: str | None = None
    namespace: str | None = None
    valid_from: datetime | str | None = None
    name: str | None = None
    conditions: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    agent_id: str | None = None
    visibility: str | None = None
    split_long: bool = False
    """Store an episodic text longer than the model's window whole, embedded in parts,
    instead of refusing it (see the module docstring)."""
    importance: float = DEFAULT_IMPORTANCE
    pinned: bool = False
    ttl: int | str | None = None
    """Lifecycle marks (:mod:`ferrex.rules.lifecycle`): a ttl in seconds or ``\\d+[smhd]``."""
    import_key: str | None = None
    """Set by ``ferrex import`` (never by a tool call): the place and text of the line, which
    makes the import idempotent (see ``journal.events.MemoryBody.import_key``)."""
    former_import_keys: tuple[str, ...] = ()
    """Forms of ``import_key`` an older ferrex wrote for the same item, checked, never
    stored: a memory stored under one with the same ``context`` is this item, imported
    before (``decide._refuse_imported``)."""


@dataclass(frozen=True, slots=True)
class ValidStore:
    """A checked, cleaned store request.

    ``t_valid`` is timezone-aware UTC, or None for "now" (the caller takes the time from the
    record). ``namespace`` and ``visibility`` are None when not given; the caller applies its
    defaults. ``context`` is a fresh plain-JSON copy (lists, never tuples).
    """

    type: MemoryType
    content: str | None
    subject: str | None
    predicate: str | None
    object: str | None
    confidence: float
    source: str | None
    entities: tuple[str, ...]
    context: dict[str, Any] | None
    supersedes: str | None
    namespace: str | None
    t_valid: datetime | None
    name: str | None
    conditions: tuple[str, ...]
    steps: tuple[str, ...]
    agent_id: str | None
    visibility: Visibility | None
    importance: float = DEFAULT_IMPORTANCE
    pinned: bool = False
    ttl_seconds: int | None = None
    """How long after the store it expires (None: never)."""
    redacted: tuple[SecretFound, ...] = ()
    """The likely secrets replaced by markers (``store.secrets = "redact"``)."""
    import_key: str | None = None
    former_import_keys: tuple[str, ...] = ()

    @property
    def marked(self) -> bool:
        """Whether any lifecycle mark differs from the default."""
        return self.importance != DEFAULT_IMPORTANCE or self.pinned or self.ttl_seconds is not None


class Redaction(TypedDict):
    """A secret redacted from a stored field, as the store's answer names it."""

    field: str
    kind: str
    at: int


@dataclass(frozen=True, slots=True)
class SecretFound:
    """A likely secret in a store request: the field, its kind and its character position
    in the field's cleaned text (never the secret itself)."""

    field: str
    kind: str
    at: int

    def as_dict(self) -> Redaction:
        return {"field": self.field, "kind": self.kind, "at": self.at}

    def describe(self) -> str:
        return f"a likely {self.kind} in {self.field} at character {self.at}"


def detect_type(req: StoreRequest) -> MemoryType:
    """The memory type ``req`` asks for.

    An explicit valid type wins. Otherwise: a full triple → semantic; any of name, steps or
    conditions → procedural; part of a triple → semantic (so the error names what is missing
    from it, rather than the triple being ignored); otherwise episodic.
    """
    explicit = req.type.strip().lower() if isinstance(req.type, str) else None
    if explicit in MEMORY_TYPES:
        return explicit
    triple = [_given(getattr(req, field)) for field in _TRIPLE]
    if all(triple):
        return "semantic"
    if any(_given(getattr(req, field)) for field in _PROCEDURE):
        return "procedural"
    if any(triple):
        return "semantic"
    return "episodic"


DEFAULT_LIMITS: Final = Limits()


IMPORT_KEY_CHARS = 500
"""The longest import key: a store line's is about 40 characters; a chat message's holds
two ids of at most 100 characters each, JSON-quoted (``porting.chats.import_key``)."""


def validate(
    req: StoreRequest,
    limits: Limits = DEFAULT_LIMITS,
    *,
    count_tokens: Callable[[str], int | None] | None = None,
    window: int | None = None,
    secrets: SecretsMode = "refuse",
) -> ValidStore:
    """Check and clean ``req`` (rules in the module docstring); raise UsageError if it is bad.

    ``count_tokens(content)`` and ``window`` (both optional) bound an episodic memory's
    content by the embedding model's window; a count of None means "unknown", not checked.
    ``secrets`` is what a likely secret in the text does (``store.secrets``).
    """
    if req.type is not None and (
        not isinstance(req.type, str) or req.type.strip().lower() not in MEMORY_TYPES
    ):
        raise input_error(
            f"type {quoted(req.type)} is not a memory type",
            "use episodic, semantic or procedural, or leave type out to have it inferred",
        )
    memory_type = detect_type(req)
    _check_fields_belong(req, memory_type)

    content = checked_text("content", req.content, limits.content_chars)
    subject = checked_text("subject", req.subject, limits.field_chars)
    predicate = checked_text("predicate", req.predicate, limits.field_chars, one_line=True)
    object_ = checked_text("object", req.object, limits.field_chars)
    name = checked_text("name", req.name, limits.field_chars, one_line=True)
    conditions = checked_texts(
        "conditions", req.conditions, limits.field_chars, limits.max_conditions
    )
    steps = checked_texts("steps", req.steps, limits.step_chars, limits.max_steps)
    _check_required(memory_type, content, subject, predicate, object_, name, steps)
    if predicate is not None and not predicate_shape(predicate):
        raise input_error(
            f"predicate {quoted(predicate)} has no letters or digits",
            "name the relation in words, for example 'depends on' or 'version'",
        )
    if not isinstance(req.split_long, bool):
        raise input_error(
            f"split_long must be true or false, got {type(req.split_long).__name__}",
            "pass split_long: true to keep a long text as one memory embedded in parts",
        )
    if memory_type == "episodic" and content is not None and not req.split_long:
        _check_window(content, count_tokens, window)
    importance = check_importance(req.importance)
    pinned = check_pinned(req.pinned)
    ttl_seconds = parse_ttl(req.ttl)
    check_marks(pinned, ttl_seconds)

    valid = ValidStore(
        type=memory_type,
        content=content,
        subject=subject,
        predicate=predicate,
        object=object_,
        confidence=checked_confidence(req.confidence),
        source=checked_text("source", req.source, limits.source_chars),
        entities=_entities(req.entities, limits),
        context=checked_context(req.context, limits.max_context_bytes),
        supersedes=checked_supersedes(req.supersedes),
        namespace=checked_text("namespace", req.namespace, limits.namespace_chars, one_line=True),
        t_valid=parse_time(req.valid_from),
        name=name,
        conditions=conditions,
        steps=steps,
        agent_id=checked_text("agent_id", req.agent_id, limits.agent_id_chars, one_line=True),
        visibility=_visibility(req.visibility),
        importance=importance,
        pinned=pinned,
        ttl_seconds=ttl_seconds,
        import_key=checked_text("import_key", req.import_key, IMPORT_KEY_CHARS, one_line=True),
        former_import_keys=tuple(
            cast(str, checked_text("former_import_keys", key, IMPORT_KEY_CHARS, one_line=True))
            for key in req.former_import_keys
        ),
    )
    return screen_secrets(valid, secrets)


def secrets_in(valid: ValidStore) -> list[SecretFound]:
    """Every likely secret in ``valid``'s text fields, field by field, in order."""
    return [
        SecretFound(field, f.kind, f.start)
        for field, _, findings in _scanned(valid)
        for f in findings
    ]


def screen_secrets(valid: ValidStore, mode: SecretsMode) -> ValidStore:
    """``valid`` as ``mode`` has it: unchanged (``allow``, or no likely secret), refused
    (``refuse``: UsageError ``secret_refused``) or with each secret replaced (``redact``)."""
    if mode not in SECRETS_MODES:
        raise ValueError(f"store.secrets mode {mode!r}")
    if mode == "allow":
        return valid
    scanned = [item for item in _scanned(valid) if item[2]]
    if not scanned:
        return valid
    found = tuple(SecretFound(field, f.kind, f.start) for field, _, fs in scanned for f in fs)
    if mode == "refuse":
        listed = "; ".join(s.describe() for s in found)
        raise SecretRefused(
            f"not stored: the text carries {listed}; secrets are kept out of memory",
            hint="leave the secret out and say where it is kept instead (a vault path, the name "
            'of an environment variable); the operator can set store.secrets = "redact" to '
            "store such text with each secret replaced by a marker",
            details={"secrets": [s.as_dict() for s in found]},
        )
    cleaned = {field: redact(text, findings) for field, text, findings in scanned}

    def one(field: str, value: str | None) -> str | None:
        return cleaned.get(field, value)

    def many(field: str, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(cleaned.get(f"{field}[{i}]", v) for i, v in enumerate(values))

    # An entity named by a secret is dropped, not renamed: a "[redacted:…]" entity would
    # link every memory that had one.
    entities = tuple(e for i, e in enumerate(valid.entities) if f"entities[{i}]" not in cleaned)
    return replace(
        valid,
        content=one("content", valid.content),
        subject=one("subject", valid.subject),
        predicate=one("predicate", valid.predicate),
        object=one("object", valid.object),
        name=one("name", valid.name),
        source=one("source", valid.source),
        conditions=many("conditions", valid.conditions),
        steps=many("steps", valid.steps),
        namespace=one("namespace", valid.namespace),
        entities=entities,
        context=_redacted_context("context", valid.context, cleaned),
        redacted=found,
    )


_TEXT_FIELDS: Final = ("content", "subject", "predicate", "object", "name", "source", "namespace")


def _scanned(valid: ValidStore) -> list[tuple[str, str, list[Finding]]]:
    """(field, text, findings) for every text field of ``valid``."""
    texts: list[tuple[str, str, str | None]] = []
    for field in _TEXT_FIELDS:
        value = getattr(valid, field)
        if value is not None:
            # A fact's object is the value of its predicate ("password": "…").
            texts.append((field, value, valid.predicate if field == "object" else None))
    for field in ("conditions", "steps", "entities"):
        texts.extend((f"{field}[{i}]", v, None) for i, v in enumerate(getattr(valid, field)))
    if valid.context is not None:
        texts.extend(_context_strings("context", valid.context, None))
    return [
        (field, text, find_secrets(text) if name is None else find_in_named_value(name, text))
        for field, text, name in texts
    ]


def _context_strings(
    path: str, value: object, name: str | None
) -> list[tuple[str, str, str | None]]:
    """(path, string, the key it is the value of) for every string in a context value, and
    for every key (path ``….KEY (key)``, scanned as text: an agent may key by a token). A
    key that carries a secret is shown redacted in every path (:func:`_shown_keys`)."""
    if isinstance(value, str):
        return [(path, value, name)]
    if isinstance(value, dict):
        items: list[tuple[str, str, str | None]] = []
        for key, shown, inner in _shown_keys(value):
            items.append((f"{path}.{shown} (key)", key, None))
            items.extend(_context_strings(f"{path}.{shown}", inner, key))
        return items
    if isinstance(value, list):
        return [
            item
            for i, inner in enumerate(value)
            for item in _context_strings(f"{path}[{i}]", inner, name)
        ]
    return []


def _shown_keys(value: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(key, the key as paths show it, value) for each item: a key that carries a likely
    secret is shown redacted, and numbered when two redacted keys would read alike, so that
    a redacted context keeps every item."""
    shown: list[tuple[str, str, Any]] = []
    taken: set[str] = set()
    for key, inner in value.items():
        found = find_secrets(key)
        label = redact(key, found) if found else key
        if found:
            n = 1
            while label in taken or (label != key and label in value):
                n += 1
                label = f"{redact(key, found)} {n}"
        taken.add(label)
        shown.append((key, label, inner))
    return shown


def _redacted_context(path: str, value: Any, cleaned: dict[str, str]) -> Any:
    if isinstance(value, str):
        return cleaned.get(path, value)
    if isinstance(value, dict):
        return {
            shown: _redacted_context(f"{path}.{shown}", inner, cleaned)
            for _, shown, inner in _shown_keys(value)
        }
    if isinstance(value, list):
        return [_redacted_context(f"{path}[{i}]", v, cleaned) for i, v in enumerate(value)]
    return value


def _check_fields_belong(req: StoreRequest, memory_type: MemoryType) -> None:
    owners: tuple[tuple[MemoryType, tuple[str, ...]], ...] = (
        ("semantic", _TRIPLE),
        ("procedural", _PROCEDURE),
    )
    for owner, fields in owners:
        if owner == memory_type:
            continue
        given = [field for field in fields if _given(getattr(req, field))]
        if given:
            raise input_error(
                f"{_join(given)} {'is' if len(given) == 1 else 'are'} only for {owner} "
                f"memories, but this is {_article(memory_type)} {memory_type} memory",
                f"leave {_join(given, 'or')} out, or store it with type {owner}",
            )


def _check_required(
    memory_type: MemoryType,
    content: str | None,
    subject: str | None,
    predicate: str | None,
    object_: str | None,
    name: str | None,
    steps: tuple[str, ...],
) -> None:
    match memory_type:
        case "semantic":
            values = {"subject": subject, "predicate": predicate, "object": object_}
            missing = [field for field, value in values.items() if value is None]
            needs = "subject, predicate and object"
            hint = (
                "give all three, for example subject 'api', predicate 'depends on', "
                "object 'tokio'; or store free text as an episodic memory with content"
            )
        case "procedural":
            missing = [
                field for field, absent in (("name", name is None), ("steps", not steps)) if absent
            ]
            needs = "a name and at least one step"
            hint = "give the procedure a name and its steps, in order"
        case "episodic":
            missing = ["content"] if content is None else []
            needs = "content"
            hint = "give the event's text as content"
        case _:
            assert_never(memory_type)
    if missing:
        raise input_error(
            f"{_article(memory_type)} {memory_type} memory needs {needs}; "
            f"missing: {_join(missing)}",
            hint,
        )


def _check_window(
    content: str, count_tokens: Callable[[str], int | None] | None, window: int | None
) -> None:
    if count_tokens is None or window is None:
        return
    tokens = count_tokens(content)
    if tokens is not None and tokens > window:
        raise input_error(
            f"content is {tokens} tokens, longer than the model's window of {window}; "
            "break it into separate events",
            "split it into several memories, one event each, so none is cut short when embedded;"
            " or pass split_long to keep one long text whole, embedded in parts",
        )


def _entities(values: object, limits: Limits) -> tuple[str, ...]:
    items = checked_list("entities", values)
    kept: dict[str, str] = {}
    for i, item in enumerate(items):
        name = cast(str, checked_text(f"entities[{i}]", item, limits.field_chars, one_line=True))
        kept.setdefault(name.casefold(), name)
    if len(kept) > limits.max_entities:
        raise input_error(
            f"entities has {len(kept)} distinct names, more than the limit of "
            f"{limits.max_entities}",
            "link only the entities the memory is about",
        )
    return tuple(kept.values())


def _visibility(value: object) -> Visibility | None:
    if value is None:
        return None
    cleaned = value.strip().lower() if isinstance(value, str) else None
    if cleaned not in VISIBILITIES:
        raise input_error(
            f"visibility {quoted(value)} is not private or shared",
            "use private (only this agent) or shared (every agent in the namespace)",
        )
    return cleaned


def _given(value: object) -> bool:
    # An empty list from an adapter means "none", like None.
    return value is not None and not (isinstance(value, list | tuple) and not value)


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _join(items: Sequence[str], conjunction: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"
