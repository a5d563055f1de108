"""CI as issue 46 left it: lint and types run before the long test run, every test has a time
limit, and the constraints file pins a version of every dependency CI and the README install
(``.ci/update-constraints`` writes it)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def test_lint_and_types_run_before_the_tests() -> None:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in lines if not line.lstrip().startswith("#")]

    def first(word: str) -> int:
        return next(n for n, line in enumerate(commands) if word in line)

    tests = first("-m pytest")
    assert first("ruff check") < tests and first("ruff format --check") < tests
    assert first("mypy") < tests


def test_every_test_has_a_time_limit() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert int(project["tool"]["pytest"]["ini_options"]["timeout"]) > 0
    dev = project["project"]["optional-dependencies"]["dev"]
    assert "pytest-timeout" in {_name(r) for r in dev}


def test_the_constraints_pin_every_declared_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        declared |= {_name(r) for r in extra if not r.startswith("ferrex")}
    pinned = {
        _name(line): line
        for line in (ROOT / ".ci" / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert all("==" in line for line in pinned.values())
    assert sorted(declared - set(pinned)) == []
