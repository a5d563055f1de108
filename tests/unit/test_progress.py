"""The progress line: a bar, counts, rate and ETA on a terminal; nothing otherwise."""

from __future__ import annotations

import io

from ferrex.cli.progress import BAR_WIDTH, line, progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_a_bar_the_counts_and_an_eta_from_the_rate() -> None:
    text = line("importing", "lines", 500, 2000, 10.0)
    assert "[" + "#" * (BAR_WIDTH // 4) + "-" * (BAR_WIDTH * 3 // 4) + "]" in text
    assert "500/2,000 lines" in text and " 25.0%" in text and "50 lines/s" in text
    assert text.endswith("ETA 0:30")  # 1,500 lines to go at 50 a second
    assert line("importing", "lines", 10, 200_000, 1.0).endswith("ETA 5:33:19")


def test_no_eta_before_a_rate_and_a_full_bar_when_done() -> None:
    assert line("importing", "lines", 0, 100, 0.0).endswith("ETA --:--")
    done = line("importing", "lines", 100, 100, 4.0)
    assert "#" * BAR_WIDTH in done and "100.0%" in done and done.endswith("ETA 0:00")
    assert "[" + "-" * BAR_WIDTH + "]" in line("x", "lines", -3, 10, 1.0)  # clamped
    assert "#" * BAR_WIDTH in line("x", "lines", 0, 0, 1.0)  # nothing to do is done


def test_silent_off_a_terminal_and_when_quiet() -> None:
    for stream, quiet in ((io.StringIO(), False), (_Terminal(), True)):
        with progress("importing", "lines", stream, quiet=quiet) as update:
            update(1, 2)
            update(2, 2)
        assert stream.getvalue() == ""
    terminal = _Terminal()
    with progress("importing", "lines", terminal) as update:
        update(2, 2)
    assert "2/2 lines" in terminal.getvalue() and terminal.getvalue().endswith("\n")
