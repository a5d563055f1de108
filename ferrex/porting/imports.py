"""Importing files into a home: store requests, ``ferrex export jsonl`` dumps, the memory
server's graph, and Claude or ChatGPT exports; what ``ferrex import`` runs.

Each kind is read into what the writer takes and run through it (``Writer.store_many`` for
store requests, graph items and chat messages, :func:`~ferrex.porting.restore.restore_many`
for a dump), every line or item getting an outcome (``stored``, ``skipped``, ``invalid``,
``refused``, ``unavailable``, …) for the caller to report. Store lines are idempotent by
their place and text (:func:`import_key`), chat messages by their conversation's id and
their own (:mod:`ferrex.porting.chats`). The writer is the caller's, opened after the file
was read, so a file of the wrong shape is refused before anything is opened.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from itertools import groupby
from typing import Any, Final, cast

from ferrex.core.decide.restore import Item, Restored
from ferrex.errors import BackendUnavailable, FerrexError, Refused, UsageError
from ferrex.porting import chats
from ferrex.porting.dump_read import (
    THIS_LINE,
    MemoryChecks,
    is_dump_line,
    is_header,
    parse_dump_line,
    parse_header,
)
from ferrex.porting.memory_server import GraphItem, graph_items, is_graph_line
from ferrex.porting.restore import restore_many
from ferrex.rules.memory_input import MEMORY_TYPES, StoreRequest
from ferrex.rules.secrets import SecretsMode
from ferrex.write.writer import StoreResult, Writer

Progress = Callable[[int, int], None]
"""Told (done, total) as an import goes."""

_FIELDS = {
    "type": "type", "memory_type": "type", "content": "content", "subject": "subject",
    "predicate": "predicate", "object": "object", "object_": "object", "name": "name",
    "steps": "steps", "conditions": "conditions", "entities": "entities",
    "supersedes": "supersedes", "source": "source", "confidence": "confidence",
    "context": "context", "namespace": "namespace", "valid_from": "valid_from",
    "agent_id": "agent_id", "visibility": "visibility", "split_long": "split_long",
    "importance": "importance", "pinned": "pinned", "ttl": "ttl",
}  # fmt: skip
_LISTS = {"steps", "conditions", "entities"}


def store_request(raw: dict[str, Any], *, where: str) -> StoreRequest:
    """A StoreRequest from CLI options or one import line, with clear errors."""
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "multi_valued":
            continue
        name = _FIELDS.get(key)
        if name is None:
            raise UsageError(
                f"unknown field {key!r} in {where}",
                hint=f"known fields: {', '.join(sorted(set(_FIELDS.values())))}, multi_valued",
            )
        if name in _LISTS:
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise UsageError(f"{name} in {where} must be a list of strings")
            value = tuple(value)
        if name == "context" and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(f"context in {where} is not JSON: {exc}") from exc
        fields[name] = value
    try:
        return StoreRequest(**fields)
    except TypeError as exc:  # a value of the wrong kind for a dataclass field
        raise UsageError(f"a value of the wrong kind in {where}: {exc}") from exc


SAME_TEXT = 0.9999
"""Cosine similarity of a text's embedding with itself, up to rounding."""
IMPORT_SECRETS = ("redact", "skip", "allow")
_SECRETS_MODE: dict[str, SecretsMode] = {"redact": "redact", "skip": "refuse", "allow": "allow"}


def secrets_mode(writer: Writer, secrets: str | None) -> str:
    """Set the writer to ``secrets`` (one of :data:`IMPORT_SECRETS`; None: redact, unless
    ``store.secrets`` allows them), and say which it is."""
    secrets = secrets or ("allow" if writer.settings.secrets == "allow" else "redact")
    writer.settings = replace(writer.settings, secrets=_SECRETS_MODE[secrets])
    return secrets


def import_lines(
    writer: Writer,
    parsed: list[tuple[int, dict[str, Any]]],
    file_format: str,
    update: Progress,
    *,
    agent_id: str | None,
    unreadable: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The outcomes of a file of JSON lines of ``file_format`` (store, dump or
    memory-server; ``parsed`` and ``unreadable`` from :func:`json_lines`), one a line, in
    line order; a line refused for its secrets (under ``--secrets skip``) is skipped."""
    outcomes = list(unreadable)
    if file_format == "dump":
        outcomes += _import_dump(writer, parsed, update)
    elif file_format == "memory-server":
        outcomes += _import_graph(writer, parsed, update, agent_id=agent_id)
    else:
        outcomes += _import_requests(writer, parsed, update, agent_id=agent_id)
    outcomes.sort(key=lambda o: o["line"])
    for outcome in outcomes:
        if outcome.get("code") == "secret_refused":
            outcome["status"] = "skipped"
    return outcomes


def import_chats(
    writer: Writer,
    fmt: chats.ChatFormat,
    parsed: chats.ChatParse,
    update: Progress,
    *,
    agent_id: str | None,
) -> dict[str, Any]:
    """A Claude or ChatGPT export, parsed whole already (:func:`ferrex.porting.chats.parse`:
    a conversation of the wrong shape is left out, reported as invalid), stored in order, one
    memory per message or part. A message imported before is skipped, ``imported_before``;
    one imported before with another text is skipped too and reported,
    ``changed_since_import``. The summary's ``indexed`` is left None, for the caller."""
    requests = _as_importer(agent_id, [i.request for i in parsed.items])
    results = writer.store_many(requests, progress=update)
    skipped = dict(parsed.skipped)
    outcomes: list[dict[str, Any]] = []
    for number, (item, result) in enumerate(zip(parsed.items, results, strict=True), start=1):
        where = {"conversation_id": item.conversation, "message_id": item.message}
        outcome = _stored(number, result, **where, **({"part": item.part} if item.part else {}))
        outcome["item"] = outcome.pop("line")
        reason = None
        if isinstance(result, Refused) and result.details.get("changed"):
            reason = "changed_since_import"
        elif isinstance(result, Refused) and result.details.get("imported"):
            reason = "imported_before"
        elif isinstance(result, FerrexError) and result.code == "secret_refused":
            reason = "secret"
        if reason is not None:
            outcome["status"] = "skipped"
            outcome["reason"] = reason
            skipped[reason] = skipped.get(reason, 0) + 1
        outcomes.append(outcome)
    invalid = [
        {"conversation": bad.index,
         **({"conversation_id": bad.conversation} if bad.conversation else {}),
         "status": "invalid", **bad.error.as_dict()}
        for bad in parsed.invalid
    ]  # fmt: skip
    return {
        "format": fmt,
        "conversations": parsed.conversations,
        "messages": parsed.messages,
        "untimed": parsed.untimed,
        "counts": counted([*outcomes, *invalid]),
        "skipped": dict(sorted(skipped.items())),
        "invalid": invalid,
        "secrets": secrets_report(outcomes, key="item"),
        "indexed": None,
        "items": outcomes,
    }


def counted(outcomes: list[dict[str, Any]]) -> dict[str, int]:
    """How many outcomes have each status."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome["status"]] = counts.get(outcome["status"], 0) + 1
    return counts


def json_lines(text: str) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """The JSON objects of ``text``'s lines, numbered from 1 (blank lines skipped), and the
    outcome of each line that is not one."""
    parsed: list[tuple[int, dict[str, Any]]] = []
    outcomes: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            outcomes.append(_invalid(number, UsageError(f"not JSON: {exc}")))
            continue
        except RecursionError:
            outcomes.append(_invalid(number, UsageError(f"not JSON: {chats.TOO_DEEP}")))
            continue
        if not isinstance(raw, dict):
            outcomes.append(_invalid(number, UsageError("a line must be a JSON object")))
            continue
        parsed.append((number, raw))
    return parsed, outcomes


def secrets_report(outcomes: list[dict[str, Any]], key: str = "line") -> dict[str, Any]:
    """How many lines (or other items, named by ``key``) carried likely secrets, and of
    which kinds (redacted or skipped)."""
    kinds: dict[str, int] = {}
    lines = set()
    for o in outcomes:
        for found in [*o.get("redacted", ()), *o.get("secrets", ())]:
            kinds[found["kind"]] = kinds.get(found["kind"], 0) + 1
            lines.add(o[key])
    return {"lines": len(lines), "kinds": dict(sorted(kinds.items()))}


def detect(first: dict[str, Any]) -> str:
    if is_dump_line(first):
        return "dump"
    if is_graph_line(first):
        return "memory-server"
    return "store"


def check_format(parsed: list[tuple[int, dict[str, Any]]], file_format: str) -> None:
    """Refuse a dump read as store requests (``--format store``) before anything is written:
    its header and every memory would each be an unknown field's error."""
    if file_format == "store" and parsed and is_header(parsed[0][1]):
        raise UsageError(
            f"the file looks like a dump (`ferrex export jsonl`), not store requests: line "
            f"{parsed[0][0]} is a dump's header",
            hint="import it with --format dump (or without --format: auto tells them apart)",
        )


def _invalid(number: int, error: FerrexError, **extra: Any) -> dict[str, Any]:
    return {"line": number, **extra, "status": "invalid", **error.as_dict()}


def _import_requests(
    writer: Writer,
    parsed: list[tuple[int, dict[str, Any]]],
    update: Callable[[int, int], None],
    *,
    agent_id: str | None,
) -> list[dict[str, Any]]:
    """Store requests, one per line, decided in file order (runs of lines with the same
    multi_valued flag go to the writer together)."""
    outcomes: list[dict[str, Any]] = []
    requests: list[tuple[int, StoreRequest, bool]] = []
    for number, raw in parsed:
        try:
            request = store_request(raw, where=THIS_LINE)
        except UsageError as exc:
            outcomes.append(_invalid(number, exc))
            continue
        request = replace(request, import_key=import_key(number, raw))
        requests.append((number, request, bool(raw.get("multi_valued"))))
    before = len(outcomes)  # lines refused before the writer: done already
    for multi, run in groupby(requests, key=lambda item: item[2]):
        group = [(n, r) for n, r, _ in run]

        def overall(done: int, _total: int, before: int = before) -> None:
            update(before + done, len(parsed))  # one bar over every run of lines

        results = writer.store_many(
            _as_importer(agent_id, [r for _, r in group]), multi_valued=multi, progress=overall
        )
        before += len(group)
        for (number, _), result in zip(group, results, strict=True):
            outcome = _stored(number, result)
            if isinstance(result, Refused) and result.details.get("imported"):
                outcome["status"] = "skipped"
            outcomes.append(outcome)
    return outcomes


def _as_importer(agent_id: str | None, requests: list[StoreRequest]) -> list[StoreRequest]:
    """Lines that name no agent are stored as the importing process's (``--agent-id``,
    store.agent_id; none: the operator's, shared). The writer itself stamps no identity: a
    store carries its caller's, so a server never lends its own to another process's call."""
    if agent_id is None:
        return requests
    return [r if r.agent_id else replace(r, agent_id=agent_id) for r in requests]


def import_key(number: int, raw: dict[str, Any]) -> str:
    """A store line's place and text: its number and a hash of its JSON object written
    canonically (sorted keys, no spaces), so reformatting a line does not change it."""
    canonical = json.dumps(raw, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    return f"line {number} sha256:{digest}"


def _stored(number: int, result: StoreResult | FerrexError, **extra: Any) -> dict[str, Any]:
    if isinstance(result, FerrexError):
        status = "refused" if isinstance(result, Refused) else "invalid"
        if isinstance(result, BackendUnavailable):  # e.g. the embeddings server went away
            status = "unavailable"
        return {"line": number, **extra, "status": status, **result.as_dict()}
    return {"line": number, **extra, **result.as_dict()}


def _import_dump(
    writer: Writer, parsed: list[tuple[int, dict[str, Any]]], update: Callable[[int, int], None]
) -> list[dict[str, Any]]:
    """Restore a dump: ids and times kept; ids that exist are skipped. A dump of a format
    newer than this code reads is refused whole, before anything is written; its header
    line (none in a format 1 dump) gets no outcome of its own."""
    dump_format = 1
    if parsed and is_header(parsed[0][1]):
        dump_format = parse_header(parsed[0][1], f"line {parsed[0][0]}").format
        parsed = parsed[1:]
    model = writer.embedder.model()
    outcomes: list[dict[str, Any]] = []
    items: list[tuple[int, Item]] = []
    checks = MemoryChecks(
        writer.settings.limits, model.count_tokens, model.window, writer.settings.secrets,
        dump_format,
    )  # fmt: skip
    for number, raw in parsed:
        try:
            items.append((number, parse_dump_line(raw, THIS_LINE, checks)))
        except UsageError as exc:
            outcomes.append(_invalid(number, exc))
    results = restore_many(writer, [item for _, item in items], progress=update)
    kinds = {number: dump_line_kind(raw) for number, raw in parsed}
    for (number, item), result in zip(items, results, strict=True):
        redacted = item.valid.redacted if isinstance(item, Restored) else ()
        outcomes.append(
            {"line": number, "status": result.status, "id": result.id, "what": kinds[number],
             **({"position": result.position} if result.position is not None else {}),
             **({"redacted": [s.as_dict() for s in redacted]} if redacted else {})}
        )  # fmt: skip
    return outcomes


def dump_line_kind(raw: dict[str, Any]) -> str:
    """What a dump's line restores, as its summary counts it: ``memory`` (a line of one of
    the memory types), or the line's own type (``entity``, ``possible_conflict``...)."""
    kind = str(raw.get("type", ""))
    return "memory" if kind in MEMORY_TYPES else kind


def _known(result: StoreResult | FerrexError) -> bool:
    """A duplicate of a memory with the very same text: importing it again changes nothing.
    A near-duplicate stays refused, so that a relation the dedup rule took for another one
    (``alice knows bob`` / ``alice knows rob``) is shown, not silently dropped."""
    return (
        isinstance(result, Refused)
        and result.code == "duplicate"
        and float(result.details.get("similarity", 0.0)) >= SAME_TEXT
    )


def _import_graph(
    writer: Writer,
    parsed: list[tuple[int, dict[str, Any]]],
    update: Callable[[int, int], None],
    *,
    agent_id: str | None,
) -> list[dict[str, Any]]:
    """The memory server's graph: entity types and relations as facts, observations as
    episodic memories. A memory already known (a duplicate) is skipped, not refused."""
    outcomes: list[dict[str, Any]] = []
    items: list[GraphItem] = []
    for number, raw in parsed:
        try:
            items.extend(graph_items(raw, number))
        except UsageError as exc:
            outcomes.append(_invalid(number, exc))
    for multi in (False, True):
        group = [item for item in items if item.multi_valued is multi]
        results = writer.store_many(
            _as_importer(agent_id, [item.request for item in group]),
            multi_valued=multi,
            progress=update,
        )
        for item, result in zip(group, results, strict=True):
            outcome = _stored(item.line, result, item=item.what)
            if _known(result):
                outcome["status"] = "skipped"
            outcomes.append(outcome)
    return outcomes


def chat_export(text: str, file_format: str) -> tuple[chats.ChatFormat, Any] | None:
    """The format and parsed document of a Claude or ChatGPT export, or None for a file of
    JSON lines. Under auto, a file that is one JSON array or object is an export when its
    shape says which; a JSON array of another shape is refused (no JSON-lines file is one)."""
    if file_format in chats.FORMATS:
        return cast(chats.ChatFormat, file_format), chats.loads(text)
    if not text.lstrip().startswith(("[", "{")):
        return None
    if file_format != "auto":
        _refuse_an_export_as_lines(text, file_format)
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return None  # JSON lines (or not JSON at all): the line formats report each line
    except RecursionError as exc:  # its first value cannot be read: no format to tell
        raise UsageError(
            f"cannot tell the format of this file: its first JSON value is {chats.TOO_DEEP}",
            hint="pass the conversations.json of an export, or JSON lines",
        ) from exc
    fmt = chats.detect(doc)
    if fmt is not None:
        return fmt, doc
    if isinstance(doc, list):
        raise UsageError(
            "cannot tell the format of this JSON array (neither a Claude nor a ChatGPT "
            "export: no chat_messages or mapping in its first conversation)",
            hint="pass --format claude or --format chatgpt; JSON lines need one object a line",
        )
    return None


_EXPORTS: Final = {"claude": "Claude", "chatgpt": "ChatGPT"}


def _refuse_an_export_as_lines(text: str, file_format: str) -> None:
    """Refuse a Claude or ChatGPT export given a format of JSON lines (``--format dump``):
    one clear error, not one per line of its pretty-printed JSON."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return  # JSON lines (the first object ends before the file does), or not JSON
    fmt = chats.detect(doc)
    if fmt is not None:
        raise UsageError(
            f"the file looks like a {_EXPORTS[fmt]} export (its conversations), not "
            f"{file_format} lines",
            hint=f"import it with --format {fmt} (or without --format: auto tells them apart)",
        )
