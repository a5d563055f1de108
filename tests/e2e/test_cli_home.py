"""A data directory that does not exist is not a new, empty one: reading commands say so and
create nothing (a mistyped --home), writing commands and the server make it; forgetting an
id that names no memory fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ferrex.cli import cli

READING = [
    ("stats",),
    ("stats", "--json"),
    ("reflect",),
    ("recall", "anything at all"),
    ("export", "jsonl", "-"),
    ("journal", "verify"),
    ("journal", "show"),
    ("journal", "repair"),
    ("journal", "repair", "--apply"),
    ("journal", "compact", "--dry-run"),
    ("reconcile",),
    ("audit", "reconcile"),
    ("replay",),
    ("optimize",),
    ("backfill", "normalized-predicates", "--dry-run"),
    ("forget", "mem_01M8SF119K22CPEBY61NS5BXV0"),
    ("mark", "mem_01M8SF119K22CPEBY61NS5BXV0", "--pin"),
    ("differ", "mem_01M8SF119K22CPEBY61NS5BXV0", "mem_01M8SF119K22CPEBY61NS5BXV1"),
    # These made the mistyped home (and a journal) and answered as from an empty one.
    ("secrets", "scan"),
    ("entity", "merge", "api-gateway", "api gw"),
    ("entity", "split", "api-gateway", "api gw"),
    ("entity", "differ", "api-gateway", "api gw"),
    ("entity", "list"),
    ("entity", "show", "api-gateway"),
]


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("args", READING, ids=" ".join)
def test_a_reading_command_on_a_missing_home_says_so_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    typo = tmp_path / "ferex"
    code, out, err = run(typo, *args)
    assert code == 2, (out, err)
    assert "error [no_home]" in err and str(typo) in err and "does not exist" in err
    assert "Traceback" not in err and "0 memories" not in out
    assert not typo.exists()
    assert list(tmp_path.iterdir()) == []


def test_export_git_on_a_missing_home_creates_neither_home_nor_export(tmp_path: Path) -> None:
    code, _, err = run(tmp_path / "ferex", "export", "git", str(tmp_path / "audit"))
    assert code == 2 and "error [no_home]" in err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_empty_home_is_read_as_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    code, out, err = run(home, "stats", "--json")
    assert code == 0, err
    assert json.loads(out)["total"] == 0


def test_a_store_makes_a_new_home_and_forgetting_an_unknown_id_fails(tmp_path: Path) -> None:
    home = tmp_path / "new"
    code, out, err = run(home, "store", "--content", "The first memory of a new home", "--json")
    assert code == 0, err
    kept = json.loads(out)["id"]
    code, out, err = run(home, "stats", "--json")
    assert code == 0 and json.loads(out)["total"] == 1

    code, out, err = run(home, "forget", "mem_nope")
    assert code == 7, (out, err)
    assert "error [not_found]" in err and "mem_nope" in err
    code, out, err = run(home, "forget", "mem_nope", "--json")
    assert code == 7 and json.loads(out)["not_found"] == ["mem_nope"]
    code, out, err = run(home, "stats", "--json")
    assert json.loads(out)["total"] == 1  # nothing was forgotten

    code, out, err = run(home, "forget", kept, "mem_nope")
    assert code == 7 and f"forgot {kept}" in out and "1 other forgotten" in err
    code, out, err = run(home, "stats", "--json")
    assert json.loads(out)["total"] == 0
    code, out, err = run(home, "forget", kept)
    assert code == 7  # already forgotten: nothing to forget


def test_entity_commands_take_an_entity_id_as_well_as_a_name(tmp_path: Path) -> None:
    """A store answers the ids of the entities it resolved; ``entity merge`` takes them (it
    said "no entity 'ent_…'" for an id it had just given), and an unknown name's hint says
    how to name one."""
    home = tmp_path / "home"
    ids = []
    for subject, owner in (("search svc", "team Atlas"), ("search api", "team Nova")):
        code, out, err = run(home, "store", "--subject", subject, "--predicate", "owned by",
                             "--object", owner, "--json")  # fmt: skip
        assert code == 0, err
        ids.append(next(e["entity_id"] for e in json.loads(out)["entities"]
                        if e["name"] == subject))  # fmt: skip
    code, out, err = run(home, "entity", "merge", ids[0], ids[1], "--json")
    assert code == 0, err
    code, out, err = run(home, "entity", "differ", "search proxy", ids[0])
    assert code == 7 and "by its id" in err, err


def test_recall_and_reflect_name_a_possible_conflict_alike(tmp_path: Path) -> None:
    """Two facts that only may conflict (another wording of the relation) are shown as such
    by recall, the way reflect counts them; recall called them contradicted while reflect
    said no contradictions (a user trial)."""
    home = tmp_path / "home"
    for subject, predicate, obj in (
        ("billing service", "database", "PostgreSQL 14"),
        ("the billing service", "uses database", "PostgreSQL 16"),
    ):
        code, _, err = run(home, "store", "--subject", subject, "--predicate", predicate,
                           "--object", obj)  # fmt: skip
        assert code == 0, err
    code, out, err = run(home, "recall", "billing service database")
    assert code == 0, err
    lines = [line for line in out.splitlines() if "PostgreSQL" in line]
    assert len(lines) == 2 and all("may conflict with mem_" in line for line in lines), out
    assert "CONTRADICTED" not in out
    code, out, err = run(home, "reflect", "--json")
    attention = json.loads(out)
    assert attention["contradictions"] == [] and len(attention["possible_conflicts"]) == 1, out
