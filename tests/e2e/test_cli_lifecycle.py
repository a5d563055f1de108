"""`ferrex store --importance/--pinned/--ttl`, `ferrex mark` and `ferrex stats` end to end."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ferrex.cli import cli


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def journal_head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_marks_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, _ = run(home, "store", "--content", "The VPN certificate renews every January",
                       "--pinned", "--importance", "0.8", "--json")  # fmt: skip
    kept = json.loads(out)
    assert code == 0 and kept["pinned"] is True and kept["importance"] == 0.8
    code, out, _ = run(home, "store", "--content", "Scratch: VPN test login at 10:00",
                       "--ttl", "2h", "--json")  # fmt: skip
    scratch = json.loads(out)
    assert code == 0 and scratch["expires_at"].endswith("Z")
    code, out, _ = run(home, "stats")
    assert code == 0 and "1 expiring" in out
    # min-relevance 0: both notes, the scratch one too (a default recall leaves it out)
    code, out, _ = run(home, "recall", "VPN certificate renews every January",
                       "--min-relevance", "0")  # fmt: skip
    assert code == 0 and f"{kept['id']}  [episodic, fresh, " in out
    assert ", pinned, importance 0.8]" in out and ", expires 20" in out

    head = journal_head(home)
    for bad in (("--ttl", "5x"), ("--importance", "1.5"), ("--pinned", "--ttl", "90s")):
        code, _, err = run(home, "store", "--content", "Another VPN note", *bad)
        assert code == 2 and ("ttl" in err or "importance" in err), err
    code, _, err = run(home, "mark", kept["id"])
    assert code == 2 and "--importance" in err
    # An id that names no memory (a typo) is refused like forget's, and nothing is written.
    code, out, err = run(home, "mark", "mem_typo", "--pin")
    assert code == 7 and "error [not_found]" in err and "mem_typo" in err, (out, err)
    assert "marked" not in out
    assert journal_head(home) == head

    # Pinning the scratch note keeps it: its expiry is cleared. The unknown id beside it is
    # refused (exit 7), the known one marked all the same, as forget does.
    code, out, err = run(home, "mark", scratch["id"], "mem_00000000000000000000000000", "--pin")
    assert code == 7 and f"marked {scratch['id']}" in out
    assert "error [not_found]" in err and "mem_0" in err and "1 other marked" in err
    code, out, _ = run(home, "recall", "VPN", "--json")
    results = {r["id"]: r for r in json.loads(out)["results"]}
    assert results[scratch["id"]]["pinned"] is True and "expires_at" not in results[scratch["id"]]
    code, out, _ = run(home, "mark", kept["id"], "--unpin", "--importance", "0.5", "--json")
    assert json.loads(out)["marked"] == [kept["id"]]
    code, out, _ = run(home, "recall", "VPN certificate renews", "--json")
    again = {r["id"]: r for r in json.loads(out)["results"]}[kept["id"]]
    assert not {"pinned", "importance", "expires_at"} & set(again)
