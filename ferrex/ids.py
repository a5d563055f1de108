"""Identifiers for memories and entities: a prefix and a ULID (time-ordered, random).

``mem_01JD3…``: 48 bits of milliseconds since the epoch and 80 random bits, in Crockford's
base 32, so ids sort by creation time and never collide in practice across processes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PATTERN = re.compile(r"^[a-z]{2,8}_[0-9A-HJKMNP-TV-Z]{26}$")
MAX_ID_LENGTH = 64
#: An id inside a text (``mem_01JD3…`` among words).
ID_IN_TEXT = re.compile(r"\b[a-z]{2,8}_[0-9A-HJKMNP-TV-Z]{26}\b")


def new_id(prefix: str, now: datetime, random: Callable[[int], bytes] = os.urandom) -> str:
    millis = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | int.from_bytes(random(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def plausible_id(value: object) -> bool:
    """Whether ``value`` can be an id at all (any ferrex or imported id, not only ours)."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_ID_LENGTH
        and value.isprintable()
        and not any(c.isspace() for c in value)
    )
