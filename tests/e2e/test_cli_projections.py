"""`ferrex replay`, `reconcile` (and `audit reconcile`), `optimize`: end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from ferrex.cli import projections as projections_cli
from journal import EntityCreated, Journal, MemoryBody, MemoryStored, MemorySuperseded
from projections.generations import read_pointer
from tests.strategies import T0


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return seeded(tmp_path_factory.mktemp("cli-home"))


def seeded(home: Path) -> Path:
    with Journal.open(home / "journal") as journal:
        journal.append(
            [EntityCreated(entity_id="e1", namespace="default", name="Tokio", normalized="tokio")]
        )
        journal.append_batch(
            [
                [
                    MemoryStored(
                        memory_id=f"m{i}",
                        namespace="default",
                        memory_type="episodic",
                        t_valid=T0,
                        entity_ids=("e1",),
                        body=MemoryBody(content=f"deploy {i} of api-server went out with v2.{i}"),
                    )
                ]
                for i in range(20)
            ]
        )
        journal.append(
            [
                MemorySuperseded(
                    memory_id="m0", namespace="default", t_invalid=T0, superseded_by="m1"
                )
            ]
        )
    return home


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_replay_builds_a_new_generation_each_time(home: Path) -> None:
    code, out, _ = run(home, "replay", "--json")
    first = json.loads(out)
    assert code == 0 and first["records"] == 22 and first["memories"] == 20
    code, out, _ = run(home, "replay", "--json")
    second = json.loads(out)
    assert code == 0 and second["generation"] == first["generation"] + 1
    live = read_pointer(home)
    assert live is not None and live.generation == second["generation"]
    assert not (home / first["sqlite"]).exists(), "the old generation is dropped"
    code, out, _ = run(home, "replay")
    assert code == 0 and "replayed 22 records (20 memories)" in out


def test_reconcile_clean_then_drift_then_fix(home: Path) -> None:
    code, out, _ = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"]
    code, out, _ = run(home, "audit", "reconcile")
    assert code == 0 and "no drift" in out
    # Damage the read model behind ferrex's back: a superseded fact made valid again.
    live = read_pointer(home)
    assert live is not None
    db = apsw.Connection(str(home / live.sqlite))
    db.execute("UPDATE memories SET t_invalid=NULL, superseded_by=NULL WHERE memory_id='m0'")
    db.close()
    code, out, _ = run(home, "reconcile", "--json")
    doc = json.loads(out)
    assert code == 6 and not doc["clean"] and doc["sqlite_rows"]["examples"] == ["m0"]
    code, out, _ = run(home, "reconcile", "--fix")
    assert code == 0 and "no drift" in out
    code, out, _ = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"]


def test_optimize(home: Path) -> None:
    code, out, _ = run(home, "optimize", "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc["optimized"]) == {
        read_pointer(home).memories,  # type: ignore[union-attr]
        read_pointer(home).entities,  # type: ignore[union-attr]
    }


def test_a_replay_of_a_large_home_ends_by_building_the_vector_indexes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(home, "replay", "--json")
    assert code == 0 and json.loads(out)["indexed"] is None  # 20 memories: below the gate
    monkeypatch.setattr(projections_cli, "INDEX_AFTER", 20)
    code, out, err = run(home, "replay", "--json")
    doc = json.loads(out)
    live = read_pointer(home)
    assert code == 0 and live is not None and live.generation == doc["generation"]
    assert set(doc["indexed"]["collections"]) == {live.memories, live.entities}
    code, out, err = run(home, "replay")
    assert code == 0 and "vector indexes" in err
    code, out, _ = run(home, "replay", "--json", "--no-index")
    assert code == 0 and json.loads(out)["indexed"] is None


def test_deleted_qdrant_dir_is_restored_on_the_next_command(home: Path) -> None:
    shutil.rmtree(home / "qdrant")
    code, out, err = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"]
    assert "collection is missing" in err and "rebuilding" in err


def test_as_a_subprocess_with_help(home: Path) -> None:
    exe = str(Path(sys.executable).with_name("ferrex"))
    done = subprocess.run(
        [exe, "--home", str(home), "reconcile", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["clean"]
    for command in ("replay", "reconcile", "optimize"):
        done = subprocess.run([exe, command, "--help"], capture_output=True, text=True, check=False)
        assert done.returncode == 0 and "Usage" in done.stdout


def test_reembed_switches_model_and_records_it(tmp_path: Path) -> None:
    home = seeded(tmp_path / "home")
    code, out, _ = run(home, "replay", "--json")
    assert code == 0
    before = read_pointer(home)
    assert before is not None
    # A second model: the same weights from another directory have another identity.
    other = tmp_path / "other-minilm"
    shutil.copytree(
        Path(os.environ["FERREX_CACHE_DIR"]) / "models" / "all-MiniLM-L6-v2-int8", other
    )

    code, _, err = run(home, "reembed", "--model", "mid")  # not downloadable here
    assert code == 4 and "bge-small" in err
    assert read_pointer(home) == before, "a failed re-embed changes nothing"

    code, out, _ = run(home, "reembed", "--model", str(other), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["records"] == 22 and "other-minilm" in doc["model"]
    after = read_pointer(home)
    assert after is not None and after.generation == before.generation + 1
    assert "other-minilm" in after.encoders and after.memories != before.memories
    assert str(other) in (home / "ferrex.toml").read_text()
    code, out, _ = run(home, "config", "show", "--json")
    settings = {row["key"]: row for row in json.loads(out)["settings"]}
    assert settings["models.dense"]["value"] == str(other)
    assert settings["models.dense"]["origin"].endswith("ferrex.toml")
    # The next command starts on the new model without rebuilding anything.
    code, out, _ = run(home, "reconcile", "--json")
    assert code == 0 and json.loads(out)["clean"] and read_pointer(home) == after
