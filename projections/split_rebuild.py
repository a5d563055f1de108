"""A rebuild on two cores: the read model applied in a forked child, the vectors here.

:func:`splits` says when a rebuild (:func:`projections.generations.build`) takes this way,
:func:`apply_split` takes it. The child sends, batch by batch, the BM25 vectors of the
memories it applied and whether they fit the dense model's window, as frames on a pipe: a
kind byte (``S``: a batch's vectors, ``F``: why it failed) and a 4-byte length, then a
msgpack body (:class:`_SparseFeed` reads them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import signal
import struct
import threading
import warnings
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from journal import Journal, JournalBackend, MemoryStored
from projections.applying import BATCH, QDRANT, Progress, chunks
from projections.documents import memory_text
from projections.readmodel.projector import Rules
from projections.readmodel.store import ReadModelError
from projections.sqlite import ReadModel
from projections.vector_sink import Encoders, VectorSink
from projections.vectors import SparseVector

SPLIT_RECORDS = 20_000
"""A rebuild of at least this many records applies the read model in a child process of its
own while this one writes the vectors (see :func:`apply_split`): two cores instead of one."""


def splits(journal: JournalBackend, encoders: Encoders) -> bool:
    """Whether a rebuild applies the read model in a forked child (:func:`apply_split`).

    Only where that is safe and worth it: a journal in files (a child reads them on its own;
    a PostgreSQL connection must not cross a fork), turns embedded without their neighbour
    (with ``context_chars`` the vectors ask the read model being built for it), no other
    Python thread (none can be inside SQLite, holding one of its locks, at the fork), and
    enough records to repay the fork."""
    return (
        hasattr(os, "fork")
        and isinstance(journal, Journal)
        and not encoders.context_chars
        and threading.active_count() == 1
        and journal.refresh().position >= SPLIT_RECORDS
    )


def apply_split(
    journal: JournalBackend, path: Path, rules: Rules, sink: VectorSink, progress: Progress | None
) -> None:
    """A rebuild on two cores: a forked child reads the journal and applies it to the new read
    model at ``path``, and computes the BM25 vectors of its memories' texts and whether they
    fit the dense model's window, while this process reads it again and writes the vectors
    (taking the child's answers batch by batch); then the Qdrant checkpoint is recorded as
    :func:`~projections.applying.apply_all` leaves it.

    The two are independent consumers of the same records (without neighbour context the
    vectors read nothing of the read model, and a BM25 vector and a window check depend on
    the text alone), so the result is the one-process result; what the child did not send
    (an entity's spelling, a procedure's parts) is computed here. A failure on either side
    fails the rebuild, which is discarded like any interrupted one; a child whose parent died
    stops at its next batch."""
    ReadModel.open(path, rules=rules).close()  # the schema, made once, before the fork
    child, pipe = _fork_read_model(journal, path, rules, sink.encoders)
    feed = _SparseFeed(os.fdopen(pipe, "rb"), sink.encoders)
    sink.encoders = dataclasses.replace(sink.encoders, sparse=feed.sparse, fits=feed.fits)
    try:
        vectors_at = 0
        total = max(journal.refresh().position, 0)
        done = 0
        for chunk in chunks(journal.read(after=0), BATCH):
            feed.next_batch()
            sink.apply(chunk)
            vectors_at = chunk[-1].position
            done += len(chunk)
            if progress is not None:
                progress(done, max(total, done))
    except BaseException:
        os.kill(child, signal.SIGKILL)
        feed.close()
        os.waitpid(child, 0)
        raise
    failure = feed.finish()
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise ReadModelError(f"rebuilding the read model {path.name} failed: {failure}")
    read_model = ReadModel.open(path, rules=rules)
    try:
        if vectors_at:
            read_model.set_checkpoint(QDRANT, vectors_at)
    finally:
        read_model.close()


_SPARSE = b"S"
_FAILED = b"F"
_FRAME = struct.Struct("<cI")
"""A frame from the child: its kind and the length of what follows."""
_PIPE_BYTES = 1 << 20
"""The pipe's buffer (Linux's default ceiling for an unprivileged process): the child may run
this far ahead of the parent before it waits."""
_Vectors = list[tuple[str, tuple[int, ...], tuple[float, ...], bool | None]]
"""A batch's memory texts, each with its BM25 vector and whether it fits the dense model's
window (None: not asked, a procedure's parts are asked by their own texts)."""


class _SparseFeed:
    """The parent's end of the child's pipe: one frame of BM25 vectors and window checks per
    batch, in the order the child applied the batches, then at most one frame saying why it
    failed. What a frame does not hold is computed here."""

    def __init__(self, pipe: BinaryIO, encoders: Encoders) -> None:
        self._pipe = pipe
        self._encode = encoders.sparse
        self._fits = encoders.fits
        self._batch: dict[str, SparseVector] = {}
        self._fitting: dict[str, bool] = {}
        self._decoder = msgspec.msgpack.Decoder(_Vectors)
        self._failure = ""

    def _frame(self) -> tuple[bytes, bytes] | None:
        head = self._pipe.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return None
        kind, length = _FRAME.unpack(head)
        return kind, self._pipe.read(length)

    def next_batch(self) -> None:
        """The next batch's vectors (none once the child stopped sending)."""
        self._batch, self._fitting = {}, {}
        if self._failure or self._pipe.closed:
            return
        frame = self._frame()
        if frame is None:
            self._failure = "it exited early"
        elif frame[0] == _FAILED:
            self._failure = frame[1].decode(errors="replace")
        else:
            for text, indices, values, fits in self._decoder.decode(frame[1]):
                self._batch[text] = SparseVector(indices, values)
                if fits is not None:
                    self._fitting[text] = fits

    def sparse(self, text: str) -> Any:
        found = self._batch.get(text)
        return found if found is not None else self._encode(text)

    def fits(self, text: str) -> bool:
        found = self._fitting.get(text)
        return found if found is not None else self._fits(text)

    def finish(self) -> str:
        """Read to the end; why the child failed ("" if it did not say)."""
        while not self._failure and (frame := self._frame()) is not None:
            if frame[0] == _FAILED:
                self._failure = frame[1].decode(errors="replace")
        self.close()
        return self._failure

    def close(self) -> None:
        self._pipe.close()


def _fork_read_model(
    journal: JournalBackend, path: Path, rules: Rules, encoders: Encoders
) -> tuple[int, int]:
    """Fork a child that applies the whole journal to the read model at ``path`` and sends
    each batch's BM25 vectors; returns its pid and the read end of its pipe."""
    parent = os.getpid()
    readable, writable = os.pipe()
    with contextlib.suppress(AttributeError, OSError):  # Linux: a few batches ahead, not one
        fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    with warnings.catch_warnings():
        # Python 3.12 warns of any fork with other threads; the checks of ``splits`` and
        # the child's confinement (its own SQLite file and the journal's files, then
        # ``os._exit``) are what make this one safe.
        warnings.filterwarnings("ignore", r".*multi-threaded.*fork", DeprecationWarning)
        pid = os.fork()
    if pid:
        os.close(writable)
        return pid, readable
    # The child: never returns, never runs the parent's exit handlers.
    os.close(readable)
    code = 1
    with os.fdopen(writable, "wb") as out:
        try:
            _apply_read_model(journal, path, rules, encoders, out, parent)
            code = 0
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".encode(errors="replace")[:4096]
            with contextlib.suppress(OSError):
                out.write(_FRAME.pack(_FAILED, len(message)) + message)
                out.flush()
        finally:
            os._exit(code)


def _apply_read_model(
    journal: JournalBackend,
    path: Path,
    rules: Rules,
    encoders: Encoders,
    out: BinaryIO,
    parent: int,
) -> None:
    encoder = msgspec.msgpack.Encoder()
    read_model = ReadModel.open(path, rules=rules)
    try:
        for chunk in chunks(journal.read(after=0), BATCH):
            if os.getppid() != parent:
                raise RuntimeError("the rebuilding process is gone")
            read_model.apply(chunk)
            vectors = []
            for record in chunk:
                for event in record.events:
                    if isinstance(event, MemoryStored) and event.body is not None:
                        text = memory_text(event.memory_type, event.body)
                        sparse = encoders.sparse(text)
                        procedure = event.memory_type == "procedural"
                        fits = None if procedure else encoders.fits(text)
                        vectors.append((text, tuple(sparse.indices), tuple(sparse.values), fits))
            data = encoder.encode(vectors)
            out.write(_FRAME.pack(_SPARSE, len(data)) + data)
            out.flush()
    finally:
        read_model.close()
