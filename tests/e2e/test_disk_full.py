"""A full disk: writes are refused (storage_full) before Qdrant Edge could die of SIGBUS, every
acknowledged store survives a restart, and once space is freed ferrex carries on unrepaired."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ferrex.storage import DEFAULT_RESERVE_BYTES, free_bytes
from tests.e2e.disk_helpers import ferrex, tmpfs

RESERVE = DEFAULT_RESERVE_BYTES

# One process storing until refused: prints each acknowledged id, then the refusal's code.
_STORER = """
import sys
from pathlib import Path
from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.rules.memory_input import StoreRequest

home = Path(sys.argv[1])
words = "alpha bravo cedar delta ember fjord gale harbor iris juniper kelp lumen".split()
app = App(home=home, config=load(home))
try:
    for i in range(100000):
        text = f"note {i}: " + " ".join(words[(i * k) % len(words)] for k in (1, 3, 5, 7))
        try:
            result = app.writer().store(StoreRequest(type="episodic", content=text))
        except FerrexError as exc:
            if exc.code == "duplicate":
                continue
            print("refused", exc.code, flush=True)
            break
        print("acked", result.id, flush=True)
finally:
    app.close()
"""


def _store_until_refused(home: Path) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-c", _STORER, str(home)], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"storer died ({done.returncode}): {done.stderr[-2000:]}"
    lines = done.stdout.split("\n")
    acked = [line.split()[1] for line in lines if line.startswith("acked ")]
    refused = [line.split()[1] for line in lines if line.startswith("refused ")]
    return acked, refused[0] if refused else ""


def test_store_until_full_then_recover(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "400m") as mnt:
        home = mnt / "home"
        home.mkdir(mode=0o700)
        (home / "ferrex.toml").write_text(f"[storage]\nreserve_bytes = {RESERVE}\n")
        first = ferrex(home, "store", "--content", "the first memory, before the disk fills")
        assert first.returncode == 0, first.stderr
        # Leave the reserve plus a little: room for some stores, then refusal.
        filler = mnt / "filler"
        with open(filler, "wb") as f:
            f.write(b"\0" * (free_bytes(home) - RESERVE - 256 * 1024))
            f.flush()
            os.fsync(f.fileno())

        acked, refused = _store_until_refused(home)
        assert refused == "storage_full"
        assert acked, "a few stores fit before the reserve"
        print(f"acked {len(acked)} stores before storage_full")

        denied = ferrex(home, "store", "--content", "one more through the CLI")
        assert denied.returncode == 9 and "error [storage_full]" in denied.stderr
        assert "free" in denied.stderr and "Traceback" not in denied.stderr

        # Restart: every acknowledged store is in the journal and the read model.
        shown = ferrex(home, "journal", "show")
        assert shown.returncode == 0, shown.stderr
        events = [e for line in shown.stdout.splitlines() for e in json.loads(line)["events"]]
        journaled = {e["memory_id"] for e in events if e["event"] == "memory.stored"}
        assert set(acked) <= journaled
        stats = ferrex(home, "stats", "--json")
        assert stats.returncode == 0, stats.stderr
        recovered = json.loads(stats.stdout)
        print(f"recovered after restart: {json.dumps(recovered)[:300]}")
        recall = ferrex(home, "recall", "note 1: bravo", "--json", "--limit", "3")
        assert recall.returncode == 0, recall.stderr
        assert json.loads(recall.stdout)["results"]

        # Free the space: ferrex carries on, nothing to repair.
        filler.unlink()
        again = ferrex(home, "store", "--content", "stored again after the disk was freed")
        assert again.returncode == 0, again.stderr
        verify = ferrex(home, "journal", "verify")
        assert verify.returncode == 0, verify.stderr
