"""The durable log: open and recover, append (fsynced, group-committed), read, follow.

Invariants:

- ``append`` and ``append_batch`` return only after the bytes are fsynced (and the directory,
  when a segment was created). A batch is one write and one fsync for many records.
- Appends hold an exclusive OS lock (``flock`` on ``LOCK``), so several processes can append
  to one journal; positions stay unique and contiguous and every record chains to the one
  before it, whichever process wrote it.
- Only a torn tail is ever cut: bad bytes at the end of the active segment with no valid frame
  after them (a crash mid-append). They are copied to ``<segment>.corrupt-<offset>-<time>``
  first. Anything else that is bad is damage: open refuses, naming the segment and offset.
- Readers take no lock. A reader that meets incomplete bytes at the end of the active
  segment stops there (a writer may be mid-append); it never cuts.
- Every record carries its format version (``journal.record``). A journal holding records
  newer than :data:`~journal.record.FORMAT_VERSION` is refused (:class:`JournalTooNew`) at
  open and at every write, before anything is cut or appended: this code must not write
  beside records it cannot fully read.
- A sealed segment may be replaced, by rename, with a compacted copy (``journal.compact``):
  the same records with the same heads and hashes, at other offsets. So a remembered offset
  (the writer's tail, a reader's cursor) is trusted only when the record it points at is
  still found there; otherwise the record is found again by its position.
"""

from __future__ import annotations

import bisect
import errno
import fcntl
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from journal.compact import compact as compact_segments
from journal.errors import (
    EncodeError,
    JournalDamaged,
    JournalError,
    JournalFormatError,
    JournalTooNew,
)
from journal.events import Event, utc_now
from journal.files import make_private_dir, open_private, private_opener
from journal.manifest import load_gaps
from journal.reader import REPAIR_HINT, SegmentReader, read_from
from journal.record import (
    FORMAT_VERSION,
    GENESIS_HASH,
    FrameInfo,
    Record,
    check_frame,
    continuing_frame,
    decode_recorded_at,
    encode_record,
    frame_version,
    head_bytes,
    record_hash,
)
from journal.segment import (
    HEADER_SIZE,
    SEALING_SUFFIX,
    fsync_dir,
    list_segments,
    scan_frames,
    segment_header,
    segment_name,
)
from journal.verify import VerifyReport, verify
from journal.walk import Damage, Ended, Resumed, Segment, SegmentWalk, Torn

log = logging.getLogger("journal")

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
LOCK_NAME = "LOCK"


@dataclass(frozen=True)
class Head:
    """The last record: its position (0 when empty), hash and time."""

    position: int
    hash: bytes
    recorded_at: datetime | None


@dataclass(frozen=True)
class TornTail:
    """Bytes cut from the end of the active segment at open, and where they were kept."""

    segment: Path
    offset: int
    length: int
    reason: str
    saved_to: Path


@dataclass
class _Tail:
    first: int  # first position of the active segment
    path: Path
    size: int
    position: int
    hash: bytes
    recorded_at: datetime | None
    last: int | None = None
    """Offset of the record at ``position`` in this segment; None if it holds no record yet."""


def _open_lock(directory: Path) -> int:
    """The writer lock's descriptor. On a read-only file system no one can append, so a read
    descriptor (of the lock file, or of the directory when there is none) serves to read."""
    try:
        return open_private(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        if exc.errno != errno.EROFS:
            raise
    lock = directory / LOCK_NAME
    return os.open(lock, os.O_RDONLY) if lock.exists() else os.open(directory, os.O_RDONLY)


def _damaged(damage: Damage) -> JournalError:
    """What open or a catch-up raises for what the walk found (see ``journal.walk``)."""
    path = damage.path
    if damage.kind == "header":
        return JournalFormatError(
            f"{path.name}: {damage.reason}", hint="is this a ferrex journal directory?"
        )
    if damage.kind == "segment":
        message = (
            f"{path.name} starts at position {damage.first}, but the journal before it "
            f"ends at {damage.position - 1}"
        )
    elif damage.kind == "chain":
        message = (
            f"{path.name}: the record at offset {damage.offset} (position "
            f"{damage.position}) does not chain to the record before it"
        )
    else:
        message = (
            f"{path.name}: damaged record at offset {damage.offset} "
            f"({damage.reason}), and valid records follow it"
        )
    return JournalDamaged(
        message, segment=path, offset=damage.offset, position=damage.position, hint=REPAIR_HINT
    )


class Journal:
    """An append-only, fsynced, hash-chained log of records in a directory."""

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.directory = directory
        self.where = str(directory)
        self.segment_bytes = segment_bytes
        self._clock = clock
        self._tail: _Tail | None = None
        self._thread_lock = threading.RLock()
        self._lock_depth = 0
        self._walked = False
        """Whether ``_advance`` has walked to the end since the OS lock was taken: while it
        stays held, only this object (under ``_thread_lock``) can have appended since, and
        its own writes move the tail, so a second walk would find nothing."""
        self._lock_fd: int | None = None
        self._fd: int | None = None
        self._fd_path: Path | None = None
        self._reader = SegmentReader(directory)
        self.torn_tails: list[TornTail] = []
        """What open (or a later append) cut as torn tails, for reporting."""
        self._newest_version = 0
        self._unknown_format: tuple[Path, int] | None = None
        """(segment, offset) of a record whose payload has a layout no format has."""

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        clock: Callable[[], datetime] = utc_now,
    ) -> Journal:
        """Open (creating if needed) and recover the journal in ``directory``.

        Raises JournalDamaged when a bad record has valid records after it.
        """
        path = Path(directory)
        if segment_bytes < 1024:
            raise JournalError("segment_bytes must be at least 1024")
        if path.exists() and not path.is_dir():
            raise JournalError(f"{path} is not a directory")
        if not path.exists():
            # Another process may create it at the same moment: that is fine.
            make_private_dir(path)
            fsync_dir(path.parent)
        journal = cls(path, segment_bytes=segment_bytes, clock=clock)
        try:
            journal._lock_fd = _open_lock(path)
            with journal._thread_lock, journal._locked():
                journal._reader.gaps = load_gaps(path)
                journal._advance(from_start=True)
                journal._refuse_if_too_new()
        except BaseException:
            journal.close()
            raise
        return journal

    def close(self) -> None:
        for fd in (self._fd, self._lock_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock_fd = None
        self._fd_path = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def head(self) -> Head:
        """The last record this process knows of (appends by others show after ``refresh``)."""
        tail = self._tail
        if tail is None:
            return Head(0, GENESIS_HASH, None)
        return Head(tail.position, tail.hash, tail.recorded_at)

    @property
    def newest_version(self) -> int:
        """The newest record format version in the journal (0 when it is empty)."""
        return self._newest_version

    def first(self) -> Record | None:
        """The first record, with its hash; None when the journal is empty
        (:meth:`SegmentReader.first`)."""
        return self._reader.first()

    def verify(self, *, decode: bool = True) -> VerifyReport:
        """Verify the journal's files (:func:`journal.verify.verify`): reads only, so it also
        serves on a ``Journal(directory)`` never opened (opening would cut a torn tail that
        verify must report, not cut)."""
        return verify(self.directory, decode=decode)

    def compact(self) -> int:
        """Redact forgotten bodies (:func:`journal.compact.compact`, which says how: sealed
        segments rewritten by copy and rename); how many records changed."""
        return compact_segments(self).redacted

    def _note_versions(
        self, path: Path, base: int, data: bytes, frames: Sequence[FrameInfo]
    ) -> None:
        newest = self._newest_version
        for info in frames:
            version = frame_version(data, info)
            if version is None:
                if self._unknown_format is None:
                    self._unknown_format = (path, base + info.offset)
            elif version > newest:
                newest = version
        self._newest_version = newest

    def _refuse_if_too_new(self) -> None:
        """Raise JournalTooNew when a record is newer than this code (before any write)."""
        if self._unknown_format is not None:
            path, offset = self._unknown_format
            raise JournalTooNew(
                f"{path.name}: the record at offset {offset} has a format this ferrex does "
                f"not know (it writes and reads record format {FORMAT_VERSION}); it will not "
                "write to this journal",
                found=None,
                supported=FORMAT_VERSION,
            )
        if self._newest_version > FORMAT_VERSION:
            raise JournalTooNew.refusing_writes(
                f"in {self.directory}", self._newest_version, FORMAT_VERSION
            )

    def refresh(self) -> Head:
        """Catch up with records other processes appended, and return the head."""
        with self._thread_lock, self._locked():
            self._advance(from_start=False)
        return self.head

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The OS lock, taken once however deeply nested (callers hold ``_thread_lock``)."""
        if self._lock_fd is None:
            raise JournalError("the journal is closed")
        if self._lock_depth == 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self._lock_depth += 1
        try:
            yield
        finally:
            self._unlock_one()

    def _unlock_one(self) -> None:
        """Leave one level of the OS lock; the last level lets it go, and with it what this
        hold's walk knew (``_walked``)."""
        assert self._lock_fd is not None  # held, so not closed
        self._lock_depth -= 1
        if self._lock_depth == 0:
            self._walked = False
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def exclusive(self) -> Iterator[Head]:
        """Hold the writer lock across a read-decide-append sequence.

        Inside, no other process or thread can append, so a decision taken on the head
        yielded here is still true when its record is appended. Appends inside nest.
        """
        with self._thread_lock, self._locked():
            self._advance(from_start=False)
            self._refuse_if_too_new()
            yield self.head

    @contextmanager
    def try_exclusive(self) -> Iterator[Head | None]:
        """:meth:`exclusive` if the writer lock is free this instant, else ``None`` at once
        (holding nothing): for work that may be skipped while another thread or process
        writes, such as a read catching the projections up."""
        if not self._thread_lock.acquire(blocking=False):
            yield None
            return
        try:
            if self._lock_fd is None:
                raise JournalError("the journal is closed")
            if self._lock_depth == 0:
                try:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    yield None
                    return
            self._lock_depth += 1
            try:
                with self.exclusive() as head:
                    yield head
            finally:
                self._unlock_one()
        finally:
            self._thread_lock.release()

    def _advance(self, *, from_start: bool) -> None:
        """Walk forward from the known tail (or position 1), checking every frame and link
        (``journal.walk``), and move the tail to the last record found.

        Runs under the lock. Cuts a torn tail; raises JournalDamaged on anything else.
        """
        if self._walked and not from_start:
            return  # walked already in this hold of the lock (a command's lock, then append)
        tail = None if from_start else self._tail
        walk = self._walk_from(list_segments(self.directory), tail)
        if walk is None:
            self._walked = self._lock_depth > 0
            return  # nobody appended since we last looked: the common case, kept cheap
        new_tail = tail
        last = None if tail is None else tail.last
        recorded_at = None if tail is None else tail.recorded_at
        for step in walk:
            if isinstance(step, Segment):
                self._note_versions(step.path, step.base, step.data, step.scan.frames)
                if self._unknown_format is not None:
                    self._refuse_if_too_new()  # its time cannot even be read
            elif isinstance(step, Torn):
                if not step.whole:
                    self._refuse_if_too_new()  # cutting is writing
                self._set_aside(step.path, step.torn, step.offset, step.reason, whole=step.whole)
            elif isinstance(step, Ended):
                segment = step.segment
                if segment.scan.frames:
                    recorded_at = decode_recorded_at(segment.data, segment.scan.frames[-1])
                    last = segment.base + segment.scan.frames[-1].offset
                elif not segment.resumed:
                    last = None
                new_tail = _Tail(
                    segment.first,
                    segment.path,
                    step.end,
                    walk.expected - 1,
                    walk.prev_hash,
                    recorded_at,
                    last,
                )
            elif isinstance(step, Damage):
                raise _damaged(step)
        self._tail = new_tail
        self._walked = self._lock_depth > 0

    def _walk_from(
        self, segments: list[tuple[int, Path]], tail: _Tail | None
    ) -> SegmentWalk | None:
        """The walk from ``tail`` (None: from position 1); None when nothing was appended."""
        if tail is None:
            if segments and segments[0][0] != 1:
                raise JournalDamaged(
                    f"the first segment {segments[0][1].name} does not start at position 1",
                    segment=segments[0][1],
                    offset=0,
                    hint="a segment file is missing from the journal directory",
                )
            return SegmentWalk(segments, gaps=self._reader.gaps)
        firsts = [first for first, _ in segments]
        start_index = bisect.bisect_left(firsts, tail.first)
        if start_index >= len(segments) or segments[start_index][0] != tail.first:
            raise JournalDamaged(
                f"the active segment {tail.path.name} disappeared",
                segment=tail.path,
                offset=0,
            )
        if start_index == len(segments) - 1 and tail.path.stat().st_size == tail.size:
            return None
        # A catch-up reads only what is new: from the tail record on.
        resume = None if tail.last is None else self._resume(segments[start_index][1], tail)
        return SegmentWalk(
            segments,
            gaps=self._reader.gaps,
            start_index=start_index,
            expected=tail.position + 1,
            prev_hash=tail.hash,
            resume=resume,
        )

    def _resume(self, path: Path, tail: _Tail) -> Resumed:
        """The tail segment from the tail record on: its bytes from the tail record's offset,
        and where in them the records after the tail begin.

        The remembered offset is trusted only if the tail record is still there: since we
        last looked, the segment may have been sealed by another process and compacted.
        Otherwise the record is found again by its position, and must have the same hash.
        """
        assert tail.last is not None
        data, _ = read_from(path, tail.last)
        info = check_frame(data, 0, len(data))
        if (
            not isinstance(info, str)
            and info.position == tail.position
            and record_hash(info.position, info.prev_hash, head_bytes(data, info)) == tail.hash
        ):
            return Resumed(data, tail.last, info.length)
        data, size = read_from(path, 0)
        scan = scan_frames(data, HEADER_SIZE, tail.first, gaps=self._reader.gaps)
        for info in scan.frames:
            if info.position == tail.position:
                if record_hash(info.position, info.prev_hash, head_bytes(data, info)) != tail.hash:
                    break
                return Resumed(data, 0, info.offset + info.length)
        raise JournalDamaged(
            f"{path.name} ({size} bytes) no longer holds the acknowledged record at position "
            f"{tail.position} as it was",
            segment=path,
            offset=tail.last,
            position=tail.position,
            hint=REPAIR_HINT,
        )

    def _set_aside(
        self, path: Path, torn: bytes, offset: int, reason: str, *, whole: bool = False
    ) -> None:
        """Keep the torn bytes in a .corrupt file, then cut them off (or drop the file)."""
        stamp = self._clock().strftime("%Y%m%dT%H%M%S%fZ")
        saved = path.with_name(f"{path.name}.corrupt-{offset}-{stamp}")
        with open(saved, "wb", opener=private_opener) as out:
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        if whole:
            path.unlink()
        else:
            os.truncate(path, offset)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(self.directory)
        if self._fd_path == path:
            self._close_fd()
        self.torn_tails.append(TornTail(path, offset, len(torn), reason, saved))
        log.warning(
            "journal: cut a torn tail of %d bytes from %s at offset %d (%s); kept in %s",
            len(torn),
            path.name,
            offset,
            reason,
            saved.name,
        )

    # -- appending --------------------------------------------------------------------------

    def append(self, events: Sequence[Event]) -> Record:
        """Append one command's events as one record; returns after fsync."""
        return self.append_batch([events])[0]

    def append_batch(self, commands: Sequence[Sequence[Event]]) -> list[Record]:
        """Append one record per command with a single write and fsync (group commit).

        Nothing is written if any command cannot be encoded (EncodeError).
        """
        if not commands:
            return []
        with self._thread_lock, self._locked():
            self._advance(from_start=False)
            self._refuse_if_too_new()
            tail = self._tail
            position = tail.position + 1 if tail else 1
            prev_hash = tail.hash if tail else GENESIS_HASH
            now = self._clock()
            if now.tzinfo is None:
                raise EncodeError("the journal clock must return timezone-aware times")
            if tail is not None and tail.recorded_at is not None and now < tail.recorded_at:
                now = tail.recorded_at  # recorded_at never goes backwards along the log
            records: list[Record] = []
            frames: list[bytes] = []
            for events in commands:
                frame, record = encode_record(position, now, prev_hash, events)
                frames.append(frame)
                records.append(record)
                position += 1
                assert record.hash is not None  # encode_record always computes it
                prev_hash = record.hash
            self._write_frames(frames, prev_hash, now, FORMAT_VERSION)
            return records

    def append_frames(self, frames: Sequence[bytes]) -> Head:
        """Append records framed elsewhere (``ferrex journal copy``), byte for byte, after
        checking that each is a valid frame continuing the chain from the head. One write
        and one fsync, like a batch; nothing is written if any frame is refused."""
        with self._thread_lock, self._locked():
            self._advance(from_start=False)
            self._refuse_if_too_new()
            head = self.head
            expected, prev_hash = head.position + 1, head.hash
            recorded_at, newest = head.recorded_at, self._newest_version
            for frame in frames:
                info = continuing_frame(
                    frame, expected, prev_hash, where=f"in {self.directory}", head=head.position
                )
                prev_hash = record_hash(info.position, info.prev_hash, head_bytes(frame, info))
                recorded_at = decode_recorded_at(frame, info)
                newest = max(newest, frame_version(frame, info) or 0)
                expected += 1
            if frames:
                assert recorded_at is not None
                self._write_frames(list(frames), prev_hash, recorded_at, newest)
            return self.head

    def _write_frames(
        self, frames: list[bytes], last_hash: bytes, recorded_at: datetime, newest: int
    ) -> None:
        """Write frames that continue the tail, rolling segments at the size limit (under
        the lock)."""
        tail = self._tail
        position = tail.position + 1 if tail else 1
        writes: list[tuple[Path, bool, bytearray]] = []
        if tail is not None:
            path, first, size = tail.path, tail.first, tail.size
            writes.append((path, False, bytearray()))
        last = HEADER_SIZE
        for frame in frames:
            if not writes or size >= self.segment_bytes:
                first, size = position, HEADER_SIZE
                path = self.directory / segment_name(position)
                writes.append((path, True, bytearray(segment_header())))
            writes[-1][2].extend(frame)
            last = size
            size += len(frame)
            position += 1
        try:
            for path, created, buf in writes:
                if buf:
                    self._write(path, created, bytes(buf))
        except BaseException:
            self._walked = False  # what a failed write left is for the next walk to judge
            raise
        self._newest_version = max(self._newest_version, newest)
        self._tail = _Tail(first, path, size, position - 1, last_hash, recorded_at, last)

    def frames(self, after: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, frame bytes) of the complete records after ``after``, as stored (for
        ``ferrex journal copy``); no lock (:meth:`SegmentReader.frames`)."""
        return self._reader.frames(after)

    def _write(self, path: Path, created: bool, data: bytes) -> None:
        if created:
            self._close_fd()
            fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
            self._fd, self._fd_path = fd, path
        elif self._fd_path != path or self._fd is None:
            self._close_fd()
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            self._fd_path = path
        fd = self._fd
        assert fd is not None
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fdatasync(fd)
        if created:
            fsync_dir(self.directory)

    def seal(self) -> Path | None:
        """Seal the active segment: the next append starts a new one. Returns the new
        (empty) segment, or None when the active segment holds no record yet.

        Compaction uses it to reach text in the active segment without rewriting a file
        that writers append to. The new segment is created complete (header written to a
        temporary file, fsynced, renamed), so a crash leaves it whole or absent.
        """
        with self._thread_lock, self._locked():
            self._advance(from_start=False)
            self._refuse_if_too_new()
            tail = self._tail
            if tail is None or tail.last is None:
                return None
            path = self.directory / segment_name(tail.position + 1)
            tmp = path.with_name(path.name + SEALING_SUFFIX)
            with open(tmp, "wb", opener=private_opener) as f:
                f.write(segment_header())
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
            fsync_dir(self.directory)
            self._close_fd()
            self._tail = _Tail(
                tail.position + 1, path, HEADER_SIZE, tail.position, tail.hash, tail.recorded_at
            )
            return path

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._fd_path = None

    # -- reading ----------------------------------------------------------------------------

    def read(self, after: int = 0, *, hashes: bool = False) -> Iterator[Record]:
        """Records with position > ``after``, in order, as far as they are complete now; no
        lock (:meth:`SegmentReader.read`)."""
        return self._reader.read(after, hashes=hashes)

    def follow(
        self, after: int = 0, *, stop: threading.Event, poll_ms: int = 1000
    ) -> Iterator[Record]:
        """Yield records after ``after`` as they are appended, by any process, until ``stop``.

        Watches the directory (not a file: segments roll) with watchfiles, and re-reads at
        least every ``poll_ms`` so that a missed notification only delays, never loses.
        """
        import watchfiles

        last = after
        for record in self.read(after=last):
            last = record.position
            yield record
        for _changes in watchfiles.watch(
            self.directory,
            stop_event=stop,
            debounce=20,
            step=10,
            rust_timeout=poll_ms,
            yield_on_timeout=True,
            raise_interrupt=False,
        ):
            for record in self.read(after=last):
                last = record.position
                yield record
            if stop.is_set():
                return
