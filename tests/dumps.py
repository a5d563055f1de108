"""A dump as the lines a restore must give back: what ``export jsonl`` of a restored home
must write again, apart from what the format names as the import's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ferrex.porting.dump import NOT_RESTORED


def comparable(path: Path) -> list[list[tuple[str, Any]]]:
    """Each line of the dump at ``path`` as its (key, value) pairs in the order written, but
    for :data:`ferrex.porting.dump.NOT_RESTORED` (the header's ``journal_position``, a
    memory's ``created_at``): two dumps whose lines compare equal are the same bytes but for
    those."""
    return comparable_text(path.read_text(encoding="utf-8"))


def comparable_text(dump: str) -> list[list[tuple[str, Any]]]:
    """:func:`comparable` of a dump's text (``export jsonl -`` writes it to stdout)."""
    lines: list[list[tuple[str, Any]]] = []
    for text in dump.splitlines():
        line: dict[str, Any] = json.loads(text)
        lines.append([(k, v) for k, v in line.items() if k not in NOT_RESTORED])
    return lines
