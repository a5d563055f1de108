"""Each read-model rule predicate is written once (``projections/readmodel/predicates.py``) and
rendered to SQL from there: no other SQL text of the three packages restates *current*
(``t_invalid IS NULL``), *visible* (a shared or unowned row) or *unexpired* (no expiry or one
later), the way ``projections/sqlite.py`` once restated them and foldability drifted from
the decision's (issue 46)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = "projections/readmodel/predicates.py"
RESTATED = {
    "current": re.compile(r"\bt_invalid\s+IS\s+NULL\b", re.IGNORECASE),
    "visible": re.compile(r"\bvisibility\s*(=|IN)\s*\(?\s*'shared'", re.IGNORECASE),
    "unexpired": re.compile(r"\bexpires_at\s+IS\s+NULL\s+OR\b", re.IGNORECASE),
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            found.add(id(body[0].value))
    return found


def restated(path: Path) -> list[tuple[int, str]]:
    """(line, rule) for each string of code in ``path`` (docstrings left out) that states a
    rule predicate in SQL."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            hits.extend((node.lineno, rule) for rule, pattern in RESTATED.items()
                        if pattern.search(node.value))  # fmt: skip
    return sorted(set(hits))


def test_no_sql_outside_the_predicates_restates_a_rule() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}": rule
        for package in ("ferrex", "projections", "journal")
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) != HOME
        for line, rule in restated(path)
    }
    assert found == {}


def test_the_search_sees_each_rule_as_the_predicates_render_it() -> None:
    from projections.readmodel.predicates import CURRENT, seen_by, unexpired

    assert RESTATED["current"].search(CURRENT)
    assert RESTATED["visible"].search(seen_by())
    assert RESTATED["unexpired"].search(unexpired())
