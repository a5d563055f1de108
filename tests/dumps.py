"""A dump as the lines a restore must give back: what ``export jsonl`` of a restored home
must write again, apart from what the format names as the import's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ferrex.porting.dump import HEADER, NOT_RESTORED
from ferrex.rules.memory_input import parse_time
from journal.events import given_by_time


def comparable(path: Path) -> list[list[tuple[str, Any]]]:
    """Each line of the dump at ``path`` as its (key, value) pairs in the order written, but
    for :data:`ferrex.porting.dump.NOT_RESTORED` (the header's ``journal_position``, a
    memory's ``created_at``). A memory line's ``valid_from_given`` is written only where its
    ``created_at`` would misread the start, so it is compared by what it says: present on
    every memory line, last."""
    lines: list[list[tuple[str, Any]]] = []
    for text in path.read_text(encoding="utf-8").splitlines():
        line: dict[str, Any] = json.loads(text)
        kept = [(k, v) for k, v in line.items() if k not in NOT_RESTORED]
        if "t_valid" in line and line.get("type") != HEADER:
            given = line.get("valid_from_given")
            if given is None:
                t_valid = parse_time(line["t_valid"])
                created = parse_time(line.get("created_at"))
                assert t_valid is not None
                given = created is None or given_by_time(t_valid.timestamp(), created.timestamp())
            kept = [(k, v) for k, v in kept if k != "valid_from_given"]
            kept.append(("valid_from_given", given))
        lines.append(kept)
    return lines
