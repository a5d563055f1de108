"""Building the vector indexes of embedded Qdrant Edge shards in a child process.

Edge's ``optimize`` holds the GIL and its shard for the whole build (seconds at 10k
memories, minutes at 1M): a server that ran it would answer nothing meanwhile. So a
server builds the indexes of *copies* of its collections in a child process, at a lower
priority, while it goes on serving the live ones, and switches the copies in after
(:mod:`projections.index_beside`). The child is this module run as
``python -m projections.indexing [--indexing-threshold-kb=N] ROOT NAME...``: it opens each
named shard under ROOT (taking its lock, as any process does), optimizes it, closes it, and
prints one JSON line, ``{"changed": {name: bool}}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from projections.vectors import VectorStoreError

NICE = 10
"""How much lower the child's CPU priority is than the server's: on two cores the build
takes what the server's calls leave."""


class ApartBuild:
    """Optimizes Edge shards under ``root`` in a child process, one build at a time;
    :meth:`cancel` kills a build in progress and refuses the ones after (a closing server
    does not wait minutes for a build it will not use)."""

    def __init__(self, root: Path, indexing_threshold_kb: int | None = None) -> None:
        self.root = root
        self.indexing_threshold_kb = indexing_threshold_kb  # the live backend's, if set
        self._lock = threading.Lock()
        self._child: subprocess.Popen[str] | None = None
        self._cancelled = False

    def __call__(self, names: list[str]) -> dict[str, bool]:
        """Whether each of ``names`` changed. Raises :class:`VectorStoreError` with the
        child's last words if it fails or was cancelled."""
        with self._lock:
            if self._cancelled:
                raise VectorStoreError("the index build was cancelled: ferrex is closing")
            threshold = self.indexing_threshold_kb
            given = [] if threshold is None else [f"--indexing-threshold-kb={threshold}"]
            child = self._child = subprocess.Popen(
                [sys.executable, "-m", "projections.indexing", *given, str(self.root), *names],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        try:
            out, err = child.communicate()
        finally:
            with self._lock:
                self._child = None
        if self._cancelled:
            raise VectorStoreError("the index build was cancelled: ferrex is closing")
        if child.returncode != 0:
            words = (err.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
            raise VectorStoreError(
                f"building the vector indexes of {', '.join(names)} failed: {words}"
            )
        try:
            changed = json.loads(out.strip().splitlines()[-1])["changed"]
        except (IndexError, ValueError, KeyError, TypeError) as exc:
            raise VectorStoreError(f"the index builder's answer is unreadable: {exc}") from exc
        return {str(k): bool(v) for k, v in changed.items()}

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._child is not None and self._child.poll() is None:
                self._child.kill()


def main(argv: list[str]) -> int:
    threshold: int | None = None
    if argv and argv[0].startswith("--indexing-threshold-kb="):
        threshold = int(argv.pop(0).partition("=")[2])
    if len(argv) < 2:
        print(
            "usage: python -m projections.indexing [--indexing-threshold-kb=N] ROOT NAME...",
            file=sys.stderr,
        )
        return 2
    os.nice(NICE)
    from projections.qdrant_edge import EdgeBackend

    backend = EdgeBackend(argv[0], indexing_threshold_kb=threshold)
    try:
        changed = {name: backend.optimize(name) for name in argv[1:]}
    except VectorStoreError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        backend.close()
    print(json.dumps({"changed": changed}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
