"""A full disk: writes are refused (storage_full) before Qdrant Edge could die of SIGBUS, every
acknowledged store survives a restart, and once space is freed ferrex carries on unrepaired."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ferrex.home_safety import (
    DEFAULT_RESERVE_BYTES,
    MIB,
    QDRANT_FILE_BYTES,
    free_bytes,
    unallocated_bytes,
)
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


def _fill(where: Path) -> Path:
    """Write a file under ``where`` until the disk refuses another byte."""
    filler = where / "filler-to-the-brim"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size = 1024 * 1024
        while size:
            try:
                os.write(fd, b"\0" * size)
            except OSError:
                size //= 2
        os.fsync(fd)
    finally:
        os.close(fd)
    return filler


def _generations(home: Path) -> list[str]:
    """What the home holds, but SQLite's own -wal and -shm files (made empty on opening)."""
    return sorted(p.name for p in home.iterdir() if not p.name.endswith(("-wal", "-shm")))


def _journaled(home: Path) -> int:
    shown = ferrex(home, "journal", "show")
    assert shown.returncode == 0, shown.stderr
    return len(shown.stdout.splitlines())


# A server's process: its stores open before the disk fills, then one call per line of stdin
# (a JSON [tool, args]); prints each answer, or the refusal's code, as one JSON line.
_SERVER = """
import json, sys
from pathlib import Path
from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode

home = Path(sys.argv[1])
service = Service(App(home=home, config=load(home)))
caller = Caller()
service.call(decode("store", {"content": "The staging cluster restarts on Fridays"}), caller)
service.call(decode("recall", {"query": "staging cluster"}), caller)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    tool, args = json.loads(line)
    try:
        answer = {"ok": service.call(decode(tool, args), caller)}
    except FerrexError as exc:
        answer = {"error": exc.code}
    except Exception as exc:
        answer = {"internal": repr(exc)}
    print(json.dumps(answer), flush=True)
service.close()
"""


def test_a_full_disk_refuses_a_servers_stores_and_its_recalls_still_answer(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "mnt", "300m") as mnt:
        home = mnt / "home"
        server = subprocess.Popen([sys.executable, "-c", _SERVER, str(home)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        try:
            assert json.loads(server.stdout.readline()) == {"ready": True}
            records = _journaled(home)
            _fill(mnt)
            assert free_bytes(home) < 64 * 1024

            def call(tool: str, args: dict[str, object]) -> dict[str, object]:
                assert server.stdin is not None and server.stdout is not None
                server.stdin.write(json.dumps([tool, args]) + "\n")
                server.stdin.flush()
                answer: dict[str, object] = json.loads(server.stdout.readline())
                return answer

            # Texts never embedded before: the cache's write is the first to meet the full disk.
            assert call("store", {"content": "A text the cache has not seen"}) == {
                "error": "storage_full"
            }
            found = call("recall", {"query": "when does the staging cluster restart"})
            assert "ok" in found, found
            ok = found["ok"]
            assert isinstance(ok, dict)
            contents = [r["content"] for r in ok["results"]]
            assert "The staging cluster restarts on Fridays" in contents
            assert call("stats", {})["ok"]
            assert _journaled(home) == records
        finally:
            server.stdin.close()
            server.wait(timeout=120)
            server.stdout.close()


def _leave_free(filler: Path, left: int) -> None:
    """Give back ``left`` bytes of a disk ``_fill`` filled."""
    if left:
        os.truncate(filler, filler.stat().st_size - left)


@pytest.mark.parametrize("left", [0, 48 * 1024, 1024 * 1024], ids=["0", "48KiB", "1MiB"])
def test_a_nearly_full_disk_gives_a_new_process_storage_full(tmp_path: Path, left: int) -> None:
    with tmpfs(tmp_path / "mnt", "300m") as mnt:
        home = mnt / "home"
        first = ferrex(home, "store", "--content", "The staging cluster restarts on Fridays")
        assert first.returncode == 0, first.stderr
        records = _journaled(home)
        _leave_free(_fill(mnt), left)
        assert free_bytes(home) < left + 64 * 1024
        before = _generations(home)

        # With no byte free a fresh process cannot open SQLite's shared memory; with a few
        # pages it can, and then neither the embedding cache nor Qdrant Edge's shards may be
        # opened (Edge touching a sparse page of a full tmpfs is a SIGBUS): each command says
        # so plainly, and nothing is rebuilt or left behind.
        for args in (("store", "--content", "A text the cache has not seen"),
                     ("recall", "when does staging restart")):  # fmt: skip
            done = ferrex(home, *args)
            assert "Traceback" not in done.stderr, done.stderr
            assert done.returncode == 9, done.stderr
            assert "error [storage_full]" in done.stderr
        assert _generations(home) == before
        assert _journaled(home) == records


def test_a_new_process_opens_the_shards_with_just_the_room_they_take(tmp_path: Path) -> None:
    """Below the reserve, a fresh process still recalls when the disk holds what opening the
    shards can take (the estimate is enough: were it short, the process would die of SIGBUS)."""
    with tmpfs(tmp_path / "mnt", "300m") as mnt:
        home = mnt / "home"
        first = ferrex(home, "store", "--content", "The staging cluster restarts on Fridays")
        assert first.returncode == 0, first.stderr
        shards = [p for p in (home / "qdrant").iterdir() if p.is_dir()]
        assert shards
        wanted = sum(unallocated_bytes(p, shorter_than=QDRANT_FILE_BYTES // 2) for p in shards)
        assert wanted > 0, "a fresh shard's smaller files are sparse until first opened"
        _leave_free(_fill(mnt), wanted + 8 * MIB)
        assert free_bytes(home) < RESERVE
        found = ferrex(home, "recall", "what day does staging restart", "--json")
        assert found.returncode == 0, found.stderr
        contents = [r["content"] for r in json.loads(found.stdout)["results"]]
        assert "The staging cluster restarts on Fridays" in contents


def test_without_a_reserve_a_full_disk_is_storage_full_not_internal(tmp_path: Path) -> None:
    """With ``storage.reserve_bytes = 0`` nothing refuses a write early: the full disk is met
    by SQLite (or a file write) itself, and that is still told as ``storage_full``; every
    acknowledged store is in the journal, and once space is freed ferrex carries on."""
    with tmpfs(tmp_path / "mnt", "300m") as mnt:
        home = mnt / "home"
        home.mkdir()
        (home / "ferrex.toml").write_text("[storage]\nreserve_bytes = 0\n")
        server = subprocess.Popen([sys.executable, "-c", _SERVER, str(home)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        answers: list[dict[str, object]] = []
        try:
            assert json.loads(server.stdout.readline()) == {"ready": True}
            filler = _fill(mnt)
            for tool, args in (
                ("store", {"content": "A text the cache has not seen"}),
                ("recall", {"query": "when does the staging cluster restart"}),
                ("store", {"content": "Another new text: the GPU quota of team vision"}),
            ):
                server.stdin.write(json.dumps([tool, args]) + "\n")
                server.stdin.flush()
                answers.append(json.loads(server.stdout.readline()))
        finally:
            server.stdin.close()
            server.wait(timeout=120)
            server.stdout.close()
        assert not [a for a in answers if "internal" in a], answers
        assert {"error": "storage_full"} in answers, answers
        filler.unlink()
        again = ferrex(home, "recall", "--json", "staging cluster restarts")
        assert again.returncode == 0, again.stderr
        contents = [r["content"] for r in json.loads(again.stdout)["results"]]
        assert "The staging cluster restarts on Fridays" in contents
        assert ferrex(home, "journal", "verify").returncode == 0
