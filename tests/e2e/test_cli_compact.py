"""`ferrex journal compact` end to end on the real stack: journal, SQLite read model, Qdrant
Edge, the embedding cache and the real model. After forget + compact, the forgotten text is
searched for in every file under the data directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from ferrex.models import Embedder, text_key
from journal import Journal, MemoriesForgotten
from journal.segment import list_segments
from projections.generations import read_pointer
from projections.qdrant_edge import EdgeBackend
from tests.strategies import stored

EPISODE = "Zanzibar-quokka-7731 is the vault passphrase for the staging cluster"
KEPT = "The nightly backup job runs at 02:00 on the Hetzner box"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("compact-home")
    ids = [
        _stored(home, "--content", KEPT),
        _stored(home, "--content", EPISODE),
        _stored(home, "--subject", "vault-gateway", "--predicate", "uses",
                "--object", "Okapi-keystore-5519 module"),
        _stored(home, "--name", "rotate Pangolin-8830 keys",
                "--step", "open the Pangolin-8830 console", "--step", "rotate every key"),
    ]  # fmt: skip
    old = _stored(home, "--content", "The release train leaves every Tuesday at Lemur-4410")
    _stored(home, "--content", "The release train now leaves on Thursdays", "--supersedes", old)
    code, _, err = run(home, "forget", *ids[1:])
    assert code == 0, err
    return home


@pytest.fixture(scope="module")
def needles(home: Path, shared_embedder: Embedder) -> dict[str, bytes]:
    """What must not survive a compaction, by name: texts, a text hash, a vector."""
    vector = np.asarray(shared_embedder.embed(EPISODE), dtype="<f4").tobytes()
    return {
        "episode": b"Zanzibar-quokka-7731",
        "fact": b"Okapi-keystore-5519",
        "procedure": b"Pangolin-8830",
        "episode-sha256": text_key(EPISODE),
        "episode-vector": vector[:48],
    }


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def _stored(home: Path, *args: str) -> str:
    code, out, err = run(home, "store", *args, "--json")
    assert code == 0, err
    return str(json.loads(out)["id"])


def hits(home: Path, needles: dict[str, bytes]) -> dict[str, list[str]]:
    """For every file under the data directory holding a needle: which ones."""
    found = {}
    for path in sorted(home.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            names = [name for name, needle in needles.items() if needle in data]
            if names:
                found[str(path.relative_to(home))] = names
    return found


def snapshot(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and "models" not in p.parts
    }


def compact_json(home: Path, *args: str) -> tuple[int, dict[str, object], str]:
    code, out, err = run(home, "journal", "compact", "--json", *args)
    return code, json.loads(out) if out else {}, err


def test_dry_run_reports_and_changes_nothing(home: Path, needles: dict[str, bytes]) -> None:
    # The probes find the text where forget left it: the journal, the read model's free
    # space, a deleted point's vector in Qdrant Edge, the embedding cache.
    where = hits(home, needles)
    assert any(f.startswith("journal/") and "episode" in n for f, n in where.items())
    assert any(f.startswith("readmodel-") and "episode" in n for f, n in where.items())
    assert any(f.startswith("qdrant/") and "episode-vector" in n for f, n in where.items())
    assert any(f.startswith("cache/") and "episode-sha256" in n for f, n in where.items())
    before = snapshot(home)
    code, doc, err = compact_json(home, "--dry-run")
    assert code == 0, err
    assert doc["dry_run"] is True and doc["changed"] is False
    assert len(doc["redacted"]) == 3 and doc["would_seal"] is True  # type: ignore[arg-type]
    assert doc["projections"] == {"state": "would rebuild", "generation": None, "error": None}
    assert snapshot(home) == before


def test_compact_purges_the_text_from_every_file(home: Path, needles: dict[str, bytes]) -> None:
    generation = read_pointer(home).generation  # type: ignore[union-attr]
    code, doc, err = compact_json(home)
    assert code == 0, err
    assert len(doc["redacted"]) == 3 and doc["sealed"]  # type: ignore[arg-type]
    assert doc["cache"]["rows_deleted"] >= 3  # type: ignore[index]
    assert doc["projections"]["state"] == "rebuilt"  # type: ignore[index]
    assert doc["projections"]["generation"] == generation + 1  # type: ignore[index]
    assert doc["verify"]["ok"] and doc["verify"]["redacted_bodies"] == 3  # type: ignore[index]
    assert doc["stray_files"] == []
    assert hits(home, needles) == {}
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0 and json.loads(out)["redacted_bodies"] == 3
    # The audit trail keeps each forgotten memory's store event and text hash, not its text.
    code, out, _ = run(home, "journal", "show", "--type", "memory.stored", "--json")
    events = [e for r in json.loads(out) for e in r["events"]]
    redacted = [e for e in events if e["event"] == "memory.stored" and "body" not in e]
    assert len(redacted) == 3 and all(len(e["body_hash"]) == 64 for e in redacted)
    # Superseded history is kept, and the projections rebuilt from the compacted journal work.
    assert b"Lemur-4410" in b"".join(snapshot(home).values())
    code, out, _ = run(home, "recall", "when does the backup job run", "--json")
    assert code == 0 and json.loads(out)["results"][0]["content"] == KEPT


def test_compacting_again_changes_nothing(home: Path) -> None:
    before = snapshot(home)
    code, out, err = run(home, "journal", "compact")
    assert code == 0, err
    assert "nothing to compact" in out and "projections" not in out
    assert snapshot(home) == before


def test_a_store_held_by_a_server_exits_5_and_a_rerun_finishes(home: Path) -> None:
    memory_id = _stored(home, "--content", "Aardvark-2291 is the break-glass account password")
    code, _, err = run(home, "forget", memory_id)
    assert code == 0, err
    needles = {"aardvark": b"Aardvark-2291"}
    live = read_pointer(home)
    assert live is not None
    held = EdgeBackend(home / "qdrant")  # as a running server in embedded mode would
    try:
        held.count(live.memories)
        code, doc, err = compact_json(home)
        assert code == 5 and "error [backend_unavailable]" in err
        assert doc["projections"]["state"] == "failed"  # type: ignore[index]
        assert len(doc["redacted"]) == 1 and doc["verify"]["ok"]  # type: ignore[arg-type,index]
        where = hits(home, needles)
        assert not any(f.startswith("journal/") for f in where)  # the journal is done
        assert any(f.startswith("readmodel-") for f in where)  # the projections are not
    finally:
        held.close()
    code, out, err = run(home, "journal", "compact")
    assert code == 0, err
    assert "projections: rebuilt" in out and "nothing to compact" not in out
    assert hits(home, needles) == {}


def test_sigkill_before_and_after_the_rebuild_then_a_rerun_finishes(home: Path) -> None:
    needles = {"wombat": b"Wombat-6620"}
    for crash_at in ("journal-compacted", "projections-rebuilt"):
        memory_id = _stored(home, "--content", f"Wombat-6620 opens the server room ({crash_at})")
        code, _, err = run(home, "forget", memory_id)
        assert code == 0, err
        done = _subprocess(home, crash_at)
        assert done.returncode == -signal.SIGKILL, done.stderr
        assert not any(f.startswith("journal/") for f in hits(home, needles))
        done = _subprocess(home)
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc["projections"]["state"] == "rebuilt" and not doc["redacted"]
        assert hits(home, needles) == {}
    done = _subprocess(home)
    assert done.returncode == 0 and json.loads(done.stdout)["changed"] is False


def _subprocess(home: Path, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FERREX_COMPACT_CRASH_AT"}
    if crash_at:
        env["FERREX_COMPACT_CRASH_AT"] = crash_at
    exe = str(Path(sys.executable).with_name("ferrex"))
    return subprocess.run(
        [exe, "--home", str(home), "journal", "compact", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


def test_a_damaged_journal_exits_3_and_nothing_changes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Journal.open(home / "journal", segment_bytes=2048) as journal:
        journal.append_batch([[stored(i)] for i in range(1, 40)])
        journal.append([MemoriesForgotten(memory_ids=("m2",), namespace="default")])
    _, first = list_segments(home / "journal")[0]
    data = bytearray(first.read_bytes())
    data[300] ^= 0xFF
    first.write_bytes(bytes(data))
    before = snapshot(home)
    code, out, err = run(home, "journal", "compact", "--json")
    assert code == 3 and out == "" and "error [journal.damaged]" in err and "hint:" in err
    code, out, err = run(home, "journal", "compact", "--dry-run")
    assert code == 3
    assert snapshot(home) == before


def test_usage_and_help(tmp_path: Path) -> None:
    code, _, err = run(tmp_path / "nowhere", "journal", "compact")
    assert code == 2 and "no journal" in err and not (tmp_path / "nowhere").exists()
    exe = str(Path(sys.executable).with_name("ferrex"))
    done = subprocess.run(
        [exe, "journal", "compact", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    for words in ("--dry-run", "--journal-only", "--json", "Exit codes", "superseded"):
        assert words in done.stdout
