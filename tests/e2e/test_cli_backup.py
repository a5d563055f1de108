"""A backup through the real CLI: `ferrex export jsonl` of a home, `ferrex import` of the
dump into a fresh home, and the two read models compared row by row. Each test is one of
the ways a dump used to lose a home (abbreviation spellings, long memories, history,
consolidations, reconcile of folded memories)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ferrex.app import App
from ferrex.cli import cli
from ferrex.config import load
from tests.rows import read_model_rows

LONG = " ".join(
    f"Paragraph {n}: the incident review covered the failover of the payments database, "
    f"the replication lag on replica {n}, and the alert thresholds we agreed to change."
    for n in range(20)
)
"""An episodic text several times longer than the bundled model's 256-token window."""


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def stored(home: Path, *args: str) -> str:
    code, out, err = run(home, "store", *args, "--json")
    assert code == 0, err
    return str(json.loads(out)["id"])


def rows(home: Path) -> dict[str, list[dict[str, Any]]]:
    app = App(home=home, config=load(home, env={}))
    try:
        return read_model_rows(app.projections().read_model)
    finally:
        app.close()


def restored(home: Path, tmp_path: Path, *export: str) -> tuple[Path, list[dict[str, Any]]]:
    """Export ``home``, import the dump into a fresh home; the new home and the import's
    report of each line."""
    dump = tmp_path / "backup.jsonl"
    code, _, err = run(home, "export", "jsonl", str(dump), *export)
    assert code == 0, err
    fresh = tmp_path / "restored"
    code, out, err = run(fresh, "import", str(dump), "--json")
    doc = json.loads(out)
    assert code == 0, (err, [line for line in doc["lines"] if line["status"] != "stored"])
    return fresh, doc["lines"]


def test_abbreviated_subjects_and_long_memories_come_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stored(home, "--subject", "payments repository", "--predicate", "owned by",
           "--object", "team payments")  # fmt: skip
    stored(home, "--subject", "payments repo", "--predicate", "deployed to",
           "--object", "eu-west-1")  # fmt: skip
    long_id = stored(home, "--content", LONG, "--split-long", "--source", "review-7")
    dump = tmp_path / "plain.jsonl"
    assert run(home, "export", "jsonl", str(dump))[0] == 0
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    spelled = [a for line in lines for a in line.get("aliases", ())]
    assert [a["match"] for a in spelled] == ["abbreviation"]
    assert next(line for line in lines if line.get("id") == long_id)["split_long"] is True

    fresh, _ = restored(home, tmp_path)
    assert rows(fresh) == rows(home)
    code, out, _ = run(fresh, "recall", "who owns the payments repo", "--json")
    assert code == 0 and json.loads(out)["results"][0]["object"] == "team payments"


TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: I am researching adoption agencies this month.",
]


def consolidated(home: Path) -> tuple[list[str], str]:
    """A home whose three turns of one chat are folded into a summary: their ids, its id."""
    ids = [stored(home, "--content", turn, "--source", "chat-1") for turn in TURNS]
    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    (summary,) = json.loads(out)["summaries"]
    return ids, str(summary["summary_id"])


def drop_points(home: Path, memory_ids: list[str]) -> None:
    """Delete the memories' vector points behind ferrex's back."""
    app = App(home=home, config=load(home, env={}))
    try:
        p = app.projections()
        p.backend.delete_by_memory(p.live.memories, memory_ids)
        p.sink.sync()
    finally:
        app.close()


def test_reconcile_fix_converges_on_a_folded_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids, summary = consolidated(home)
    drop_points(home, [ids[0], summary])
    code, out, _ = run(home, "reconcile", "--json")
    doc = json.loads(out)
    assert code == 6 and doc["missing_points"]["examples"] == sorted([ids[0], summary])
    code, out, err = run(home, "reconcile", "--fix", "--json")
    assert code == 0 and json.loads(out)["clean"], (out, err)
    code, out, _ = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"], out
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    found = [r["id"] for r in json.loads(out)["results"]]
    assert found[0] == summary and ids[0] not in found, "the folded source stays out of recall"
