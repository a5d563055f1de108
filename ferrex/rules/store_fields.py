"""One field of a store request checked: a clear error for a bad value, a clean value otherwise.

Each check takes a field's raw value as an adapter parsed it and gives it back cleaned, or
raises :class:`UsageError` (code ``invalid_input``) naming the field and what is wrong, with a
hint that says what to do: text (stripped, newlines made ``\\n``, no control characters,
within a length), lists of text, a confidence, a JSON context, a memory id to supersede, a
time with its timezone. :func:`ferrex.rules.memory_input.validate` applies them; its module
docstring gives the rules and why.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Any, Final, cast

from ferrex.errors import UsageError
from ferrex.times import rfc3339

SUPERSEDES_CHARS: Final = 64
CONTEXT_DEPTH: Final = 32
_MULTILINE_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NEWLINES = re.compile(r"\r\n?")
_WHITESPACE = re.compile(r"\s")


def input_error(message: str, hint: str) -> UsageError:
    return UsageError(message, hint=hint)


def checked_text(field: str, value: object, limit: int, *, one_line: bool = False) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise input_error(
            f"{field} must be a string, got {type(value).__name__}", f"pass {field} as text"
        )
    text = _NEWLINES.sub("\n", value).strip()
    if not text:
        raise input_error(f"{field} is empty", f"leave {field} out, or give it a value")
    if all(c.isspace() or unicodedata.category(c) == "Cf" for c in text):
        raise input_error(
            f"{field} is empty: it holds only invisible characters (zero-width spaces, "
            "joiners, marks of direction)",
            f"leave {field} out, or give it a value",
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise input_error(
            f"{field} is not valid Unicode (a lone surrogate at character {exc.start})",
            "send the text as UTF-8",
        ) from exc
    control = (_ANY_CONTROL if one_line else _MULTILINE_CONTROL).search(text)
    if control is not None:
        allowed = "one line, with no control characters" if one_line else "newline and tab"
        raise input_error(
            f"{field} contains the control character U+{ord(control.group()):04X} at "
            f"character {control.start()}",
            f"remove it; {field} allows {allowed}"
            if one_line
            else f"remove it; only {allowed} are allowed",
        )
    if len(text) > limit:
        raise input_error(
            f"{field} is {len(text)} characters, longer than the limit of {limit}",
            f"shorten {field}, or split the memory into several",
        )
    return text


def checked_texts(field: str, values: object, limit: int, max_items: int) -> tuple[str, ...]:
    items = checked_list(field, values)
    if len(items) > max_items:
        raise input_error(
            f"{field} has {len(items)} items, more than the limit of {max_items}",
            f"keep at most {max_items} {field}, or split it into several memories",
        )
    return tuple(
        cast(str, checked_text(f"{field}[{i}]", item, limit)) for i, item in enumerate(items)
    )


def checked_list(field: str, values: object) -> Sequence[object]:
    # A bare string is a Sequence too; taken as a list it would become one item per letter.
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise input_error(
            f"{field} must be a list of strings, got {type(values).__name__}",
            f"pass {field} as a list, even for one item",
        )
    return values


def checked_confidence(value: object) -> float:
    # bool is an int subclass; True is not a confidence.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise input_error(
            f"confidence must be a number, got {type(value).__name__}",
            "give a number from 0 to 1",
        )
    # Compare before converting: float() of a huge int overflows.
    if not 0 <= value <= 1 or not math.isfinite(value):
        raise input_error(
            f"confidence {quoted(value)} is not a finite number from 0 to 1",
            "give a number from 0 (a guess) to 1 (certain)",
        )
    return float(value)


def checked_context(value: object, max_bytes: int) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise input_error(
            f"context must be a JSON object, got {type(value).__name__}",
            'pass context as an object, for example {"ticket": "INC-1"}',
        )
    _check_json("context", value, 0)
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    size = len(encoded.encode("utf-8"))
    if size > max_bytes:
        raise input_error(
            f"context is {size} bytes as JSON, larger than the limit of {max_bytes}",
            "keep context to a few small fields; put long text in content",
        )
    return cast(dict[str, Any], json.loads(encoded))


def _check_json(path: str, value: object, depth: int) -> None:
    if depth > CONTEXT_DEPTH:
        raise input_error(
            f"context is nested deeper than {CONTEXT_DEPTH} levels (at {path})",
            "flatten the context",
        )
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        _check_encodable(path, value)
        return
    if isinstance(value, int):
        # The journal stores context as msgpack, whose integers are 64-bit.
        if not -(2**63) <= value < 2**64:
            raise input_error(
                f"{path} is an integer too large to store (64 bits at most)",
                "store a number this large as a string",
            )
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise input_error(
                f"{path} is {value!r}, which JSON cannot carry", "use a finite number or null"
            )
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise input_error(
                    f"{path} has a key {quoted(key)} that is not a string",
                    "JSON object keys are strings",
                )
            _check_encodable(f"{path} key", key)
            _check_json(f"{path}.{key}", item, depth + 1)
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_json(f"{path}[{i}]", item, depth + 1)
        return
    raise input_error(
        f"{path} is a {type(value).__name__}, which is not JSON",
        "use strings, numbers, booleans, null, lists and objects only",
    )


def _check_encodable(path: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise input_error(f"{path} is not valid Unicode", "send the text as UTF-8") from exc


def checked_supersedes(value: object) -> str | None:
    if value is None:
        return None
    hint = "pass the id of the memory to replace, as a store or recall returned it"
    if not isinstance(value, str):
        raise input_error(f"supersedes must be a memory id, got {type(value).__name__}", hint)
    memory_id = value.strip()
    if not memory_id:
        raise input_error("supersedes is empty", hint)
    if len(memory_id) > SUPERSEDES_CHARS:
        raise input_error(
            f"supersedes is {len(memory_id)} characters, longer than any memory id "
            f"({SUPERSEDES_CHARS} at most)",
            hint,
        )
    if _WHITESPACE.search(memory_id) or not memory_id.isprintable():
        raise input_error(
            f"supersedes {memory_id!r} is not a memory id: it contains whitespace or "
            "control characters",
            hint,
        )
    return memory_id


_DATE_ONLY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")


def offset_of(value: object) -> tzinfo | None:
    """The offset a time was written with (``+09:00`` in ``2024-05-01T09:00:00+09:00``),
    None for a date alone, a time without one, or anything :func:`parse_time` refuses."""
    if isinstance(value, datetime):
        return value.tzinfo
    if not isinstance(value, str) or _DATE_ONLY.fullmatch(value.strip()):
        return None
    try:
        return datetime.fromisoformat(value.strip()).tzinfo
    except ValueError:
        return None


def parse_time(value: object, name: str = "valid_from") -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string or a datetime (None stays None).

    ``name`` is the field the errors name. A date alone (``2026-11-20``, as the tool schemas
    write it) is that day at 00:00 UTC; a time without a timezone is refused, since ferrex
    does not guess the timezone of a clock reading.
    """
    if value is None:
        return None
    example = "2024-05-01T09:00:00Z, 2024-05-01T09:00:00+02:00 or the date 2024-05-01"
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError as exc:
            raise input_error(
                f"{name} {quoted(value)} is not an ISO 8601 time", f"write it like {example}"
            ) from exc
        if _DATE_ONLY.fullmatch(text):
            parsed = parsed.replace(tzinfo=UTC)
    elif isinstance(value, datetime):
        parsed = value
    else:
        raise input_error(
            f"{name} must be an ISO 8601 time, got {type(value).__name__}",
            f"write it like {example}",
        )
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise input_error(
            f"{name} {value!s} has no timezone",
            f"add one, for example {example}; ferrex does not guess the timezone",
        )
    try:
        return parsed.astimezone(UTC)
    except OverflowError as exc:
        raise input_error(f"{name} {value!s} is out of range", f"write it like {example}") from exc


AHEAD_ALLOWED: Final = 600.0
"""Seconds a fact's ``valid_from`` may lie past the server's clock: two machines' clocks
disagree by that much, a plan does not."""


def check_not_ahead(memory_type: str, valid_from: datetime | None, now: datetime) -> None:
    """Refuse a fact or a procedure that ``valid_from`` starts in the future.

    A new value of a fact (a new version of a procedure) ends the old one where it starts,
    and ferrex has no scheduled changes: a start ahead of the clock would answer the new
    value today. An event in the future (a meeting planned) replaces nothing and is kept."""
    if memory_type == "episodic" or valid_from is None:
        return
    if (valid_from - now).total_seconds() <= AHEAD_ALLOWED:
        return
    what = "fact" if memory_type == "semantic" else "procedure"
    raise input_error(
        f"valid_from {rfc3339(valid_from)} is in the future: "
        f"a {what} is stored when it becomes true",
        "store it when it happens, or store the plan as an event (type episodic) meanwhile",
    )


def quoted(value: object, width: int = 80) -> str:
    """``repr(value)`` cut to ``width`` characters, for quoting bad input in a message."""
    try:
        shown = repr(value)
    except ValueError:  # an int of thousands of digits (CPython's int-to-str limit)
        return f"(a {type(value).__name__} too large to show)"
    return shown if len(shown) <= width else f"{shown[: width - 3]}..."
