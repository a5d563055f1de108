"""Records: the framing, checksum and hash chain of one command's events.

A record is everything one command appended: it is written, fsynced and read as a unit.
The byte layout of one record (a *frame*), all integers little-endian::

    offset  size  field
    0       4     magic  b"FXRC"
    4       4     crc    CRC-32 (zlib) of bytes [8, 56 + N): everything after it
    8       4     H      length of the hashed prefix of the payload (u32)
    12      4     N      length of the payload (u32)
    16      8     position (u64), assigned by the journal, contiguous from 1
    24      32    prev_hash: the hash of the previous record (32 zero bytes before the first)
    56      N     payload: one msgpack array [recorded_at, [event, ...], bodies, version]

``recorded_at`` is a msgpack timestamp. ``bodies`` is nil when no event has a body, else an
array aligned with the events whose items are nil or ``[salt (16 bytes), body]``. The first
H bytes of the payload (the array header, the time and the events) are the record's *head*.

``version`` is the record's format version (:data:`FORMAT_VERSION` for what this code
writes). Records of format 1 have no fourth element: their payload is the three-element
array, and they read as version 1. Later formats keep the version as the fourth element and
add anything new after it, so every version can tell a record newer than itself; decoders
ignore trailing elements they do not know. The version sits after the bodies, outside the
head: the checksum covers it, the hash chain does not (a changed version alters no memory,
and a journal whose versions were raised only refuses writers).

The record's hash is ``blake2b-256(position_u64 || prev_hash || head)``: the chain covers the
stored head bytes exactly (nothing is re-encoded to verify it). Memory text lives only in the
bodies. Each body enters the chain through ``body_hash = blake2b-256(body bytes)`` inside its
event in the head; the random salt inside the body keeps a redacted text from being guessed
back from its hash. Redaction rewrites only the bodies: the head, so the chain, is untouched.
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

from journal.errors import EncodeError, JournalFormatError
from journal.events import (
    EVENT_TYPES,
    KNOWN_TAGS,
    AnyEvent,
    Event,
    MemoryBody,
    MemoryStored,
    UtcTime,
)
from journal.version import FORMAT_VERSION as FORMAT_VERSION  # record.FORMAT_VERSION too

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


_V1_ARRAY = 0x93  # msgpack fixarray of 3: a format 1 payload
_FIXARRAY = range(0x94, 0xA0)  # fixarrays of 4 to 15: a payload that carries its version


class _Envelope(msgspec.Struct, frozen=True, array_like=True, gc=False):
    salt: bytes
    body: MemoryBody


class Record(msgspec.Struct, frozen=True, array_like=True, gc=False, kw_only=True):
    """One command's events as read back from (or appended to) the journal.

    The first three fields mirror the payload array, so a payload decodes straight into a
    Record (the read path's hottest step); the rest come from the frame header.
    """

    recorded_at: UtcTime
    events: tuple[AnyEvent, ...]
    envelopes: tuple[_Envelope | None, ...] | None = None
    """Codec internal: the bodies as decoded, moved into their events and then cleared."""
    version: int = 1
    """The record's format version (1 for records written before versions were recorded)."""
    position: int = 0
    prev_hash: bytes = b""
    hash: bytes | None = None
    """This record's chain hash; None when read without ``hashes=True`` (it costs time)."""
    skipped: tuple[str, ...] = ()
    """Tags of events this version does not know (written by a newer ferrex), not decoded."""


class _Payload(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: UtcTime
    events: tuple[AnyEvent, ...]
    bodies: tuple[_Envelope | None, ...] | None = None
    version: int = 1


class _Head(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: UtcTime
    events: tuple[AnyEvent, ...]


class _RawPayload(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: UtcTime
    events: list[msgspec.Raw]
    bodies: list[msgspec.Raw] | None = None
    version: int = 1


class _VersionOnly(msgspec.Struct, frozen=True, array_like=True):
    recorded_at: msgspec.Raw
    events: msgspec.Raw
    bodies: msgspec.Raw
    version: int = 1


class _TagOnly(msgspec.Struct):
    event: str = ""


_encoder = msgspec.msgpack.Encoder()
_payload_decoder = msgspec.msgpack.Decoder(_Payload)
_record_decoder = msgspec.msgpack.Decoder(Record)
_raw_payload_decoder = msgspec.msgpack.Decoder(_RawPayload)
_event_decoder: msgspec.msgpack.Decoder[AnyEvent] = msgspec.msgpack.Decoder(AnyEvent)
_tag_decoder = msgspec.msgpack.Decoder(_TagOnly)
_version_decoder = msgspec.msgpack.Decoder(_VersionOnly)
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
    version = _encoder.encode(FORMAT_VERSION)
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
        # The head is the two-element array [time, events] relabelled as the first two of
        # the payload's four elements (a fixarray header is one byte either way).
        head = bytes([_FIXARRAY[0]]) + _encoder.encode(_Head(recorded_at, tuple(head_events)))[1:]
        # Decoding what we are about to write proves a reader can read it back; msgspec's
        # encoder alone would let a naive datetime through as a string.
        _payload_decoder.decode(head + b"\xc0" + version)
    except (msgspec.ValidationError, msgspec.EncodeError, TypeError) as exc:
        raise EncodeError(f"event cannot be journaled: {exc}") from exc
    bodies = _encode_bodies(envelopes) + version
    if len(head) + len(bodies) > MAX_PART:
        raise EncodeError(f"record too large ({len(head) + len(bodies)} bytes)")
    frame = _frame(position, prev_hash, head, bodies)
    this_hash = record_hash(position, prev_hash, head)
    record = Record(
        recorded_at=recorded_at,
        events=tuple(stored_events),
        version=FORMAT_VERSION,
        position=position,
        prev_hash=prev_hash,
        hash=this_hash,
    )
    return frame, record


_LENGTHS = struct.Struct("<IIQ32s")


def _frame(position: int, prev_hash: bytes, head: bytes, rest: bytes) -> bytes:
    """The frame of a payload: ``head`` and the ``rest`` (bodies, then version if any)."""
    payload_len = len(head) + len(rest)
    covered = _LENGTHS.pack(len(head), payload_len, position, prev_hash) + head + rest
    return MAGIC + struct.pack("<I", zlib.crc32(covered)) + covered


def _encode_bodies(envelopes: Sequence[bytes | None]) -> bytes:
    """nil when there is no body, else an array of the encoded envelopes (or nil)."""
    if all(blob is None for blob in envelopes):
        return b"\xc0"
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
    payload_len: int


def check_frame(buf: bytes | memoryview, offset: int, end: int) -> FrameInfo | str:
    """Parse and checksum the frame at ``offset``; return its info or why it is not valid."""
    if end - offset < FRAME_SIZE:
        return "incomplete frame header"
    magic, crc, head_len, payload_len, position, prev_hash = FRAME.unpack_from(buf, offset)
    if magic != MAGIC:
        return "bad frame magic"
    if payload_len > MAX_PART or head_len >= payload_len or head_len == 0:
        return "implausible frame length"
    length = FRAME_SIZE + payload_len
    if end - offset < length:
        return "incomplete frame"
    if zlib.crc32(memoryview(buf)[offset + 8 : offset + length]) != crc:
        return "checksum mismatch"
    return FrameInfo(offset, length, position, prev_hash, head_len, payload_len)


def continuing_frame(
    frame: bytes, position: int, prev_hash: bytes, *, where: str, head: int
) -> FrameInfo:
    """``frame``'s header, if it is one whole valid frame for ``position`` that continues the
    chain from ``prev_hash`` (copying records framed elsewhere); else the error that says
    why, naming the journal (``where``) and its head position."""
    info = check_frame(frame, 0, len(frame))
    if isinstance(info, str) or info.length != len(frame):
        raise JournalFormatError(f"the frame for position {position}: {info}")
    if info.position != position or info.prev_hash != prev_hash:
        raise JournalFormatError(
            f"the record at position {info.position} does not continue the journal "
            f"{where} (head {head})",
            hint="copy into an empty journal, or resume the copy that started it",
        )
    return info


def frame_version(buf: bytes | memoryview, info: FrameInfo) -> int | None:
    """The format version of a checked frame's record, without decoding its events; None
    when its payload has a layout no version of the format has (not an array of 3 or more).
    """
    start = info.offset + FRAME_SIZE
    kind = buf[start]
    if kind == _V1_ARRAY:
        return 1
    if kind not in _FIXARRAY:
        return None
    try:
        return _version_decoder.decode(_payload(buf, info)).version
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def head_bytes(buf: bytes | memoryview, info: FrameInfo) -> memoryview:
    start = info.offset + FRAME_SIZE
    return memoryview(buf)[start : start + info.head_len]


def _payload(buf: bytes | memoryview, info: FrameInfo) -> memoryview:
    start = info.offset + FRAME_SIZE
    return memoryview(buf)[start : start + info.payload_len]


def decode_record(buf: bytes | memoryview, info: FrameInfo, *, hashes: bool = True) -> Record:
    """Decode a checked frame. Unknown event tags are skipped with a warning.

    Raises msgspec.DecodeError/ValidationError for a frame whose checksum is right but whose
    content this version cannot understand as a known event; callers report that as damage.
    """
    decoded = decode_frames(
        bytes(_frame_bytes(buf, info)), 0, info.position, hashes=hashes, strict=True
    )
    return decoded.records[0]


def _frame_bytes(buf: bytes | memoryview, info: FrameInfo) -> memoryview:
    return memoryview(buf)[info.offset : info.offset + info.length]


def _attach(events: Sequence[AnyEvent | None], bodies: Sequence[_Envelope | None]) -> None:
    for i in range(min(len(events), len(bodies))):
        env, event = bodies[i], events[i]
        if env is not None and type(event) is MemoryStored:
            msgspec.structs.force_setattr(event, "body", env.body)


class Decoded(msgspec.Struct):
    """What :func:`decode_frames` found in one buffer."""

    records: list[Record]
    end: int
    """Offset just after the last valid frame."""
    bad_offset: int | None = None
    reason: str | None = None
    last: int | None = None
    """Offset of the last valid frame (None when there was none)."""
    last_position: int | None = None
    """Position of that frame."""


def decode_frames(
    buf: bytes,
    start: int,
    expected: int,
    *,
    after: int = 0,
    gaps: frozenset[int] = frozenset(),
    hashes: bool = False,
    strict: bool = False,
) -> Decoded:
    """Check and decode the frames from ``start`` with position > ``after``, in one pass.

    The read path: the same checks as ``check_frame`` and ``scan_frames``, inlined, because
    reading is what replays spend their time on. Stops at the first invalid frame
    (``strict``: raises ValueError instead).
    """
    view = memoryview(buf)
    end = len(buf)
    records: list[Record] = []
    offset = start
    unpack = FRAME.unpack_from
    crc32 = zlib.crc32
    decode = _record_decoder.decode
    set_field = msgspec.structs.force_setattr
    append = records.append
    reason: str | None = None
    last: int | None = None
    while offset < end:
        if end - offset < FRAME_SIZE:
            reason = "incomplete frame header"
            break
        magic, crc, head_len, payload_len, position, prev_hash = unpack(buf, offset)
        if magic != MAGIC or head_len == 0 or head_len >= payload_len or payload_len > MAX_PART:
            reason = "bad frame magic or length"
            break
        length = FRAME_SIZE + payload_len
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
            payload = view[offset + FRAME_SIZE : offset + length]
            try:
                record = decode(payload)
            except msgspec.ValidationError:
                record = _decode_tolerant(payload)
            set_field(record, "position", position)
            set_field(record, "prev_hash", prev_hash)
            envelopes = record.envelopes
            if envelopes is not None:
                events = record.events
                if len(envelopes) == 1 == len(events):
                    # One memory per record is the common case: no loop, no call.
                    env = envelopes[0]
                    if env is not None and type(events[0]) is MemoryStored:
                        set_field(events[0], "body", env.body)
                else:
                    _attach(events, envelopes)
                set_field(record, "envelopes", None)
            if hashes:
                set_field(record, "hash", record_hash(position, prev_hash, payload[:head_len]))
            append(record)
        expected = position + 1
        last = offset
        offset += length
    if strict and reason is not None:
        raise ValueError(reason)
    return Decoded(
        records, offset, None if reason is None else offset, reason, last,
        None if last is None else expected - 1,
    )  # fmt: skip


def _decode_tolerant(payload: memoryview) -> Record:
    """Slow path: decode event by event, skipping (with a warning) tags we do not know."""
    raw = _raw_payload_decoder.decode(payload)
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
    if raw.bodies is not None:
        _attach(events, [_envelope_decoder.decode(b) for b in raw.bodies])
    known = tuple(e for e in events if e is not None)
    return Record(
        recorded_at=raw.recorded_at, events=known, version=raw.version, skipped=tuple(skipped)
    )


def decode_recorded_at(buf: bytes | memoryview, info: FrameInfo) -> datetime:
    return _raw_payload_decoder.decode(_payload(buf, info)).recorded_at


def body_problems(buf: bytes | memoryview, info: FrameInfo) -> list[str]:
    """Bodies whose bytes no longer match the ``body_hash`` their event carries."""
    raw = _raw_payload_decoder.decode(_payload(buf, info))
    problems = []
    for i, blob in enumerate(raw.bodies or ()):
        if bytes(blob) == b"\xc0":
            continue
        expected = _body_hash_of(raw.events[i]) if i < len(raw.events) else None
        if expected is None or digest(bytes(blob)) != expected:
            problems.append(f"body of event {i} does not match its hash")
    return problems


class _BodyHashOnly(msgspec.Struct):
    body_hash: bytes | None = None


_body_hash_decoder = msgspec.msgpack.Decoder(_BodyHashOnly)
_envelope_decoder = msgspec.msgpack.Decoder(_Envelope | None)


def _body_hash_of(raw_event: msgspec.Raw) -> bytes | None:
    return _body_hash_decoder.decode(raw_event).body_hash


def redact_frame(buf: bytes | memoryview, info: FrameInfo, memory_ids: set[str]) -> bytes | None:
    """The frame with the bodies of the given memories replaced by nil; None if unchanged.

    The head is copied byte for byte, so the record's hash and the chain are unchanged.
    """
    if buf[info.offset + FRAME_SIZE] not in (_V1_ARRAY, _FIXARRAY[0]):
        # Rewriting the bodies of a newer layout would drop what follows its version.
        raise JournalFormatError(
            f"the record at position {info.position} has a newer format than this ferrex "
            "can rewrite",
            hint="redact it with the ferrex version that wrote it",
        )
    raw = _raw_payload_decoder.decode(_payload(buf, info))
    if raw.bodies is None:
        return None
    changed = False
    out: list[bytes | None] = []
    for i, blob in enumerate(raw.bodies):
        keep: bytes | None = None if bytes(blob) == b"\xc0" else bytes(blob)
        if (
            keep is not None
            and i < len(raw.events)
            and _memory_id_decoder.decode(raw.events[i]).memory_id in memory_ids
        ):
            keep = None
            changed = True
        out.append(keep)
    if not changed:
        return None
    head = bytes(head_bytes(buf, info))
    # A format 1 head announces three elements: no version follows its bodies.
    version = b"" if head[0] == _V1_ARRAY else _encoder.encode(raw.version)
    return _frame(info.position, info.prev_hash, head, _encode_bodies(out) + version)


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
