"""The record codec: round trips, validation, hashing, unknown events, redaction."""

from __future__ import annotations

import hashlib
import logging
import struct
import zlib
from datetime import datetime

import msgspec
import pytest
from hypothesis import given, settings

from journal import EncodeError, Event, MemoryBody, MemoryStored
from journal.record import (
    FRAME_SIZE,
    GENESIS_HASH,
    body_problems,
    check_frame,
    decode_record,
    encode_record,
    redact_frame,
)
from tests.strategies import T0, commands, stored


def roundtrip(events: list[Event], position: int = 1) -> tuple[bytes, object]:
    frame, record = encode_record(position, T0, GENESIS_HASH, events)
    info = check_frame(frame, 0, len(frame))
    assert not isinstance(info, str), info
    return frame, (record, decode_record(frame, info))


@settings(max_examples=300, deadline=None)
@given(commands)
def test_every_event_round_trips(events: list[Event]) -> None:
    _, (written, read) = roundtrip(events)
    assert read == written
    assert len(read.events) == len(events)
    for original, back in zip(events, read.events, strict=True):
        # The journal adds the body hash; everything the caller gave comes back equal.
        if isinstance(original, MemoryStored):
            assert isinstance(back, MemoryStored)
            assert msgspec.structs.replace(back, body_hash=None) == original
            assert (back.body_hash is not None) == (original.body is not None)
        else:
            assert back == original


def test_naive_datetime_is_rejected_before_writing() -> None:
    naive = MemoryStored(
        memory_id="m1", namespace="n", memory_type="episodic", t_valid=datetime(2026, 1, 1)
    )
    with pytest.raises(EncodeError, match="cannot be journaled"):
        encode_record(1, T0, GENESIS_HASH, [naive])


def test_not_an_event_and_empty_commands_are_rejected() -> None:
    with pytest.raises(EncodeError, match="not a journal event"):
        encode_record(1, T0, GENESIS_HASH, [MemoryBody(content="x")])  # type: ignore[list-item]
    with pytest.raises(EncodeError, match="at least one event"):
        encode_record(1, T0, GENESIS_HASH, [])
    with pytest.raises(EncodeError, match="timezone-aware"):
        encode_record(1, datetime(2026, 1, 1), GENESIS_HASH, [stored(1)])


def test_any_flipped_byte_fails_the_checksum() -> None:
    frame, _ = roundtrip([stored(1, "the deploy key rotated on Tuesday")])
    for i in range(len(frame)):
        bad = bytearray(frame)
        bad[i] ^= 0x01
        assert isinstance(check_frame(bytes(bad), 0, len(bad)), str), f"byte {i} not covered"


def test_text_enters_the_hash_only_through_the_body_hash() -> None:
    a, ra = encode_record(1, T0, GENESIS_HASH, [stored(1, "alpha")])
    _, rb = encode_record(1, T0, GENESIS_HASH, [stored(1, "alpha")])
    # Random salts: the same text gives different body hashes, so a redacted text cannot be
    # confirmed by hashing a guess.
    assert ra.events[0].body_hash != rb.events[0].body_hash  # type: ignore[union-attr]
    info = check_frame(a, 0, len(a))
    assert not isinstance(info, str)
    redacted = redact_frame(a, info, {"m1"})
    assert redacted is not None and b"alpha" in a and b"alpha" not in redacted
    rinfo = check_frame(redacted, 0, len(redacted))
    assert not isinstance(rinfo, str)
    back = decode_record(redacted, rinfo)
    assert back.hash == ra.hash  # the chain is untouched by redaction
    event = back.events[0]
    assert isinstance(event, MemoryStored) and event.redacted and event.body is None
    assert body_problems(redacted, rinfo) == []


def test_a_tampered_body_is_detected_by_its_hash() -> None:
    frame, _ = encode_record(1, T0, GENESIS_HASH, [stored(1, "version 1.36")])
    tampered = bytearray(frame.replace(b"version 1.36", b"version 1.38"))
    # Recompute the checksum the way an editor would, so only the body hash can tell.
    struct.pack_into("<I", tampered, 4, zlib.crc32(bytes(tampered[8:])))
    info = check_frame(bytes(tampered), 0, len(tampered))
    assert not isinstance(info, str)
    assert body_problems(bytes(tampered), info) == ["body of event 0 does not match its hash"]


class FutureEvent(Event, tag="future.thing"):
    payload: str


class _FuturePayload(msgspec.Struct, array_like=True):
    recorded_at: datetime
    events: list[MemoryStored | FutureEvent]
    bodies: None = None


def _frame_by_hand(position: int, prev: bytes, payload: bytes) -> bytes:
    """A frame built from the documented layout alone (journal.record docstring)."""
    head_len = len(payload) - 1  # everything but the trailing nil of the bodies
    covered = struct.pack("<IIQ32s", head_len, len(payload), position, prev) + payload
    return b"FXRC" + struct.pack("<I", zlib.crc32(covered)) + covered


def test_unknown_event_types_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    known = MemoryStored(memory_id="m1", namespace="n", memory_type="episodic", t_valid=T0)
    payload = msgspec.msgpack.encode(_FuturePayload(T0, [FutureEvent(payload="hi"), known]))
    assert payload.endswith(b"\xc0")
    frame = _frame_by_hand(1, GENESIS_HASH, payload)
    info = check_frame(frame, 0, len(frame))
    assert not isinstance(info, str)
    assert len(frame) == FRAME_SIZE + len(payload)
    with caplog.at_level(logging.WARNING, logger="journal"):
        record = decode_record(frame, info)
    assert record.events == (known,)
    assert record.skipped == ("future.thing",)
    assert "future.thing" in caplog.text
    expected_hash = hashlib.blake2b(
        struct.pack("<Q", 1) + GENESIS_HASH + payload[:-1], digest_size=32
    ).digest()
    assert record.hash == expected_hash
