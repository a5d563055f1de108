"""``docs/ARCHITECTURE.md`` names only modules and symbols that exist.

What is checked (the convention the doc is written to; see its opening section): every
inline code span outside fenced blocks, with any call arguments (``(...)``) dropped, of
one of these shapes:

- **a path** — it holds a ``/`` or ends in ``.py`` (``ferrex/core/runner.py``,
  ``core/decide.py``, ``events.py``, ``rules/``): a file or directory of the repository,
  named from its root or by its tail (the short forms the module tables use). Routes
  (``/api/v1``), paths outside the repository (``../``) and hidden names (``.db``) are not
  paths;
- **a module's symbol in path form** — ``rules/dates.when``, ``server/hub._Ownership``: the
  module ``rules/dates.py`` (by its tail) defines ``when``; a tail without a dot
  (``rules/relevance``) names a module;
- **a class's member** — ``ReadModel.apply``, ``Projections.reading()``: a class of that name
  in ``journal/``, ``projections/`` or ``ferrex/`` has it (a method, a field, a class
  attribute or an attribute set on ``self``; its bases, by name, count too);
- **a module's symbol in dotted form** — ``app.translated``, ``decide.decide_store``,
  ``projections.reconcile.reconcile``: checked when the first name is a module or package
  of the three packages (by its last name), unless the span is a configuration key
  (``journal.url``, from ``ferrex.config.KEYS``), an event type (``memory.stored``, from
  ``journal.events.KNOWN_TAGS``) or a read-model ``table.column`` (``entities.merged_into``,
  the tables ``projections/readmodel/schema.py`` creates).

A symbol is defined by a top-level ``def``, ``class``, assignment or import (a re-export) of
the module; a further ``.name`` is looked up in that class. Anything else in backticks (a
single name, a command, an option, text) is not checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from ferrex.config import KEYS
from journal.events import KNOWN_TAGS

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
INTERNALS = ROOT / "docs" / "internals.md"
"""The long notes behind the map, held to the code the same way."""
PACKAGES = ("journal", "projections", "ferrex")
_SHAPE = re.compile(r"[\w/.]+")
_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)")


def spans(text: str) -> Iterator[str]:
    """The inline code spans outside fenced blocks, call arguments dropped."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for span in re.findall(r"`([^`\n]+)`", text):
        name = span.split("(", 1)[0]
        if _SHAPE.fullmatch(name):
            yield name


class Tree:
    """The repository's files and the definitions of the three packages' modules."""

    def __init__(self, root: Path) -> None:
        self.root = root
        skip = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache"}
        self.paths: set[str] = set()
        for path in root.rglob("*"):
            rel = path.relative_to(root)
            if skip.intersection(rel.parts) or rel.parts[0].endswith(".egg-info"):
                continue
            self.paths.add(rel.as_posix() + ("/" if path.is_dir() else ""))
        self.modules: dict[str, Path] = {}  # dotted name -> file
        for package in PACKAGES:
            for path in sorted((root / package).rglob("*.py")):
                dotted = ".".join(path.relative_to(root).with_suffix("").parts)
                self.modules[dotted.removesuffix(".__init__")] = path

    def has_path(self, name: str) -> bool:
        """A file or directory named ``name`` from the root or by its tail."""
        forms = {name, name.rstrip("/") + "/"} if not name.endswith("/") else {name}
        return any(p in forms or p.endswith(tuple("/" + f for f in forms)) for p in self.paths)

    def files_with_tail(self, tail: str) -> list[Path]:
        """Modules whose path ends with ``tail`` (``rules/dates`` → ``ferrex/rules/dates.py``),
        a package's ``__init__.py`` included."""
        found = []
        for rel in self.paths:
            if rel.endswith(("/" + tail + ".py", "/" + tail + "/__init__.py")) or rel in (
                tail + ".py",
                tail + "/__init__.py",
            ):
                found.append(self.root / rel)
        return found

    @cache  # noqa: B019 - one Tree per test run
    def definitions(self, path: Path) -> dict[str, ast.AST]:
        tree = ast.parse(path.read_text(), filename=str(path))
        return dict(_defined(tree.body))

    def classes(self, name: str) -> list[ast.ClassDef]:
        return [
            node
            for path in self.modules.values()
            for node in [self.definitions(path).get(name)]
            if isinstance(node, ast.ClassDef)
        ]

    def class_has(self, name: str, member: str, seen: frozenset[str] = frozenset()) -> bool:
        for node in self.classes(name):
            if member in _members(node):
                return True
            for base in node.bases:
                base_name = base.id if isinstance(base, ast.Name) else None
                if (
                    base_name
                    and base_name not in seen
                    and self.class_has(base_name, member, seen | {name})
                ):
                    return True
        return False

    def module_has(self, path: Path, chain: list[str]) -> bool:
        node = self.definitions(path).get(chain[0])
        if node is None:
            return False
        if len(chain) == 1:
            return True
        if isinstance(node, ast.ClassDef | ast.Import | ast.ImportFrom):
            # a class here, or one imported (a re-export): its member, by the class's name
            return not self.classes(chain[0]) or self.class_has(chain[0], chain[1])
        return False


def _defined(body: list[ast.stmt]) -> Iterator[tuple[str, ast.AST]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        yield name.id, node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                yield (alias.asname or alias.name).split(".")[0], node
        elif isinstance(node, ast.If | ast.Try):
            yield from _defined(node.body)
            yield from _defined(node.orelse)


def _members(node: ast.ClassDef) -> set[str]:
    found = {name for name, _ in _defined(node.body)}
    for item in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(item, ast.Assign):
            targets = list(item.targets)
        elif isinstance(item, ast.AnnAssign):
            targets = [item.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.add(target.attr)
    return found


@cache
def _not_symbols() -> frozenset[str]:
    """Dotted names that are configuration keys, event types or read-model columns."""
    tables = set(_TABLE.findall((ROOT / "projections" / "readmodel" / "schema.py").read_text()))
    return frozenset({key.name for key in KEYS} | set(KNOWN_TAGS)) | frozenset(
        f"table:{t}" for t in tables
    )


def problem(tree: Tree, name: str, not_symbols: frozenset[str] = frozenset()) -> str | None:
    """Why the span ``name`` names nothing that exists, or None (also for spans not checked)."""
    if name.startswith(("/", "../", ".")) or name.endswith("."):
        return None
    if name.endswith((".py", "/")):
        return None if tree.has_path(name) else f"no file or directory {name}"
    if "/" in name:
        head, _, last = name.rpartition("/")
        module, *chain = last.split(".")
        if not module.isidentifier():  # a data file: `golden_set/subject_pairs.jsonl`
            return None if tree.has_path(name) else f"no file {name}"
        files = tree.files_with_tail(f"{head}/{module}")
        if not files:
            return None if tree.has_path(name) else f"no module {head}/{module}.py"
        if chain and not any(tree.module_has(f, chain) for f in files):
            return f"{head}/{module}.py defines no {'.'.join(chain)}"
        return None
    parts = name.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        return None
    if parts[0][0].isupper():
        if not tree.classes(parts[0]):
            return f"no class {parts[0]}"
        if not tree.class_has(parts[0], parts[1]):
            return f"class {parts[0]} has no {parts[1]}"
        return None
    if name in not_symbols or f"table:{parts[0]}" in not_symbols:
        return None
    # the longest leading dotted name that is a module (by its last names), then symbols
    for cut in range(len(parts) - 1, 0, -1):
        tail = "/".join(parts[:cut])
        files = [
            path
            for dotted, path in tree.modules.items()
            if dotted == ".".join(parts[:cut]) or dotted.endswith("." + ".".join(parts[:cut]))
        ]
        if files:
            if not any(tree.module_has(f, parts[cut:]) for f in files):
                return f"module {tail} defines no {'.'.join(parts[cut:])}"
            return None
    return None


@pytest.mark.parametrize("doc", [DOC, INTERNALS], ids=lambda p: p.name)
def test_every_module_and_symbol_the_architecture_names_exists(doc: Path) -> None:
    tree = Tree(ROOT)
    checked = list(spans(doc.read_text()))
    wrong = sorted({f"`{s}`: {why}" for s in checked if (why := problem(tree, s, _not_symbols()))})
    assert not wrong, "\n".join(wrong)
    assert len(checked) > 100


def test_the_map_is_short() -> None:
    """ARCHITECTURE.md is a map a newcomer reads in one sitting: at most 300 lines and 3,000
    words, no line over 120 characters (a table cell is not a chapter)."""
    text = DOC.read_text()
    lines = text.splitlines()
    assert len(lines) <= 300, len(lines)
    assert len(text.split()) <= 3000, len(text.split())
    assert [n for n, line in enumerate(lines, 1) if len(line) > 120] == []


def test_the_doc_checker_sees_what_does_not_exist(tmp_path: Path) -> None:
    (tmp_path / "ferrex" / "rules").mkdir(parents=True)
    (tmp_path / "journal").mkdir()
    (tmp_path / "projections").mkdir()
    (tmp_path / "ferrex" / "rules" / "dates.py").write_text(
        "from x import y as z\nLIMIT = 3\n\ndef when():\n    pass\n\n"
        "class Span:\n    size: int\n\n    def __init__(self):\n        self.end = 0\n\n"
        "    def width(self):\n        return 1\n\nclass Wide(Span):\n    pass\n"
    )
    tree = Tree(tmp_path)
    text = (
        "`rules/dates.py` `dates.py` `rules/` `rules/dates.when` `Span.width()` `Wide.end` "
        "`dates.LIMIT` `dates.z` `journal.url` `/api/v1` `.db` `ferrex.rules.dates.when`\n"
        "```\n`rules/gone.py`\n```\n"
        "`rules/gone.py` `rules/dates.never` `Span.nothing` `Gone.apply` `dates.missing(a, b)` "
        "`ferrex/core/`"
    )
    found = {s: problem(tree, s, frozenset({"journal.url"})) for s in spans(text)}
    assert [s for s, why in found.items() if why is None] == [
        "rules/dates.py", "dates.py", "rules/", "rules/dates.when", "Span.width", "Wide.end",
        "dates.LIMIT", "dates.z", "journal.url", "/api/v1", ".db", "ferrex.rules.dates.when",
    ]  # fmt: skip
    assert {s: why for s, why in found.items() if why is not None} == {
        "rules/gone.py": "no file or directory rules/gone.py",
        "rules/dates.never": "rules/dates.py defines no never",
        "Span.nothing": "class Span has no nothing",
        "Gone.apply": "no class Gone",
        "dates.missing": "module dates defines no missing",
        "ferrex/core/": "no file or directory ferrex/core/",
    }
