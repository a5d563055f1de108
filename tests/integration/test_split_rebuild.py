"""A split rebuild (the read model applied in a forked child) whose parent is killed:
the child stops on its own and the home heals at the next open. Real journal files, apsw,
Qdrant Edge and the bundled model, in a process of its own that is SIGKILLed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from journal import Journal
from projections.applying import BATCH
from projections.generations import read_pointer
from projections.qdrant_edge import EdgeBackend
from projections.reconcile import reconcile
from projections.replay import Projections
from projections.vector_sink import Encoders
from tests.integration.test_projections import memory

ROOT = Path(__file__).resolve().parents[2]

REBUILD_AND_DIE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from ferrex.parts import build_encoders
    from ferrex.models import Embedder, choose_embedding_model
    from journal import Journal
    from projections import replay, split_rebuild
    from projections.qdrant_edge import EdgeBackend

    home, model_home = Path(sys.argv[1]), Path(sys.argv[2])
    encoders = build_encoders(Embedder(model_home, choose_embedding_model("small", {})))
    split_rebuild.SPLIT_RECORDS = 0

    def die(done, total):
        # The forked child of this rebuild, then this process, killed without a word.
        children = set()
        for task in Path("/proc/self/task").iterdir():
            children |= set((task / "children").read_text().split())
        (home / "children").write_text(" ".join(sorted(children)))
        os.kill(os.getpid(), signal.SIGKILL)

    with Journal.open(home / "journal") as journal:
        replay.Projections.replay(home, journal, EdgeBackend(home / "qdrant"), encoders,
                                  progress=die)
    """
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # exited (a zombie until whoever adopted it reaps it)


def test_a_split_rebuild_whose_parent_is_killed_stops_its_child_and_heals(
    tmp_path: Path, encoders: Encoders, model_home: Path
) -> None:
    home = tmp_path
    with Journal.open(home / "journal") as journal:
        for i in range(3 * BATCH):
            journal.append([memory(f"m{i}", f"note {i}: the worker {i % 7} restarted")])
        backend = EdgeBackend(home / "qdrant")
        p = Projections.open(home, journal, backend, encoders)  # generation 1, one process
        live = p.live
        p.close()
        backend.close()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            [sys.executable, "-c", REBUILD_AND_DIE, str(home), str(model_home)],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert run.returncode == -9, run.stderr
        children = [int(pid) for pid in (home / "children").read_text().split()]
        assert len(children) == 1  # the read model's child was running
        polls = 0
        while not _gone(children[0]):  # it notices its parent is gone (pipe, or next batch)
            polls += 1
            assert polls < 6000, "the child outlived its parent"
            time.sleep(0.05)
        assert read_pointer(home) == live  # the killed rebuild never switched
        backend = EdgeBackend(home / "qdrant")
        p = Projections.open(home, journal, backend, encoders)
        assert p.live == live and p.read_model.checkpoint() == journal.head.position
        assert reconcile(p).clean
        p.close()
        backend.close()
