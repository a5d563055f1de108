"""The write path is typed: the runner's public types carry no ``Any``, so ``mypy --strict``
checks that each command's decision answers what its caller expects; what a chunk keeps
between decisions is typed by its kind (``Batch.state``); the runner fills in a result's
record position and warning exactly where the result has those fields."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ferrex.core.decide.forget import SettleResult, ValidateResult
from ferrex.core.runner import Batch, _answered
from tests.unit.test_decide import FakeView

ROOT = Path(__file__).resolve().parents[2]
TYPED = (
    "ferrex/core/runner.py",
    "ferrex/core/decide/__init__.py",
    "ferrex/write/writer.py",
)


@pytest.mark.parametrize("path", TYPED)
def test_the_write_path_names_no_any(path: str) -> None:
    tree = ast.parse((ROOT / path).read_text())
    found = [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
        or (isinstance(node, ast.alias) and node.name == "Any")
    ]
    assert not found, f"{path} uses Any (lines {found})"


class _Kept:
    def __init__(self) -> None:
        self.seen: list[int] = []


def test_a_chunk_keeps_one_value_of_each_kind() -> None:
    batch = Batch(FakeView())
    kept = batch.state(_Kept)
    kept.seen.append(1)
    assert batch.state(_Kept) is kept and batch.state(_Kept).seen == [1]
    assert batch.state(list) == []  # another kind, another value
    assert Batch(FakeView()).state(_Kept).seen == []  # a new chunk starts with none


def test_the_runner_stamps_only_results_with_a_position() -> None:
    result = ValidateResult(("mem_1",), (), None, warnings=("earlier",))
    assert _answered(result, 7, None) == ValidateResult(("mem_1",), (), 7, ("earlier",))
    assert _answered(result, 7, "late") == ValidateResult(("mem_1",), (), 7, ("earlier", "late"))
    settled = SettleResult((), ("mem_1",), ())  # no position, no warnings: as it is
    assert _answered(settled, 7, "late") is settled
    ids = ("mem_1", "mem_2")  # an access flush's answer: not a dataclass
    assert _answered(ids, 7, "late") is ids
