"""Plain, aligned text for people: key/value blocks and small tables, never Python dicts.

``--json`` output does not come through here, but for :func:`echo_either`; it stays the
tools' documents, unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import click


def scalar(value: Any) -> str:
    """One value as a person reads it: lists joined, nothing quoted, missing shown as -."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(scalar(v) for v in value) if value else "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {scalar(v)}" for k, v in value.items()) if value else "-"
    return str(value)


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun agreeing: ``1 memory``, ``2 memories`` (``plural``: when it is not
    the noun and an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def flatten(doc: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested mappings as (dotted key, value) pairs, in order."""
    pairs: list[tuple[str, str]] = []
    for key, value in doc.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            pairs.extend(flatten(value, f"{name}."))
        else:
            pairs.append((name, scalar(value)))
    return pairs


def echo_pairs(pairs: Sequence[tuple[str, str]], indent: int = 2) -> None:
    """``key   value`` lines, the values aligned."""
    if not pairs:
        return
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        click.echo(f"{' ' * indent}{key:<{width}}  {value}")


def echo_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], indent: int = 2) -> None:
    """Rows as aligned columns under a header; the last column is left unpadded (free text)."""
    if not rows:
        return
    cells = [[scalar(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(r[i]) for r in cells)) for i, column in enumerate(columns)]
    pad = " " * indent

    def line(values: Sequence[str]) -> str:
        head = [v.ljust(w) for v, w in zip(values[:-1], widths[:-1], strict=True)]
        return (pad + "  ".join([*head, values[-1]])).rstrip()

    click.echo(line([c.replace("_", " ") for c in columns]))
    for row_cells in cells:
        click.echo(line(row_cells))


def echo_either(doc: Mapping[str, Any], as_json: bool, text: str) -> None:
    """A command's answer: its document as one JSON line under ``--json``, else ``text``."""
    click.echo(json.dumps(doc) if as_json else text)
