"""Records: the framing, checksum and hash chain of one command's events.

A record is everything one command appended: it is written, fsynced and read as a unit.
The byte layout of one record (a *frame*), all integers little-endian::

    offset  size  field
    0       4     magic  b"FXRC"
    4       4     crc    CRC-32 (zlib) of bytes [8, 56 + H + B): everything after it
    8       4     H      length of the head (u32)
    12      4     B      length of the bodies (u32; 0 when no event has a body)
    16      8     position (u64), assigned by the journal, contiguous from 1
    24      32    prev_hash: the hash of the previous record (32 zero bytes before the first)
    56      H     head: msgpack array [recorded_at (timestamp), [event, ...]]
    56+H    B     bodies: msgpack array aligned with the events: nil, or [salt (16 bytes), body]

The record's hash is ``blake2b-256(position_u64 || prev_hash || head)``: the chain covers the
stored head bytes exactly (nothing is re-encoded to verify it). Memory text lives only in the
bodies. Each body enters the chain through ``body_hash = blake2b-256(body bytes)`` inside its
event in the head; the random salt inside the body keeps a redacted text from being guessed
back from its hash. Redaction replaces a body with nil: the head, so the chain, is untouched.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import zlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, cast

import msgspec

from journal.errors import EncodeError
from journal.events import (
    EVENT_TYPES,
    KNOWN_TAGS,
    AnyEvent,
    Event,
    MemoryBody,
    MemoryStored,
    UtcTime,
)

log = logging.getLogger("journal")

MAGIC = b"FXRC"
FRAME = struct.Struct("<4sIIIQ32s")
FRAME_SIZE = FRAME.size  # 56
GENESIS_HASH = bytes(32)
HASH_SIZE = 32
SALT_SIZE = 16
MAX_PART = 64 * 1024 * 1024
"""Largest head or bodies part accepted; larger lengths are corruption, not data."""

_POSITION = struct.Struct("<Q")


class Record(msgspec.Struct, frozen=True, gc=False):
    """One command's events as read back from (or appended to) the journal."""

    position: int
    recorded_at: datetime
    prev_hash: bytes
    hash: bytes | None
    """This record's chain hash; None when read without ``hashes=True`` (it costs time)."""
    events: tuple[AnyEvent, ...]
    skipped: tuple[str, ...] = ()
    """Tags of events this version does not know (written by a newer ferrex), not decoded."""


class _Head(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: UtcTime
    events: tuple[AnyEvent, ...]


class _RawHead(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: UtcTime
    events: list[msgspec.Raw]


class _TagOnly(msgspec.Struct):
    event: str = ""


class _Envelope(msgspec.Struct, frozen=True, array_like=True):
    salt: bytes
    body: MemoryBody


_encoder = msgspec.msgpack.Encoder()
_head_decoder = msgspec.msgpack.Decoder(_Head)
_raw_head_decoder = msgspec.msgpack.Decoder(_RawHead)
_event_decoder: msgspec.msgpack.Decoder[AnyEvent] = msgspec.msgpack.Decoder(AnyEvent)
_tag_decoder = msgspec.msgpack.Decoder(_TagOnly)
_bodies_decoder = msgspec.msgpack.Decoder(list[_Envelope | None])
_raw_bodies_decoder = msgspec.msgpack.Decoder(list[msgspec.Raw])
_warned_tags: set[str] = set()


def digest(data: bytes | memoryview) -> bytes:
    return hashlib.blake2b(data, digest_size=HASH_SIZE).digest()


def record_hash(position: int, prev_hash: bytes, head: bytes | memoryview) -> bytes:
    h = hashlib.blake2b(digest_size=HASH_SIZE)
    h.update(_POSITION.pack(position))
    h.update(prev_hash)
    h.update(head)
    return h.digest()


class _SaltPool:
    """Random salts drawn from the OS in blocks: one syscall per 256 bodies, not per body."""

    def __init__(self) -> None:
        self._buf = b""
        self._at = 0

    def __call__(self, n: int) -> bytes:
        if self._at + n > len(self._buf):
            self._buf, self._at = os.urandom(max(4096, n)), 0
        out = self._buf[self._at : self._at + n]
        self._at += n
        return out


_salts = _SaltPool()


def encode_record(
    position: int,
    recorded_at: datetime,
    prev_hash: bytes,
    events: Sequence[Event],
    *,
    salt: Callable[[int], bytes] = _salts,
) -> tuple[bytes, Record]:
    """Frame one command's events. Returns the bytes to write and the record they decode to.

    Raises EncodeError, before anything is written, for values the journal could not read
    back (a naive datetime, a non-event, a field of the wrong type).
    """
    if not events:
        raise EncodeError("a record needs at least one event")
    if position < 1 or len(prev_hash) != HASH_SIZE:
        raise EncodeError(f"bad position {position} or previous hash")
    if recorded_at.tzinfo is None:
        raise EncodeError("recorded_at must be timezone-aware")
    head_events: list[AnyEvent] = []
    stored_events: list[AnyEvent] = []
    envelopes: list[bytes | None] = []
    for event in events:
        if not isinstance(event, EVENT_TYPES):
            raise EncodeError(f"not a journal event: {type(event).__name__}")
        event = cast(AnyEvent, event)
        if isinstance(event, MemoryStored) and event.body is not None:
            blob = _encoder.encode(_Envelope(salt(SALT_SIZE), event.body))
            body_hash = digest(blob)
            head_events.append(msgspec.structs.replace(event, body=None, body_hash=body_hash))
            stored_events.append(msgspec.structs.replace(event, body_hash=body_hash))
            envelopes.append(blob)
        else:
            head_events.append(event)
            stored_events.append(event)
            envelopes.append(None)
    try:
        head = _encoder.encode(_Head(recorded_at, tuple(head_events)))
        # Decoding what we are about to write proves a reader can read it back; msgspec's
        # encoder alone would let a naive datetime through as a string.
        _head_decoder.decode(head)
    except (msgspec.ValidationError, msgspec.EncodeError, TypeError) as exc:
        raise EncodeError(f"event cannot be journaled: {exc}") from exc
    bodies = b""
    if any(blob is not None for blob in envelopes):
        bodies = _encode_bodies(envelopes)
    if len(head) > MAX_PART or len(bodies) > MAX_PART:
        raise EncodeError(f"record too large ({len(head) + len(bodies)} bytes)")
    frame = _frame(position, prev_hash, head, bodies)
    this_hash = record_hash(position, prev_hash, head)
    record = Record(position, recorded_at, prev_hash, this_hash, tuple(stored_events))
    return frame, record


_LENGTHS = struct.Struct("<IIQ32s")


def _frame(position: int, prev_hash: bytes, head: bytes, bodies: bytes) -> bytes:
    covered = _LENGTHS.pack(len(head), len(bodies), position, prev_hash) + head + bodies
    return MAGIC + struct.pack("<I", zlib.crc32(covered)) + covered


def _encode_bodies(envelopes: Sequence[bytes | None]) -> bytes:
    """A msgpack array whose items are the already-encoded envelopes (or nil)."""
    out = bytearray()
    n = len(envelopes)
    if n < 16:
        out.append(0x90 | n)
    elif n < 65536:
        out += b"\xdc" + struct.pack(">H", n)
    else:
        out += b"\xdd" + struct.pack(">I", n)
    for blob in envelopes:
        out += b"\xc0" if blob is None else blob
    return bytes(out)


class FrameInfo(msgspec.Struct, frozen=True):
    """Where a frame sits and what its fixed header says (no payload decoded)."""

    offset: int
    length: int
    position: int
    prev_hash: bytes
    head_len: int
    bodies_len: int


def check_frame(buf: bytes | memoryview, offset: int, end: int) -> FrameInfo | str:
    """Parse and checksum the frame at ``offset``; return its info or why it is not valid."""
    if end - offset < FRAME_SIZE:
        return "incomplete frame header"
    magic, crc, head_len, bodies_len, position, prev_hash = FRAME.unpack_from(buf, offset)
    if magic != MAGIC:
        return "bad frame magic"
    if head_len > MAX_PART or bodies_len > MAX_PART or head_len == 0:
        return "implausible frame length"
    length = FRAME_SIZE + head_len + bodies_len
    if end - offset < length:
        return "incomplete frame"
    if zlib.crc32(memoryview(buf)[offset + 8 : offset + length]) != crc:
        return "checksum mismatch"
    return FrameInfo(offset, length, position, prev_hash, head_len, bodies_len)


def head_bytes(buf: bytes | memoryview, info: FrameInfo) -> memoryview:
    start = info.offset + FRAME_SIZE
    return memoryview(buf)[start : start + info.head_len]


def bodies_bytes(buf: bytes | memoryview, info: FrameInfo) -> memoryview:
    start = info.offset + FRAME_SIZE + info.head_len
    return memoryview(buf)[start : start + info.bodies_len]


def decode_record(buf: bytes | memoryview, info: FrameInfo, *, hashes: bool = True) -> Record:
    """Decode a checked frame. Unknown event tags are skipped with a warning.

    Raises msgspec.DecodeError/ValidationError for a frame whose checksum is right but whose
    content this version cannot understand as a known event; callers report that as damage.
    """
    start = info.offset + FRAME_SIZE
    return _decode(
        memoryview(buf),
        start,
        start + info.head_len,
        info.bodies_len,
        info.position,
        info.prev_hash,
        hashes,
    )


def _decode(
    view: memoryview,
    head_start: int,
    head_end: int,
    bodies_len: int,
    position: int,
    prev_hash: bytes,
    hashes: bool,
) -> Record:
    head = view[head_start:head_end]
    skipped: tuple[str, ...] = ()
    try:
        parsed = _head_decoder.decode(head)
        recorded_at = parsed.recorded_at
        events: tuple[AnyEvent | None, ...] = parsed.events
    except msgspec.ValidationError:
        recorded_at, events, skipped = _decode_tolerant(head)
    if bodies_len:
        for event, env in zip(
            events, _bodies_decoder.decode(view[head_end : head_end + bodies_len]), strict=False
        ):
            if env is not None and type(event) is MemoryStored:
                msgspec.structs.force_setattr(event, "body", env.body)
    if skipped:
        events = tuple(e for e in events if e is not None)
    this_hash = record_hash(position, prev_hash, head) if hashes else None
    return Record(position, recorded_at, prev_hash, this_hash, events, skipped)  # type: ignore[arg-type]


class Decoded(msgspec.Struct):
    """What :func:`decode_frames` found in one buffer."""

    records: list[Record]
    end: int
    """Offset just after the last valid frame."""
    bad_offset: int | None = None
    reason: str | None = None


def decode_frames(
    buf: bytes,
    start: int,
    expected: int,
    *,
    after: int = 0,
    gaps: frozenset[int] = frozenset(),
    hashes: bool = False,
) -> Decoded:
    """Check and decode the frames from ``start`` with position > ``after``, in one pass.

    The read path: the same checks as ``check_frame`` and ``scan_frames``, inlined, because
    reading is what replays spend their time on. Stops at the first invalid frame.
    """
    view = memoryview(buf)
    end = len(buf)
    records: list[Record] = []
    offset = start
    unpack = FRAME.unpack_from
    crc32 = zlib.crc32
    head_decode = _head_decoder.decode
    bodies_decode = _bodies_decoder.decode
    setattr_ = msgspec.structs.force_setattr
    append = records.append
    reason: str | None = None
    while offset < end:
        if end - offset < FRAME_SIZE:
            reason = "incomplete frame header"
            break
        magic, crc, head_len, bodies_len, position, prev_hash = unpack(buf, offset)
        if magic != MAGIC or head_len == 0 or head_len > MAX_PART or bodies_len > MAX_PART:
            reason = "bad frame magic or length"
            break
        length = FRAME_SIZE + head_len + bodies_len
        if end - offset < length:
            reason = "incomplete frame"
            break
        if crc32(view[offset + 8 : offset + length]) != crc:
            reason = "checksum mismatch"
            break
        if position != expected and not (position in gaps and position > expected):
            reason = f"position {position} where {expected} was expected"
            break
        if position > after:
            # Inlined _decode: a function call per record is a measurable share of a replay.
            head_end = offset + FRAME_SIZE + head_len
            head = view[offset + FRAME_SIZE : head_end]
            try:
                parsed = head_decode(head)
                events: tuple[AnyEvent | None, ...] = parsed.events
                skipped: tuple[str, ...] = ()
                recorded_at = parsed.recorded_at
            except msgspec.ValidationError:
                recorded_at, events, skipped = _decode_tolerant(head)
            if bodies_len:
                envelopes = bodies_decode(view[head_end : head_end + bodies_len])
                for i in range(min(len(envelopes), len(events))):
                    env, event = envelopes[i], events[i]
                    if env is not None and type(event) is MemoryStored:
                        setattr_(event, "body", env.body)
            if skipped:
                events = tuple(e for e in events if e is not None)
            append(
                Record(
                    position,
                    recorded_at,
                    prev_hash,
                    record_hash(position, prev_hash, head) if hashes else None,
                    events,  # type: ignore[arg-type]
                    skipped,
                )
            )
        expected = position + 1
        offset += length
    return Decoded(records, offset, None if reason is None else offset, reason)


def _decode_tolerant(
    head: memoryview,
) -> tuple[datetime, tuple[AnyEvent | None, ...], tuple[str, ...]]:
    """Slow path: decode event by event, keeping a None slot for each unknown tag."""
    raw = _raw_head_decoder.decode(head)
    events: list[AnyEvent | None] = []
    skipped: list[str] = []
    for item in raw.events:
        tag = _tag_decoder.decode(item).event
        if tag not in KNOWN_TAGS:
            if tag not in _warned_tags:
                _warned_tags.add(tag)
                log.warning("skipping journal events of unknown type %r (newer ferrex?)", tag)
            skipped.append(tag)
            events.append(None)
            continue
        events.append(_event_decoder.decode(item))
    return raw.recorded_at, tuple(events), tuple(skipped)


def decode_recorded_at(buf: bytes | memoryview, info: FrameInfo) -> datetime:
    return _raw_head_decoder.decode(head_bytes(buf, info)).recorded_at


def body_problems(buf: bytes | memoryview, info: FrameInfo) -> list[str]:
    """Bodies whose bytes no longer match the ``body_hash`` their event carries."""
    if not info.bodies_len:
        return []
    raw_events = _raw_head_decoder.decode(head_bytes(buf, info)).events
    blobs = _raw_bodies_decoder.decode(bodies_bytes(buf, info))
    problems = []
    for i, blob in enumerate(blobs):
        if bytes(blob) == b"\xc0":
            continue
        expected = _body_hash_of(raw_events[i]) if i < len(raw_events) else None
        if expected is None or digest(bytes(blob)) != expected:
            problems.append(f"body of event {i} does not match its hash")
    return problems


class _BodyHashOnly(msgspec.Struct):
    body_hash: bytes | None = None


_body_hash_decoder = msgspec.msgpack.Decoder(_BodyHashOnly)


def _body_hash_of(raw_event: msgspec.Raw) -> bytes | None:
    return _body_hash_decoder.decode(raw_event).body_hash


def redact_frame(buf: bytes | memoryview, info: FrameInfo, memory_ids: set[str]) -> bytes | None:
    """The frame with the bodies of the given memories replaced by nil; None if unchanged.

    The head is copied byte for byte, so the record's hash and the chain are unchanged.
    """
    if not info.bodies_len:
        return None
    raw_events = _raw_head_decoder.decode(head_bytes(buf, info)).events
    blobs = [bytes(b) for b in _raw_bodies_decoder.decode(bodies_bytes(buf, info))]
    changed = False
    out: list[bytes | None] = []
    for i, blob in enumerate(blobs):
        keep: bytes | None = None if blob == b"\xc0" else blob
        if keep is not None and i < len(raw_events):
            mid = _memory_id_decoder.decode(raw_events[i]).memory_id
            if mid in memory_ids:
                keep = None
                changed = True
        out.append(keep)
    if not changed:
        return None
    bodies = _encode_bodies(out) if any(b is not None for b in out) else b""
    return _frame(info.position, info.prev_hash, bytes(head_bytes(buf, info)), bodies)


class _MemoryIdOnly(msgspec.Struct):
    memory_id: str = ""


_memory_id_decoder = msgspec.msgpack.Decoder(_MemoryIdOnly)


def to_builtins(record: Record) -> dict[str, Any]:
    """A JSON-ready view of a record (bytes as hex, times as ISO 8601)."""
    view: dict[str, Any] = {
        "position": record.position,
        "recorded_at": record.recorded_at.isoformat(),
        "hash": record.hash.hex() if record.hash is not None else None,
        "prev_hash": record.prev_hash.hex(),
        "events": [_hexify(msgspec.to_builtins(e, builtin_types=(bytes,))) for e in record.events],
    }
    if record.skipped:
        view["skipped"] = list(record.skipped)
    return view


def _hexify(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return obj.hex()
    if isinstance(obj, dict):
        return {k: _hexify(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hexify(v) for v in obj]
    return obj
