"""One journal record as one canonical JSON line, and the layout of an audit export.

A record renders to one line of JSON, in this key order::

    {"position": 7, "recorded_at": "2026-11-28T09:00:00.123456Z", "hash": "<64 hex>",
     "prev_hash": "<64 hex>", "events": [{...}, ...], "skipped": [...]}

Invariants, so that an export can be re-created and checked byte for byte:

- The same record always renders to the same bytes: event keys sorted (context objects
  too), times in RFC 3339 UTC, bytes as lowercase hex, no insignificant whitespace, text
  as UTF-8 (not escaped). Nothing comes from a clock or the environment.
- A redacted body (purged by ``journal compact``) renders as ``"body": {"redacted": true}``;
  the event's ``body_hash`` stays, so the line still says what was there.
- ``skipped`` lists the tags of events this ferrex could not decode (written by a newer one).

An export directory holds ``records/<first>-<last>.jsonl`` files of ``records_per_file``
consecutive positions each (the last one filling up), ``ferrex-export.json`` (the resume
state, :class:`ExportState`) and a ``README.md`` for whoever reads the repository.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, assert_never

import msgspec

from ferrex.errors import ExportInvalid
from journal import (
    EntitiesDiffer,
    EntitiesMerged,
    EntityAliasAdded,
    EntityCreated,
    EntitySplit,
    FactsDiffer,
    FactsPossiblyConflicting,
    MemoriesAccessed,
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoriesValidated,
    MemoryMarked,
    MemoryStored,
    MemorySuperseded,
    Record,
)

FORMAT: Final = 1
RECORDS_DIR: Final = "records"
STATE_FILE: Final = "ferrex-export.json"
README_FILE: Final = "README.md"
RECORDS_PER_FILE: Final = 1000
_DIGITS: Final = 12

_encode = msgspec.json.Encoder().encode


def render(record: Record) -> bytes:
    """The canonical JSON line of ``record`` (without the newline). Needs ``record.hash``."""
    if record.hash is None:
        raise ValueError("render needs the record's hash: read the journal with hashes=True")
    events: list[dict[str, Any]] = []
    for event in record.events:
        view: dict[str, Any] = msgspec.to_builtins(event, builtin_types=(bytes,), order="sorted")
        if isinstance(event, MemoryStored) and event.body_hash is not None:
            view["body_hash"] = event.body_hash.hex()
            if event.body is None:
                view["body"] = {"redacted": True}
                view = dict(sorted(view.items()))
        events.append(view)
    line: dict[str, Any] = {
        "position": record.position,
        "recorded_at": msgspec.to_builtins(record.recorded_at),
        "hash": record.hash.hex(),
        "prev_hash": record.prev_hash.hex(),
        "events": events,
    }
    if record.skipped:
        line["skipped"] = list(record.skipped)
    return _encode(line)


def file_for(position: int, per_file: int = RECORDS_PER_FILE) -> str:
    """The path, inside an export, of the file that holds ``position``."""
    first = (position - 1) // per_file * per_file + 1
    return f"{RECORDS_DIR}/{first:0{_DIGITS}d}-{first + per_file - 1:0{_DIGITS}d}.jsonl"


def file_range(path: str) -> tuple[int, int] | None:
    """The (first, last) positions a records file name promises, or None if not one."""
    prefix = RECORDS_DIR + "/"
    if not (path.startswith(prefix) and path.endswith(".jsonl")):
        return None
    first, sep, last = path[len(prefix) : -len(".jsonl")].partition("-")
    if not (sep and first.isdigit() and last.isdigit()):
        return None
    return int(first), int(last)


class ExportState(msgspec.Struct, frozen=True, kw_only=True):
    """``ferrex-export.json``: which journal was exported, and how far (the resume point)."""

    format: int
    journal_first_position: int
    journal_first_hash: str
    """Names the journal: the hash of its first record. Another journal cannot resume here."""
    records_per_file: int
    position: int
    hash: str
    recorded_at: str

    def encode(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    @classmethod
    def decode(cls, data: bytes, where: str) -> ExportState:
        try:
            state = msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as exc:
            raise ExportInvalid(
                f"{where} is not a ferrex export state file: {exc}",
                hint="was it edited? `ferrex export git --rewrite` regenerates the export",
            ) from exc
        if state.format != FORMAT or state.records_per_file < 1 or state.position < 1:
            raise ExportInvalid(
                f"{where}: export format {state.format} is not one this ferrex writes ({FORMAT})",
                hint="export into a new directory, or regenerate it with --rewrite",
            )
        return state


@dataclass
class Summary:
    """What a batch of records changed: counts for the commit message and the CLI."""

    first: int = 0
    last: int = 0
    records: int = 0
    first_time: str = ""
    stored: int = 0
    superseded: int = 0
    forgotten: int = 0
    validated: int = 0
    accessed: int = 0
    entities: int = 0
    aliases: int = 0
    redacted: int = 0
    skipped: int = 0
    folded: int = 0
    """Memories folded into consolidation summaries (each superseded by its summary)."""
    summaries: int = 0
    unfolded: int = 0
    """Memories a consolidation undone gave back."""
    files: list[str] = field(default_factory=list)
    last_record: Record | None = None

    def add(self, record: Record) -> None:
        if not self.records:
            self.first = record.position
            self.first_time = str(msgspec.to_builtins(record.recorded_at))
        self.records += 1
        self.last = record.position
        self.last_record = record
        self.skipped += len(record.skipped)
        for event in record.events:
            match event:
                case MemoryStored():
                    self.stored += 1
                    self.redacted += event.redacted
                case MemorySuperseded():
                    self.superseded += 1
                case MemoriesForgotten():
                    self.forgotten += len(event.memory_ids)
                case MemoriesValidated():
                    self.validated += len(event.memory_ids)
                case MemoriesAccessed():
                    self.accessed += len(event.accesses)
                case EntityCreated():
                    self.entities += 1
                case EntityAliasAdded():
                    self.aliases += 1
                case MemoriesConsolidated():
                    self.folded += len(event.memory_ids)
                    self.summaries += 1
                case MemoriesUnfolded():
                    self.unfolded += len(event.memory_ids)
                case (
                    MemoryMarked()
                    | FactsPossiblyConflicting()
                    | EntitiesMerged()
                    | EntitySplit()
                    | EntitiesDiffer()
                    | FactsDiffer()
                ):
                    pass  # not among the counts the audit export reports
                case _:
                    assert_never(event)

    def merge(self, batch: Summary) -> None:
        """Add a later batch's counts to these."""
        if not batch.records:
            return
        if not self.records:
            self.first, self.first_time = batch.first, batch.first_time
        self.last, self.last_record = batch.last, batch.last_record
        for name in _COUNTED:
            setattr(self, name, getattr(self, name) + getattr(batch, name))

    @property
    def last_time(self) -> str:
        record = self.last_record
        return "" if record is None else str(msgspec.to_builtins(record.recorded_at))

    def counts(self) -> dict[str, int]:
        return {
            "stored": self.stored,
            "superseded": self.superseded,
            "forgotten": self.forgotten,
            "validated": self.validated,
            "accessed": self.accessed,
            "entities_created": self.entities,
            "aliases_added": self.aliases,
            "redacted_bodies": self.redacted,
            "unknown_events": self.skipped,
            "folded": self.folded,
            "summaries": self.summaries,
            "unfolded": self.unfolded,
        }

    def folds(self) -> str:
        """The consolidations among the counts ("31 folded into 4 summaries, 3 unfolded"),
        or nothing when there were none (a message without them reads as it always did)."""
        parts = []
        if self.folded:
            into = "summary" if self.summaries == 1 else "summaries"
            parts.append(f"{self.folded} folded into {self.summaries} {into}")
        if self.unfolded:
            parts.append(f"{self.unfolded} unfolded")
        return ", ".join(parts)

    def message(self, journal_first_hash: str, head_hash: str) -> str:
        """A commit message: a subject line, the counts, and machine-readable trailers."""
        folds = self.folds()
        subject = (
            f"journal {self.first}..{self.last}: {self.stored} stored, "
            f"{self.superseded} superseded, {folds + ', ' if folds else ''}"
            f"{self.forgotten} forgotten, {self.validated} validated"
        )
        body = [
            f"Records:    {self.records} (positions {self.first}..{self.last})",
            f"Recorded:   {self.first_time} .. {self.last_time}",
            f"Stored:     {self.stored} memories ({self.redacted} with redacted text)",
            f"Superseded: {self.superseded} memories",
            *([f"Folded:     {folds}"] if folds else []),
            f"Forgotten:  {self.forgotten} memories",
            f"Validated:  {self.validated} memories",
            f"Accessed:   {self.accessed} memories",
            f"Entities:   {self.entities} created, {self.aliases} aliases added",
        ]
        if self.skipped:
            body.append(f"Unknown:    {self.skipped} events of types this ferrex cannot read")
        trailers = [
            f"Ferrex-Journal: {journal_first_hash}",
            f"Ferrex-Positions: {self.first}..{self.last}",
            f"Ferrex-Head: {head_hash}",
        ]
        return "\n".join([subject, "", *body, "", *trailers]) + "\n"


_COUNTED: Final = ("records", "stored", "superseded", "forgotten", "validated", "accessed",
                   "entities", "aliases", "redacted", "skipped", "folded", "summaries",
                   "unfolded")  # fmt: skip


def difference(exported: bytes, rendered: bytes) -> str | None:
    """Why an exported line differs from the journal's rendering of the same record, or
    None when they mean the same (bytes differ only in formatting)."""
    if exported == rendered:
        return None
    try:
        ours = json.loads(exported)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except UnicodeDecodeError:
        return "not UTF-8 text"
    where = _first_difference(ours, json.loads(rendered), "")
    return None if where is None else f"{where or 'the record'} differs from the journal"


def unredacted(exported: bytes, record: Record, rendered: bytes) -> bool:
    """True when the line is the journal's record except that it still carries text the
    journal has since purged (redacted bodies): stale, not tampered with."""
    redacted = [
        i for i, e in enumerate(record.events) if isinstance(e, MemoryStored) and e.redacted
    ]
    if not redacted:
        return False
    try:
        ours = json.loads(exported)
        events = ours["events"]
        for i in redacted:
            events[i]["body"] = {"redacted": True}
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    return _first_difference(ours, json.loads(rendered), "") is None


def _first_difference(a: object, b: object, path: str) -> str | None:
    if type(a) is not type(b):
        return path
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".")
            found = _first_difference(a[key], b[key], f"{path}.{key}")
            if found is not None:
                return found.lstrip(".")
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length)".lstrip(".")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found.lstrip(".")
        return None
    return None if a == b else path.lstrip(".")


README: Final = """\
# ferrex journal export

An audit copy of a ferrex event journal, written by `ferrex export git`. Do not edit it:
`ferrex journal verify --against DIR` compares it with the journal, record by record.

- `records/<first>-<last>.jsonl`: one journal record per line, in position order. Each
  line has the record's `position`, `recorded_at`, its chain `hash` and the `prev_hash`
  it links to, and its `events` with their memory text. A body purged by
  `ferrex journal compact` shows as `{"redacted": true}`; its `body_hash` remains.
- `ferrex-export.json`: which journal this is (the hash of its first record) and the last
  exported position and hash, where the next `ferrex export git` resumes.

Each commit adds one batch of records; its message counts what the batch changed and
its trailers name the positions. Commit ids are deterministic: the same journal exported
in the same batches gives the same ids.
"""
