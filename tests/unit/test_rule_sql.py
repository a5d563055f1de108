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


# --- The rule *current* in Python: read from the spec (``predicates.is_current``) -----------

CURRENT_BY_HAND: dict[str, int] = {}
"""Files (path → count) still writing ``….t_invalid is None`` (or ``is not None``) by hand:
none now; a new one fails the check below until it reads ``is_current``."""


def _guards_its_value(test: ast.Compare, parents: dict[int, ast.AST]) -> bool:
    """Whether ``x.t_invalid is [not] None`` guards a use of the value: the test of an
    ``if`` (statement or expression), alone or in an ``and``/``or``, where ``x.t_invalid``
    is read again (``… if x.t_invalid is None else iso(x.t_invalid)``; ``if x.t_invalid is
    not None and x.t_invalid <= now``): a None check before using the value, not the rule."""
    node: ast.AST = test
    parent = parents.get(id(node))
    while isinstance(parent, ast.BoolOp | ast.UnaryOp):
        node, parent = parent, parents.get(id(parent))
    scope = parent if isinstance(parent, ast.If | ast.IfExp) and parent.test is node else node
    wanted = ast.dump(test.left)
    return sum(ast.dump(n) == wanted for n in ast.walk(scope)) > 1


def current_by_hand(path: Path) -> list[int]:
    """The lines of ``path`` that test ``<row>.t_invalid is [not] None`` in Python (the
    rule *current* written by hand)."""
    tree = ast.parse(path.read_text(), str(path))
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Attribute)
        and node.left.attr == "t_invalid"
        and [type(op) for op in node.ops] in ([ast.Is], [ast.IsNot])
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
        and not _guards_its_value(node, parents)
    )


def test_no_python_outside_the_predicates_writes_the_current_rule_by_hand() -> None:
    found = {
        str(path.relative_to(ROOT)): len(lines)
        for package in ("ferrex", "projections", "journal")
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) != HOME
        if (lines := current_by_hand(path))
    }
    assert found == CURRENT_BY_HAND, "use projections.readmodel.predicates.is_current"


def test_the_python_search_sees_the_rule_by_hand_and_not_a_value_guard(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = [m for m in rows if m.t_invalid is None]\n"
        "b = None if m.t_invalid is None else iso(m.t_invalid)\n"
        "c = m.t_invalid is not None\n"
        "d = is_current(m)\n"
        "if m.t_invalid is not None and m.t_invalid <= now:\n"
        "    pass\n"
        "if m.t_invalid is not None:\n"
        "    at = m.t_invalid\n"
        "if m.t_invalid is not None or m.multi_valued:\n"
        "    pass\n"
    )
    assert current_by_hand(sample) == [1, 3, 9]
