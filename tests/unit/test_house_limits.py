"""The sizes issue 46 settled, held: no module of the three packages over 700 lines (a module
that grows past it has taken a second job), and the README a front page of at most 400 lines
(the manual is ``docs/``). ARCHITECTURE.md's own limits are ``test_architecture_doc.py``'s."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ferrex", "projections", "journal")
MODULE_LINES = 700
README_LINES = 400


def lines_over(limit: int, paths: list[Path]) -> dict[str, int]:
    """Each path with more than ``limit`` lines, with its count."""
    counts = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in paths}
    return {path: n for path, n in counts.items() if n > limit}


def test_no_module_of_the_three_packages_is_over_700_lines() -> None:
    paths = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
    assert len(paths) > 100
    assert lines_over(MODULE_LINES, paths) == {}


def test_the_readme_is_a_front_page() -> None:
    assert lines_over(README_LINES, [ROOT / "README.md"]) == {}


def test_the_counter_sees_a_long_file() -> None:
    long = ROOT / "docs" / "internals.md"  # a file of the checkout, long on purpose
    assert lines_over(10, [long])[str(long.relative_to(ROOT))] > 10
    assert lines_over(10**6, [long]) == {}
