"""`ferrex consolidate` end to end: dry run, fold, recall, undo, and refusals that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ferrex.cli import cli

TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: I am researching adoption agencies this month.",
]


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def journal_head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_consolidate_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = []
    for turn in TURNS:
        code, out, err = run(home, "store", "--content", turn, "--source", "chat-1", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["id"])
    head = journal_head(home)

    code, out, _ = run(home, "consolidate", "--dry-run", "--older-than", "0")
    assert code == 0 and "would fold 3 memories of source:chat-1" in out
    for bad, exit_code, words in (
        (("--older-than", "-1"), 2, "0 days or more"),
        ((), 2, "age"),  # no --older-than and no consolidation.after_days
        (("--undo", "mem_00000000000000000000000000"), 7, "no consolidation summary"),
        (("--undo", ids[0]), 7, "no consolidation summary"),
        (("--undo", ids[0], "--dry-run"), 2, "--undo"),
    ):
        code, _, err = run(home, "consolidate", *bad)
        assert code == exit_code and words in err, (bad, err)
    assert journal_head(home) == head  # neither the dry run nor a refusal wrote anything

    code, out, _ = run(home, "consolidate", "--older-than", "0", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["folded"] == 3 and not doc["dry_run"]
    (summary,) = doc["summaries"]
    assert summary["memory_ids"] == ids and summary["chars"] <= summary["source_chars"]
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    found = [r["id"] for r in json.loads(out)["results"]]
    assert found[0] == summary["summary_id"] and not set(found) & set(ids)

    code, out, _ = run(home, "consolidate", "--undo", summary["summary_id"])
    assert code == 0 and "3 memories back in recall" in out
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    assert json.loads(out)["results"][0]["id"] == ids[2]
    code, _, err = run(home, "consolidate", "--undo", summary["summary_id"])
    assert code == 7 and "no consolidation summary" in err
