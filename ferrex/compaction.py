"""Forgetting for real: purge the text of forgotten memories from the whole data directory.

``forget`` takes a memory out of every projection at once, but copies of its text remain:
its body in the journal, the deleted row in the read model's free pages and WAL, the deleted
point's vectors in Qdrant Edge's segments and WAL, and its vector under the text's hash in the
embedding cache. ``ferrex journal compact`` removes all of them, in this order, chosen so
that a crash at any step leaves a rerun everything it needs:

1. under the journal's writer lock: verify the journal and plan (``journal.compact``);
2. drop the embedding cache's rows for those texts, by their hashes, and rewrite the cache
   file (the hashes can only be computed while the journal still holds the text);
3. still under the lock: scrub leftover files, seal the active segment if it holds text to
   redact, rewrite the segments (``journal.compact``);
4. lock released: rebuild the projections into a new generation from the compacted journal.
   The old read-model file and Qdrant shard directories are deleted with it: deleting rows
   and points is not enough, their bytes stay in free pages, segments and WALs;
5. record in ``compact.json`` the last forget whose traces the projections are purged of,
   so that a second run with nothing new forgotten rebuilds nothing.

Superseded versions are not purged: history is kept on purpose. Entity names are not
memory text and are kept.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ferrex.app import App, translated
from ferrex.errors import BackendUnavailable, FerrexError, JournalDamagedFailure
from ferrex.models import EmbeddingCache, cache_path, text_key
from journal import Journal, verify
from journal.compact import Plan, Progress, Report, Step, plan
from journal.compact import compact as compact_journal
from journal.files import private_opener
from journal.segment import fsync_dir
from journal.verify import VerifyReport
from projections.documents import memory_text, procedure_windows, text_parts
from projections.generations import read_pointer
from projections.readmodel.store import ReadModelError
from projections.vectors import VectorStoreError

log = logging.getLogger("ferrex")

STATE = "compact.json"
QDRANT_DIR = "qdrant"  # where App keeps the embedded Qdrant's shards
CRASH_ENV = "FERREX_COMPACT_CRASH_AT"
"""Testing hook: ``STEP`` or ``STEP:N`` kills the process (SIGKILL) the Nth time it reaches
STEP, so crash tests can stop a real compaction at each of its steps."""


class _State(msgspec.Struct, frozen=True):
    forgotten_through: int = 0
    """Position of the last forget whose traces the projections no longer hold."""


@dataclass
class Outcome:
    """What ``compact`` did (or, on a dry run, would do)."""

    dry_run: bool
    plan: Plan
    journal: Report | None = None
    cache_texts: int = 0
    """Distinct texts (and text windows) of the forgotten memories, looked up in the cache."""
    cache_rows: int = 0
    projections: str = "unchanged"
    """rebuilt | would rebuild | unchanged | skipped (--journal-only) | none | failed"""
    generation: int | None = None
    error: FerrexError | None = None
    check: VerifyReport | None = None
    seconds: float = 0.0
    strays: list[str] = field(default_factory=list)
    """Files of projections that are not live (a failed or running rebuild): not purged."""
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        j = self.journal
        journal_changed = j is not None and bool(
            j.segments or j.leftovers or j.sealed or j.temps_removed
        )
        return journal_changed or self.cache_rows > 0 or self.projections == "rebuilt"

    def as_dict(self) -> dict[str, Any]:
        p, j = self.plan, self.journal
        return {
            "dry_run": self.dry_run,
            "changed": self.changed,
            "forgotten_memories": len(p.forgotten),
            "redacted": [
                {"position": t.position, "memory_id": t.memory_id, "segment": t.segment.name}
                for t in p.targets
            ],
            "already_redacted": p.already_redacted,
            "segments_rewritten": [
                {
                    "segment": s.segment,
                    "positions": s.positions,
                    "bytes_before": s.bytes_before,
                    "bytes_after": s.bytes_after,
                }
                for s in (j.segments if j is not None else [])
            ],
            "segments_to_rewrite": [path.name for path in p.segments] if j is None else [],
            "sealed": j.sealed if j is not None else None,
            "would_seal": p.seal if j is None else False,
            "leftovers_scrubbed": [path.name for path in p.leftovers],
            "temps_removed": [path.name for path in p.stale_temps],
            "cache": {"texts": self.cache_texts, "rows_deleted": self.cache_rows},
            "projections": {
                "state": self.projections,
                "generation": self.generation,
                "error": None if self.error is None else self.error.as_dict(),
            },
            "verify": None
            if self.check is None
            else {
                "ok": self.check.ok,
                "head_position": self.check.head_position,
                "head_hash": self.check.head_hash.hex(),
                "redacted_bodies": self.check.redacted_bodies,
            },
            "stray_files": self.strays,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }


def compact(
    app: App,
    *,
    dry_run: bool = False,
    journal_only: bool = False,
    step: Step | None = None,
    progress: Progress | None = None,
    rebuild_progress: Progress | None = None,
) -> Outcome:
    """Purge forgotten text from the data directory (see the module docstring).

    Raises JournalFailure, changing nothing, when the journal does not verify. An error
    while rebuilding the projections (model missing, embedded Qdrant held by a running
    server) comes back in ``Outcome.error``: the journal is compacted by then, and a rerun
    finishes the purge.
    """
    started = time.perf_counter()
    directory = app.journal_dir
    if dry_run:
        with translated():
            found = plan(directory, progress)
        outcome = Outcome(True, found, cache_texts=len(_cache_keys(found, _window(app))))
        outcome.projections = (
            "would rebuild" if _projections_stale(app.home, found) else "unchanged"
        )
        _note_strays(app.home, outcome)
        outcome.seconds = time.perf_counter() - started
        return outcome

    cache_done: list[tuple[int, int]] = []

    def before_rewrite(found: Plan) -> None:
        report = verify(directory)
        if report.problem is not None:
            problem = report.problem
            raise JournalDamagedFailure(
                f"the journal does not verify ({problem.segment.name} offset "
                f"{problem.offset}: {problem.reason}); nothing was compacted",
                hint="run `ferrex journal verify`, then `ferrex journal repair`",
            )
        keys = _cache_keys(found, _window(app))
        rows = _forget_cached(app.home, keys)
        cache_done.append((len(keys), rows))
        _step(step, "cache-purged")

    with translated():
        journal = app.journal()
        # A journal on PostgreSQL is compacted by ``ferrex journal compact`` itself
        # (journal.postgres.compact): it has no segment files to rewrite.
        assert isinstance(journal, Journal)
        report = compact_journal(
            journal, before_rewrite=before_rewrite, step=step, progress=progress
        )
    _step(step, "journal-compacted")
    found = report.plan
    outcome = Outcome(False, found, report)
    outcome.cache_texts, outcome.cache_rows = cache_done[0] if cache_done else (0, 0)

    if journal_only:
        outcome.projections = "skipped" if _projections_stale(app.home, found) else "unchanged"
    elif _projections_stale(app.home, found):
        try:
            outcome.generation = _rebuild(app, rebuild_progress)
            outcome.projections = "rebuilt"
            _step(step, "projections-rebuilt")
        except FerrexError as exc:
            outcome.projections, outcome.error = "failed", exc
        if outcome.error is None:
            _write_state(app.home, _State(found.last_forget))
            _step(step, "state-written")
    elif read_pointer(app.home) is None and found.last_forget > _read_state(app.home):
        outcome.projections = "none"
        _write_state(app.home, _State(found.last_forget))

    _note_strays(app.home, outcome)
    outcome.check = verify(directory)
    if outcome.check.problem is not None:
        outcome.notes.append(f"verify after compaction: {outcome.check.problem.reason}")
    outcome.seconds = time.perf_counter() - started
    return outcome


def crash_hook(spec: str) -> Step:
    """The testing hook of :data:`CRASH_ENV`: SIGKILL at the Nth arrival at a step."""
    name, _, nth = spec.partition(":")
    wanted = int(nth) if nth else 1
    seen = [0]

    def step(reached: str) -> None:
        if reached == name:
            seen[0] += 1
            if seen[0] == wanted:
                os.kill(os.getpid(), signal.SIGKILL)

    return step


# -- the pieces ------------------------------------------------------------------------------


def _cache_keys(found: Plan, fits: Callable[[str], bool] | None) -> set[bytes]:
    """Hashes of every text the store or the projection may have embedded for a target.

    A text longer than the window was embedded in parts (``split_long``); those parts are
    found with ``fits``, the window of the configured model (None: it cannot be loaded, and
    only whole texts are purged from the cache; the rebuild still drops their points).
    """
    keys: set[bytes] = set()
    for target in found.targets:
        body = target.body
        text = memory_text(target.memory_type, body)
        keys.add(text_key(text))
        if body.object:
            keys.add(text_key(body.object))  # a fact's object is embedded on its own
        if target.memory_type == "procedural":
            keys.update(text_key(window) for window in procedure_windows(body))
        elif fits is not None:
            keys.update(text_key(part) for part in text_parts(text, fits))
    return keys


def _window(app: App) -> Callable[[str], bool] | None:
    try:
        return app.embedder().model().fits
    except FerrexError as exc:
        log.warning("ferrex: %s; parts of long memories stay in the embedding cache", exc)
        return None


def _forget_cached(home: Path, keys: set[bytes]) -> int:
    path = cache_path(home)
    if not keys or not path.exists():
        return 0
    cache = EmbeddingCache(path)
    try:
        return cache.forget(sorted(keys))
    finally:
        cache.close()


def _projections_stale(home: Path, found: Plan) -> bool:
    """Whether built projections may still hold traces of a forgotten memory."""
    return read_pointer(home) is not None and found.last_forget > _read_state(home)


def _rebuild(app: App, progress: Progress | None) -> int:
    """A new generation from the compacted journal; the old one's files are deleted.

    The live collections are opened first, which takes the embedded Qdrant's shard locks: a
    running server holding them is an error here, before anything is switched (otherwise
    the old generation could not be dropped after the switch, and its files would stay).
    """
    before = read_pointer(app.home)
    try:
        backend = app.backend()
        if before is not None:
            present = set(backend.collections())
            for name in (before.memories, before.entities):
                if name in present:
                    backend.count(name)
        opened = app.projections()
        if before is not None and opened.live.generation != before.generation:
            return opened.live.generation  # opening had to rebuild, from the compacted journal
        return app.replay(progress).live.generation
    except (VectorStoreError, ReadModelError) as exc:
        raise BackendUnavailable(
            f"cannot rebuild the projections: {exc}",
            hint="stop the ferrex process using this data directory (embedded Qdrant is one "
            "process at a time), then run `ferrex journal compact` again",
        ) from exc


def _note_strays(home: Path, outcome: Outcome) -> None:
    """Read models and Qdrant shards of no live generation: a rebuild that failed after
    its switch, or one running in another process right now. They may hold forgotten text;
    deleting them is left to the operator, who knows which is the case."""
    live = read_pointer(home)
    keep = {live.sqlite, live.memories, live.entities} if live is not None else set()
    strays = [
        p
        for p in home.glob("*.sqlite*")
        if p.name.startswith(("readmodel-", "reconcile-"))
        and p.name.removesuffix("-wal").removesuffix("-shm") not in keep
    ]
    qdrant = home / QDRANT_DIR
    if qdrant.is_dir():
        strays += [p for p in qdrant.iterdir() if p.is_dir() and p.name not in keep]
    outcome.strays = sorted(str(p.relative_to(home)) for p in strays)
    if outcome.strays:
        outcome.notes.append(
            f"{len(outcome.strays)} {'file' if len(outcome.strays) == 1 else 'files'} of "
            "projections that are not live may still hold "
            "forgotten text (a rebuild that failed, or one running now): "
            f"{', '.join(outcome.strays)}; delete them when no ferrex process is rebuilding"
        )


def _read_state(home: Path) -> int:
    path = home / STATE
    if not path.exists():
        return 0
    try:
        return msgspec.json.decode(path.read_bytes(), type=_State).forgotten_through
    except msgspec.DecodeError:
        return 0  # unreadable: purge again, which is only redundant


def _write_state(home: Path, state: _State) -> None:
    tmp = home / (STATE + ".tmp")
    with open(tmp, "wb", opener=private_opener) as f:
        f.write(msgspec.json.encode(state))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, home / STATE)
    fsync_dir(home)


def _step(step: Step | None, name: str) -> None:
    if step is not None:
        step(name)
