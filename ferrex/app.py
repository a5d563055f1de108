"""The composition root: resolves the data directory and opens what a command needs.

Both the MCP server and the CLI go through here; neither opens files, models or stores
itself. Everything is opened lazily (on first use) so that start-up stays fast.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ferrex.config import Config
from ferrex.errors import (
    BackendUnavailable,
    Busy,
    FerrexError,
    StorageFull,
    UsageError,
    from_journal_error,
)
from ferrex.home_safety import (
    check_copy_room,
    check_open_room,
    check_rebuild_room,
    check_reserve,
    is_read_only,
    read_only_error,
    secure_home,
)
from ferrex.ownership import Endpoint, try_lock
from ferrex.parts import build_encoders, build_rules, remote_settings
from journal import (
    Journal,
    JournalBackend,
    JournalError,
    RepairEntry,
    plan_repair,
    repair,
)
from journal.errors import JournalUnavailable
from journal.files import create_private_file, fsync_dir
from projections.vectors import EmbeddedVectors, VectorBackend, VectorStoreError

# What opens models, SQLite and the vector store is imported where it is first opened: the
# bare ``ferrex`` (an MCP client's stdio server) builds an App before it answers
# ``initialize``, and importing these (numpy, apsw, the read and write sides) would delay it.
if TYPE_CHECKING:
    from ferrex.models import Embedder, EmbeddingCache
    from ferrex.models.rerank import RerankStage
    from ferrex.read.access import AccessLog
    from ferrex.read.recall import Reader
    from ferrex.read.request import RecallRequest, RecallResult
    from ferrex.write.writer import Writer
    from projections.applying import Progress
    from projections.indexing import ApartBuild
    from projections.replay import Projections
    from projections.sidecar import Sidecar
    from projections.sqlite import ReadModel
    from projections.vector_sink import Encoders

REPLAY_NEEDED = "replay-needed"
"""A file in the home, made before a journal repair removes records and removed once the
projections are rebuilt from the repaired journal: while it is there, opening the
projections rebuilds them instead of serving what they still hold of the removed records
(a repair whose rebuild was interrupted heals at the next start)."""
log = logging.getLogger("ferrex")


@contextmanager
def translated() -> Iterator[None]:
    """Third-party and lower-layer errors become ferrex errors once, here."""
    from projections.readmodel.store import ReadModelError, ReadModelFull

    try:
        yield
    except JournalUnavailable as exc:  # PostgreSQL away: nothing half-written, retry later
        raise BackendUnavailable(exc.message, hint=exc.hint) from exc
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    except ReadModelFull as exc:  # SQLite met a full disk (storage.reserve_bytes = 0)
        raise _disk_full("the read model (SQLite)") from exc
    except (VectorStoreError, ReadModelError) as exc:
        raise BackendUnavailable(str(exc)) from exc
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise _disk_full(exc.filename or "a file of the data directory") from exc


def _disk_full(what: str) -> StorageFull:
    """A write that met a full disk below the free-space reserve (none kept when
    ``storage.reserve_bytes`` is 0): the journal holds whatever was acknowledged."""
    return StorageFull(
        f"the disk is full: {what} could not be written",
        hint="free some space and try again; whatever was acknowledged is in the journal, and "
        "a store answered with this error that did reach it is recognised as a duplicate when "
        "sent again. storage.reserve_bytes keeps room so that writes are refused before this",
    )


@dataclass
class App:
    """Everything a command can use, opened on first use and closed by :meth:`close`."""

    home: Path
    config: Config
    _journal: JournalBackend | None = field(default=None, repr=False)
    _embedder: Embedder | None = field(default=None, repr=False)
    _backend: VectorBackend | None = field(default=None, repr=False)
    _projections: Projections | None = field(default=None, repr=False)
    _writer: Writer | None = field(default=None, repr=False)
    _sidecar: Sidecar | None = field(default=None, repr=False)
    _reranker: RerankStage | None = field(default=None, repr=False)
    _reader: Reader | None = field(default=None, repr=False)
    _access: AccessLog | None = field(default=None, repr=False, init=False)
    _access_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, init=False)
    _owner_fd: int | None = field(default=None, repr=False)
    _indexing: ApartBuild | None = field(default=None, repr=False, init=False)
    _index_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, init=False)
    _indexing_cancelled: bool = field(default=False, repr=False, init=False)
    before_model_load: Callable[[], None] | None = field(default=None, repr=False)
    """Called just before the embedding model loads (the CLI's "loading model…")."""
    read_only: bool = field(default=False, init=False)
    """The home is on a read-only file system: reading commands work, writes get
    ``read_only`` (see ferrex.home_safety)."""

    def __post_init__(self) -> None:
        self.read_only = is_read_only(self.home)
        if not self.read_only:
            secure_home(self.home)  # 0700/0600, and one line on stderr if it was not

    @property
    def access(self) -> AccessLog:
        """The recall hits counted and not yet journaled (made at the first use)."""
        with self._access_lock:
            if self._access is None:
                from ferrex.read.access import AccessLog

                self._access = AccessLog()
            return self._access

    def claim(self) -> bool:
        """Take the data directory's owner lock (``run/owner.lock``) without waiting.

        The process holding it is the only one that opens the stores (see ferrex.server.hub);
        it is released by :meth:`close`. False when another process holds it. A read-only home has
        no lock to take and no writer to defer to: this process may open its stores to read.
        """
        if self.read_only:
            return True
        if self._owner_fd is None:
            self._owner_fd = try_lock(self.home)
        return self._owner_fd is not None

    def require_ownership(self) -> None:
        """Refused (``busy``) while another process owns the stores: a command that opens
        them itself (an import) asks before it loads a model, so the refusal comes at once."""
        if self.claim():
            return
        endpoint = Endpoint.read(self.home)
        owner = f" (pid {endpoint.pid})" if endpoint is not None else ""
        raise Busy(
            f"another ferrex process{owner} is using the stores of {self.home}",
            hint="this command needs the data directory to itself: stop the MCP servers that "
            "use it (close their clients) and run it again",
        )

    @property
    def journal_dir(self) -> Path:
        return self.home / "journal"

    @property
    def journal_url(self) -> str | None:
        """The PostgreSQL journal's URL (``journal.url``); None: the files in journal_dir."""
        url: str | None = self.config["journal.url"]
        return url or None

    def journal(self) -> JournalBackend:
        if self._journal is None:
            url = self.journal_url
            with translated():
                if url is not None:
                    from journal.pg_connect import is_url
                    from journal.postgres import PostgresJournal

                    if not is_url(url):
                        raise UsageError(
                            "journal.url must be a postgresql:// URL",
                            hint="unset it to keep the journal in files under the data directory",
                        )
                    journal = PostgresJournal.open(url)
                    try:
                        self._refuse_another_log(journal)
                    except BaseException:
                        journal.close()
                        raise
                    self._journal = journal
                else:
                    self._journal = Journal.open(
                        self.journal_dir, segment_bytes=self.config["journal.segment_bytes"]
                    )
        return self._journal

    def journal_to_verify(self) -> JournalBackend:
        """The journal for ``verify`` (which reads only): the one open already; else the
        PostgreSQL one, opened; else the files, *not* opened, since opening recovers, and a
        torn tail is what verify must report, not cut. Only ``verify`` may be asked of an
        unopened file journal."""
        if self._journal is not None or self.journal_url is not None:
            return self.journal()
        return Journal(self.journal_dir)

    def _refuse_another_log(self, journal: JournalBackend) -> None:
        """A data directory that also holds a journal in files must hold the start of the
        PostgreSQL one: its projections were built from that log, and catching them up with
        another would mix two memories."""
        if not any(self.journal_dir.glob("*.seg")):
            return
        # Reads the first frame only: the file journal is not opened (nor locked, nor cut).
        here = Journal(self.journal_dir).first()
        there = journal.first()
        if here is None or (there is not None and there.hash == here.hash):
            return
        raise UsageError(
            f"{self.home} holds a journal in files (journal/) that is not the start of the "
            "journal at journal.url: its projections were built from another log",
            hint="to move it there, unset journal.url and run `ferrex journal copy --to URL`; "
            "to use the PostgreSQL journal instead, move journal/ out of the data directory "
            "and run `ferrex replay`",
        )

    def embedder(self) -> Embedder:
        if self._embedder is None:
            from ferrex.models import Embedder
            from ferrex.models.remote import recorded_identity
            from projections.generations import read_pointer

            live = read_pointer(self.home)
            self._embedder = Embedder.from_env(
                self.home,
                self.config["models.dense"],
                remote=remote_settings(self.config),
                recorded=recorded_identity(live.encoders) if live is not None else None,
            )
            self._embedder.before_load = self.before_model_load
        return self._embedder

    def embedder_for(self, model: str) -> Embedder:
        """An embedder of another model (``ferrex reembed``), with this configuration's
        embeddings server settings."""
        from ferrex.models import Embedder

        return Embedder.from_env(self.home, model, remote=remote_settings(self.config))

    def _refuse_mixing(self) -> None:
        """A model other than the one the live collection was built with is refused, not
        re-embedded behind the user's back, when either is a server's model (its identity:
        dimension, probe fingerprint, name): every memory would go through the server, or
        a collection made by a server would be dropped for a local model's. The refusal
        names ``ferrex reembed``, which does it. Between local models (the bundled model's
        tiers, ``small-float`` -> ``small`` on an upgrade) the projections are rebuilt as
        before, from the journal, saying so."""
        from ferrex.models.remote import PREFIX, mismatch_error, recorded_identity
        from projections.generations import read_pointer

        embedder = self.embedder()
        live = read_pointer(self.home)
        recorded = recorded_identity(live.encoders) if live is not None else None
        if recorded is None or not (embedder.is_remote or recorded.name.startswith(PREFIX)):
            return
        current = embedder.identity
        if recorded != current:
            raise mismatch_error(recorded, current, embedder.choice.setting)

    def encoders(self) -> Encoders:
        return build_encoders(self.embedder(), self.config["store.embed_context"])

    def backend(self) -> VectorBackend:
        if self._backend is None:
            self.require_ownership()
            try:
                url = self.config["qdrant.url"]
                binary = self.config["qdrant.binary"]
                if not url and binary:
                    from projections.sidecar import Sidecar

                    self._sidecar = Sidecar(
                        Path(binary).expanduser(),
                        self.home / "qdrant-server",
                        self.home / "run",
                        self.config["qdrant.port"],
                    )
                    url = self._sidecar.ensure()
                if url:
                    try:
                        from projections.qdrant_server import ClientBackend
                    except ImportError as exc:  # an optional extra (pyproject.toml)
                        raise BackendUnavailable(
                            f"a Qdrant server is configured ({url}) but {exc.name} is not "
                            "installed",
                            hint="pip install 'ferrex[qdrant-server]', or unset qdrant.url "
                            "and qdrant.binary to use the embedded Qdrant Edge",
                        ) from exc
                    self._backend = ClientBackend(url=url)
                else:
                    from projections.qdrant_edge import EdgeBackend

                    reserve = self.config["storage.reserve_bytes"]
                    self._backend = EdgeBackend(
                        self.home / "qdrant",
                        before_open=lambda shard: check_open_room(self.home, reserve, shard),
                    )
            except VectorStoreError as exc:
                raise BackendUnavailable(str(exc)) from exc
        return self._backend

    def projections(self, progress: Progress | None = None) -> Projections:
        """The live projections, caught up with the journal (rebuilt first if they must be)."""
        if self._projections is None:
            if self.read_only and not self.config["qdrant.url"]:
                raise read_only_error(
                    self.home,
                    "open the embedded Qdrant Edge store, which maps its files for writing "
                    "(recall, stats and reflect need it; journal verify, journal show and "
                    "export git and jsonl do not)",
                )
            from projections.replay import Projections

            reserve = self.config["storage.reserve_bytes"]
            marker = self.home / REPLAY_NEEDED
            rebuilt: list[str] = []

            def before_build(why: str) -> None:
                check_rebuild_room(self.home, reserve, why)
                rebuilt.append(why)

            with translated():
                if marker.exists():
                    reason = "a journal repair removed records the projections still hold"
                    log.warning("projections: rebuilding from the journal: %s", reason)
                    check_rebuild_room(self.home, reserve, reason)
                else:
                    self._refuse_mixing()
                stores = (self.home, self.journal(), self.backend(), self.encoders())
                rules = build_rules(self.config)
                if marker.exists():
                    self._projections = Projections.replay(*stores, rules=rules, progress=progress)
                    marker.unlink()
                    fsync_dir(self.home)
                    rebuilt.append(reason)
                else:
                    self._projections = Projections.open(
                        *stores, rules=rules, progress=progress, before_build=before_build
                    )
            if rebuilt:
                _trim_heap()
        return self._projections

    def planned_repair(self) -> RepairEntry | None:
        """What ``journal repair`` would set aside in the file journal (the first damaged
        span), changing nothing; None when the journal verifies. Raises what
        :func:`journal.plan_repair` raises (a ``JournalError``)."""
        return plan_repair(self.journal_dir)

    def open_cache(self) -> EmbeddingCache | None:
        """The home's embedding cache, opened for a look (the caller closes it); None when
        there is none, or on a read-only home (SQLite cannot open its WAL there)."""
        from ferrex.models import EmbeddingCache, cache_path

        path = cache_path(self.home)
        if not path.is_file() or self.read_only:
            return None
        return EmbeddingCache(path)

    def repair_journal(self, progress: Progress | None = None) -> RepairEntry | None:
        """``journal repair --apply`` on the file journal: set the first damaged span aside
        (:func:`journal.repair`), then rebuild the projections from the repaired journal, so
        that nothing of a removed record is served. None when nothing needed repair.

        Refused (``busy``, nothing changed) while another process owns the stores. The
        rebuild is owed from before the journal changes (:data:`REPLAY_NEEDED`): if it is
        interrupted, the next command that opens the projections rebuilds them first.
        """
        if self.read_only:
            raise read_only_error(self.home, "repair the journal")
        if self._projections is not None or self._journal is not None:
            raise RuntimeError("repair_journal runs before the journal is opened")
        from projections.generations import read_pointer

        self.require_ownership()
        built = read_pointer(self.home) is not None
        marker = self.home / REPLAY_NEEDED
        with translated():
            if built and plan_repair(self.journal_dir) is not None:
                create_private_file(marker)
                fsync_dir(self.home)
            entry = repair(self.journal_dir)
        if marker.exists():
            self.projections(progress)  # rebuilds, then removes the marker
        return entry

    def journal_read_model(self, path: Path, progress: Progress | None = None) -> ReadModel:
        """A read model of the journal as it stands now, built at ``path`` from the journal
        alone (``projections.generations.read_model_at``): no vectors and no owner lock, so a
        process may read it while a server owns the stores. The caller closes it."""
        from projections.generations import read_model_at

        journal = self.journal()
        with translated():
            position = journal.refresh().position
            return read_model_at(
                journal, path, position, rules=build_rules(self.config), progress=progress
            )

    def writer(self) -> Writer:
        """The command side: store, forget, validate."""
        if self.read_only:
            raise read_only_error(self.home, "store, forget or validate memories")
        if self._writer is None:
            from ferrex.core.settings import StoreSettings
            from ferrex.write.writer import Writer

            settings = StoreSettings.from_config(self.config)
            reserve = self.config["storage.reserve_bytes"]
            self._writer = Writer(
                self.journal(),
                self.projections(),
                self.embedder(),
                settings,
                # Checked under the writer lock before every write (ferrex.core.runner).
                before_write=lambda: check_reserve(self.home, reserve),
            )
        return self._writer

    def reranker(self) -> RerankStage:
        if self._reranker is None:
            from ferrex.models import downloads_allowed
            from ferrex.models.rerank import choose_reranker, load_reranker

            choice = choose_reranker(self.config["models.reranker"], {})
            self._reranker = load_reranker(
                choice,
                self.home,
                allow_download=downloads_allowed(os.environ),
                late_weight=self.config["recall.late_weight"],
            )
        return self._reranker

    def reader(self) -> Reader:
        """The query side: recall (hits are counted in the access log)."""
        if self._reader is None:
            from ferrex.read.recall import Reader
            from ferrex.read.request import RecallSettings

            settings = RecallSettings.from_config(self.config)
            self._reader = Reader(
                self.projections(), self.embedder(), self.reranker(), settings, self.access
            )
        return self._reader

    def recall(self, request: RecallRequest, validate_ids: Sequence[str] = ()) -> RecallResult:
        """Recall; ``validate_ids``: results of this recall the agent confirms as correct."""
        result = self.reader().recall(request)
        if validate_ids:
            shown = [r["id"] for r in result.results]
            self.writer().validate_shown(validate_ids, shown, caller=request.agent_id)
        return result

    def flush_access(self) -> int:
        """Journal the recall hits counted so far (done at close, and by the server's timer),
        through the writer like every other write; returns how many memories they cover."""
        if self._access is None or not len(self._access) or self.read_only:
            return 0  # a read-only home keeps no access counts
        with translated():
            return self.access.flush(self.writer().journal_accesses)

    def index_vectors(self) -> dict[str, bool]:
        """Build the vector indexes (HNSW) of the live collections (``ferrex optimize``):
        whether each changed. Qdrant Edge holds a shard for the whole build, so its queries
        wait for it: for maintenance, when the data directory is this process's alone."""
        projections = self.projections()
        backend = self.backend()
        names = (projections.live.memories, projections.live.entities)
        if not isinstance(backend, EmbeddedVectors):
            return dict.fromkeys(names, False)  # a Qdrant server indexes by itself
        with translated():
            return {name: backend.optimize(name) for name in names}

    def index_beside(self) -> list[str]:
        """A server's background index: build the vector indexes its embedded collections
        are due (:meth:`EmbeddedVectors.unindexed`) on copies, in a child process, while this
        one serves, and switch them in (:mod:`projections.index_beside`); the collections
        switched in. Nothing for a Qdrant server (it indexes by itself) or a read-only home.
        A copy that would leave less than ``storage.reserve_bytes`` free is not made."""
        if self.read_only:
            return []
        projections = self.projections()
        backend = self.backend()
        from projections.index_beside import index_beside
        from projections.indexing import ApartBuild
        from projections.qdrant_edge import EdgeBackend

        if not isinstance(backend, EdgeBackend):
            return []
        with self._index_lock:
            if self._indexing_cancelled:
                raise BackendUnavailable("the vector indexes are not built: ferrex is closing")
            if self._indexing is None:
                self._indexing = ApartBuild(backend.root, backend.indexing_threshold_kb)
            build = self._indexing
        reserve = self.config["storage.reserve_bytes"]

        def room(names: list[str]) -> None:
            check_copy_room(self.home, reserve, [backend.root / name for name in names])

        with translated():
            return index_beside(projections, build, before_copy=room)

    def cancel_indexing(self) -> None:
        """Kill a background index build in progress and refuse new ones (before closing)."""
        with self._index_lock:
            self._indexing_cancelled = True
            if self._indexing is not None:
                self._indexing.cancel()

    def replay(
        self, progress: Progress | None = None, *, embedder: Embedder | None = None
    ) -> Projections:
        """Rebuild the projections from the journal into a new generation, switch to it.

        With ``embedder`` (a re-embed), the new generation uses that model; the old one
        keeps serving until the switch.
        """
        if embedder is not None:
            self.close_projections()
            if self._embedder is not None:
                self._embedder.close()
            self._embedder = embedder
        elif self._projections is not None:
            self._projections.rebuild(progress)
            _trim_heap()
            return self._projections
        from projections.replay import Projections

        with translated():
            self._projections = Projections.replay(
                self.home,
                self.journal(),
                self.backend(),
                self.encoders(),
                rules=build_rules(self.config),
                progress=progress,
            )
        _trim_heap()
        return self._projections

    def reconfigure(self, config: Config) -> None:
        """Take a new configuration whose store-opening keys are unchanged (see
        ferrex.server.reload): the writer and reader are rebuilt with it at their next use."""
        self.config = config
        self._writer = None
        self._reader = None

    def close_projections(self) -> None:
        self._writer = None
        self._reader = None
        if self._projections is not None:
            try:
                _close_vectors(self._projections.close)
            finally:
                self._projections = None

    def close(self) -> None:
        try:
            self.flush_access()
        except FerrexError as exc:
            # Recall counts are the one thing a close may drop (a full disk, a failed
            # journal): the memories themselves were journaled when they were stored.
            log.warning("could not journal %d recall hits at close: %s", len(self.access), exc)
        finally:
            self._close_all()

    def _close_all(self) -> None:
        try:
            self.close_projections()
            if self._backend is not None:
                try:
                    _close_vectors(self._backend.close)
                finally:
                    self._backend = None
            if self._sidecar is not None:
                self._sidecar.stop()  # only if this process started it
                self._sidecar = None
            if self._embedder is not None:
                self._embedder.close()
                self._embedder = None
            if self._journal is not None:
                self._journal.close()
                self._journal = None
        finally:
            if self._owner_fd is not None:
                os.close(self._owner_fd)  # another process may own the stores from now on
                self._owner_fd = None


def open_journal_at(location: str) -> JournalBackend:
    """Open (creating if needed) another journal than the home's, for ``ferrex journal copy``:
    a ``postgresql://`` URL, or a directory of files."""
    from journal.pg_connect import is_url
    from journal.postgres import PostgresJournal

    if is_url(location):
        return PostgresJournal.open(location)
    return Journal.open(Path(location).expanduser().absolute())


def _trim_heap() -> None:
    """After a rebuild: hand back the C heap it freed (at 10k memories ~34 MB of the rebuilding
    process's 164 MB anonymous memory; the serving speed is not changed by it)."""
    from ferrex import heap

    heap.trim()


def _close_vectors(close: Callable[[], None]) -> None:
    """Close what holds vectors; a failure is logged, not raised. Everything acknowledged is
    in the journal, and vectors that could not be made durable are rebuilt from it when the
    projections next open."""
    try:
        close()
    except VectorStoreError as exc:
        log.warning("the vector store did not close cleanly (%s); it will catch up from the "
                    "journal at the next start", exc)  # fmt: skip
