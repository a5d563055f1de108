"""The tools' shared harness: benchmarks refuse a busy machine unless told --noisy (and every
one of them asks), the one percentile, timing, scratch directories and home copies."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import pytest

from tools import harness

ROOT = Path(__file__).resolve().parents[2]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    harness.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_a_busy_machine_is_refused_unless_noisy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (3.2, 2.0, 1.0))
    registered: list[object] = []
    monkeypatch.setattr(harness.atexit, "register", registered.append)
    with pytest.raises(SystemExit) as stopped:
        harness.begin(_args())
    assert stopped.value.code == harness.REFUSED_EXIT
    assert "refusing to measure: the one-minute load 3.20 is above 1.5" in capsys.readouterr().err
    assert not registered
    harness.begin(_args("--noisy"))
    assert len(registered) == 1
    registered[0]()  # type: ignore[operator]
    assert "NOISY" in capsys.readouterr().out


def test_a_quiet_machine_runs_and_reports_the_load_before_and_after(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    _clocks(monkeypatch, busy=[100.0, 130.0], own=[5.0, 34.0])  # 30 s busy, 29 of them ours
    registered: list[object] = []
    monkeypatch.setattr(harness.atexit, "register", registered.append)
    harness.begin(_args("--max-load", "1"))
    registered[0]()  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "before: load average 0.40 0.50 0.60" in out and "after: load average" in out
    assert "other processes used 0.10 cores on average" in out
    assert "NOISY" not in out


def _clocks(monkeypatch: pytest.MonkeyPatch, *, busy: list[float], own: list[float]) -> None:
    """Machine busy seconds, own CPU seconds and the wall clock (10 s apart), one per call."""
    monkeypatch.setattr(harness, "busy_seconds", iter(busy).__next__)
    monkeypatch.setattr(harness, "own_seconds", iter(own).__next__)
    monkeypatch.setattr(harness, "wall_seconds", iter([0.0, 10.0]).__next__)


def test_other_processes_working_beside_the_run_make_it_noisy_but_its_own_work_does_not(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    registered: list[object] = []
    monkeypatch.setattr(harness.atexit, "register", registered.append)
    # The run keeps both cores busy itself (20 of 20 s): quiet, however high the load after.
    _clocks(monkeypatch, busy=[0.0, 20.0], own=[0.0, 20.0])
    harness.begin(_args())
    monkeypatch.setattr(os, "getloadavg", lambda: (2.0, 1.0, 0.6))
    registered.pop()()  # type: ignore[operator]
    assert "NOISY" not in capsys.readouterr().out
    # Others took 8 CPU seconds in 10 s beside it: 0.8 cores.
    _clocks(monkeypatch, busy=[0.0, 18.0], own=[0.0, 10.0])
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    harness.begin(_args())
    registered.pop()()  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "other processes used 0.80 cores on average" in out
    assert "NOISY: these figures were taken on a busy machine (other processes used 0.80" in out


def test_every_benchmark_checks_the_load() -> None:
    benches = sorted((ROOT / "tools").glob("bench*.py")) + sorted(
        (ROOT / "tools" / "trials").glob("bench*.py")
    )
    assert len(benches) > 10
    missing = [p.name for p in benches if "harness.begin(" not in p.read_text()]
    assert not missing, f"benchmarks that do not call tools.harness.begin: {missing}"


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert harness.percentile(values, 0.95) == 95.0
    assert harness.percentile(values, 0.5) == 50.0
    assert harness.percentile(list(reversed(values)), 1.0) == 100.0
    assert harness.percentile([3.0], 0.95) == 3.0
    assert harness.percentile([1.0, 2.0, 3.0, 4.0], 0.95) == 4.0
    with pytest.raises(ValueError):
        harness.percentile([], 0.5)


def test_timed_gives_the_answer_and_both_clocks() -> None:
    took = harness.timed(lambda: sum(range(200_000)))
    assert took.value == sum(range(200_000))
    assert took.wall > 0 and took.cpu >= 0


def test_a_scratch_directory_is_removed_unless_kept(tmp_path: Path) -> None:
    with harness.scratch("ferrex-test-") as made:
        assert made.is_dir()
        (made / "x").write_text("x")
    assert not made.exists()
    keep = tmp_path / "kept" / "here"
    with harness.scratch("ferrex-test-", keep) as made:
        assert made == keep
        (made / "x").write_text("x")
    assert (keep / "x").is_file()
    with harness.scratch("ferrex-test-", keep):  # reused as it is unless asked to be empty
        pass
    with (
        pytest.raises(harness.NotEmpty, match="must be new or empty"),
        harness.scratch("ferrex-test-", keep, empty=True),
    ):
        pass
    assert (keep / "x").read_text() == "x"


def test_a_home_copy_is_a_copy_with_links_kept_and_a_missing_home_is_refused(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "journal").mkdir(parents=True)
    (home / "journal" / "00000001.seg").write_bytes(b"records")
    (home / "current").symlink_to("journal")
    into = tmp_path / "work"
    into.mkdir()
    copy = harness.home_copy(home, into, "side-a")
    assert copy == into / "side-a"
    assert (copy / "journal" / "00000001.seg").read_bytes() == b"records"
    assert (copy / "current").is_symlink()
    (copy / "journal" / "00000001.seg").write_bytes(b"changed")
    assert (home / "journal" / "00000001.seg").read_bytes() == b"records"
    with pytest.raises(SystemExit, match="no home at"):
        harness.home_copy(tmp_path / "missing", into)


def test_no_tool_takes_a_percentile_by_hand() -> None:
    """Percentiles come from :func:`tools.harness.percentile` (issue 46: written five times)."""
    by_hand = re.compile(r"\[\s*(min\(|max\(|int\(|round\()?[^\]]*0\.\d+ \* \(?len\(")
    tools = sorted((ROOT / "tools").rglob("*.py"))
    found = [p.name for p in tools if p.name != "harness.py" and by_hand.search(p.read_text())]
    assert found == []
    assert by_hand.search("ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]")


def test_no_tool_edits_sys_path_but_the_ab_worker() -> None:
    """Tools run as modules of the ``tools`` package (issue 46: 35 of them edited ``sys.path``);
    ``bench_ab``'s worker puts the tree it measures first, which is that tool's point."""
    edits = re.compile(r"sys\.path\.(insert|append|extend)\(|sys\.path\s*(\[[^\]]*\])?\s*[+]?=[^=]")
    tools = sorted((ROOT / "tools").rglob("*.py"))
    found = [str(p.relative_to(ROOT)) for p in tools if edits.search(p.read_text())]
    assert found == ["tools/bench_ab.py"]
