"""The one form of a time in every answer: RFC 3339, UTC, whole seconds, ``Z``.

``2026-12-01T07:23:34Z``. MCP answers and ``--json`` CLI output use :func:`rfc3339` for every
time they carry, so an agent reads one format and never a raw epoch. Fractions of a second
are cut off, not rounded: a time is never shown as later than it was. (A dump, which must
restore times exactly, keeps its fractions; see ferrex.porting.dump.)
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, overload

#: A time in a typed answer: the text :func:`rfc3339` gives (its schema says date-time).
Rfc3339 = Annotated[str, "date-time"]


@overload
def rfc3339(t: float | datetime) -> str: ...
@overload
def rfc3339(t: None) -> None: ...
def rfc3339(t: float | datetime | None) -> str | None:
    """``t`` (float epoch seconds, or an aware datetime) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if t is None:
        return None
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise ValueError(f"a time without a timezone cannot be shown as UTC: {t!r}")
        when = t.astimezone(UTC).replace(microsecond=0)
    else:
        when = datetime.fromtimestamp(math.floor(t), UTC)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")
