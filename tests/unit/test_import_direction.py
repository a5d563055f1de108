"""DESIGN.md section 1: ferrex -> projections -> journal, and library imports kept in place."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = {"journal": 0, "projections": 1, "ferrex": 2}


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def modules() -> list[tuple[str, Path]]:
    return [(pkg, p) for pkg in LAYERS for p in sorted((ROOT / pkg).rglob("*.py"))]


def test_packages_import_only_downwards() -> None:
    wrong = []
    for package, path in modules():
        for name in imports_of(path):
            if name in LAYERS and LAYERS[name] > LAYERS[package]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not wrong, wrong
    assert len(modules()) > 5


def test_adapters_own_their_libraries() -> None:
    """Only ferrex/cli imports click; only ferrex/server/mcp* imports mcp."""
    wrong = []
    for _, path in modules():
        rel = path.relative_to(ROOT).as_posix()
        names = imports_of(path)
        if "click" in names and not rel.startswith("ferrex/cli"):
            wrong.append(f"{rel} imports click")
        if "mcp" in names and not rel.startswith("ferrex/server/mcp"):
            wrong.append(f"{rel} imports mcp")
    assert not wrong, wrong


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from ferrex.app import App\nimport projections.x\n")
    assert imports_of(bad) == {"ferrex", "projections"}
