"""The write side's core and the rules depend on nothing above them: ``ferrex/core/`` and
``ferrex/rules/`` import nothing from the read side, the adapters or the porting tools (a
rule both sides need lives in ``ferrex/rules/``, not in ``ferrex/read/``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ABOVE = ("ferrex.read", "ferrex.server", "ferrex.cli", "ferrex.porting", "ferrex.app")


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_core_and_rules_import_nothing_above_them() -> None:
    wrong = [
        f"{path.relative_to(ROOT)} imports {name}"
        for package in ("core", "rules")
        for path in sorted((ROOT / "ferrex" / package).rglob("*.py"))
        for name in sorted(imported(path))
        if any(name == above or name.startswith(f"{above}.") for above in ABOVE)
    ]
    assert not wrong, wrong
