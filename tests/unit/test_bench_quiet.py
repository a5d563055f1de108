"""Benchmarks refuse a busy machine unless told --noisy, and every one of them asks."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from tools import quiet

ROOT = Path(__file__).resolve().parents[2]


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    quiet.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_a_busy_machine_is_refused_unless_noisy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (3.2, 2.0, 1.0))
    registered: list[object] = []
    monkeypatch.setattr(quiet.atexit, "register", registered.append)
    with pytest.raises(SystemExit) as stopped:
        quiet.begin(_args())
    assert stopped.value.code == quiet.REFUSED_EXIT
    assert "refusing to measure: the one-minute load 3.20 is above 1.5" in capsys.readouterr().err
    assert not registered
    quiet.begin(_args("--noisy"))
    assert len(registered) == 1
    registered[0]()  # type: ignore[operator]
    assert "NOISY" in capsys.readouterr().out


def test_a_quiet_machine_runs_and_reports_the_load_before_and_after(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.5, 0.6))
    registered: list[object] = []
    monkeypatch.setattr(quiet.atexit, "register", registered.append)
    quiet.begin(_args("--max-load", "1"))
    registered[0]()  # type: ignore[operator]
    out = capsys.readouterr().out
    assert "before: load average 0.40 0.50 0.60" in out and "after: load average" in out
    assert "NOISY" not in out


def test_every_benchmark_checks_the_load() -> None:
    benches = sorted((ROOT / "tools").glob("bench*.py"))
    assert len(benches) > 10
    missing = [p.name for p in benches if "quiet.begin(" not in p.read_text()]
    assert not missing, f"benchmarks that do not call tools.quiet.begin: {missing}"
