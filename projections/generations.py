"""Generations of the projections: their names, the pointer file, building one, and whether
the live one can be used.

What is live is named by one pointer file, ``projections.json`` in the data directory: the
generation number, the SQLite file and the two Qdrant collections, and the versions and
encoder identity they were built with. It is replaced atomically (write, fsync, rename). A
rebuild (:func:`build`) builds a *new* generation from position 0 while the old one keeps
serving, then switches the pointer and drops the old one. A crash before the switch leaves
the old generation live; its leftovers are cleared by the next rebuild. A version or encoder
mismatch at open (:func:`unusable`) is resolved by a rebuild, never by mixing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
from pathlib import Path

import msgspec

from journal import JournalBackend
from journal.files import replace_durably
from projections.applying import BATCH, Progress, apply_all, chunks
from projections.readmodel.projector import NO_RULES, Rules
from projections.readmodel.schema import SCHEMA_VERSION
from projections.readmodel.store import ReadModelError, applied_at
from projections.split_rebuild import apply_split, splits
from projections.sqlite import ReadModel
from projections.vector_sink import Collections, Encoders, VectorSink
from projections.vectors import VectorBackend, VectorStoreError

log = logging.getLogger("ferrex.projections")

POINTER = "projections.json"
VECTOR_VERSION = 3
"""Bump when what the vector sink derives from events changes (payload, text, parts)."""


class Live(msgspec.Struct, frozen=True, kw_only=True):
    """The pointer file: which generation of the projections is live."""

    generation: int
    sqlite: str
    memories: str
    entities: str
    encoders: str
    schema_version: int
    vector_version: int
    rules: str = ""


def _slug(identity: str) -> str:
    readable = re.sub(r"[^a-z0-9]+", "-", identity.lower()).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


HOME_TAG = "projections-tag"
"""A file in the home holding a random tag that the home's Qdrant collections carry."""


def home_tag(home: Path) -> str:
    """This home's tag, made on its first build: the collections of two homes on one Qdrant
    server (two ferrex servers sharing a PostgreSQL journal, or two unrelated homes) never
    share a name, so neither writes, rebuilds or drops the other's vectors."""
    path = home / HOME_TAG
    if path.exists():
        tag = path.read_text(encoding="ascii").strip()
        if re.fullmatch(r"[0-9a-f]{8}", tag):
            return tag
        log.warning("projections: %s is unreadable; making a new tag", path)
    tag = secrets.token_hex(4)
    replace_durably(path, tag.encode("ascii") + b"\n")
    return tag


def plan_generation(
    number: int, encoders: Encoders, rules: Rules = NO_RULES, *, tag: str = ""
) -> Live:
    slug = _slug(encoders.identity)
    own = f"{tag}-" if tag else ""
    return Live(
        generation=number,
        sqlite=f"readmodel-{number}.sqlite",
        memories=f"memories-{own}{slug}-g{number}",
        entities=f"entities-{own}{slug}-g{number}",
        encoders=encoders.identity,
        schema_version=SCHEMA_VERSION,
        vector_version=VECTOR_VERSION,
        rules=rules.identity,
    )


def base(collection: str) -> str:
    """A collection's name without the suffix :mod:`projections.index_beside` gives its copies
    (``_`` and hex digits: generated names have no ``_`` of their own)."""
    return collection.partition("_")[0]


def of_generation(backend: VectorBackend, live: Live) -> list[str]:
    """The existing collections of ``live``'s generation: its two, and any copies of them
    (live or not) :func:`projections.index_beside.index_beside` made."""
    bases = {base(live.memories), base(live.entities)}
    return [name for name in backend.collections() if base(name) in bases]


def read_pointer(home: Path) -> Live | None:
    path = home / POINTER
    if not path.exists():
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=Live)
    except msgspec.DecodeError as exc:
        log.warning("projections: %s is unreadable (%s); rebuilding", path, exc)
        return None


def applied_position(home: Path) -> int:
    """The journal position the live read model has applied (0: none, or unreadable), read
    without opening the projections: a journal that ends before it lost acknowledged
    records (``ferrex journal verify`` says so)."""
    live = read_pointer(home)
    return 0 if live is None else applied_at(home / live.sqlite)


def write_pointer(home: Path, live: Live) -> None:
    replace_durably(home / POINTER, msgspec.json.format(msgspec.json.encode(live)))


def read_model_at(
    journal: JournalBackend,
    path: Path,
    position: int,
    *,
    rules: Rules = NO_RULES,
    progress: Progress | None = None,
) -> ReadModel:
    """A read model of the journal's records up to ``position``, built afresh at ``path``
    (SQLite only, no vectors) by the one fold, as a replay builds the live one. It needs
    nothing but the journal, which any process may read: a backup taken while a server owns
    the home reads one of these, whole at one journal position."""
    remove_sqlite(path)
    model = ReadModel.open(path, rules=rules)
    try:
        for chunk in chunks(journal.read(), BATCH):
            model.apply([r for r in chunk if r.position <= position])
            if progress is not None:
                progress(min(chunk[-1].position, position), position)
            if chunk[-1].position >= position:
                break
    except BaseException:
        model.close()
        remove_sqlite(path)
        raise
    return model


def remove_sqlite(path: Path) -> None:
    """Delete an SQLite file with its WAL and shared-memory files, if they exist."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


def unusable(
    home: Path, backend: VectorBackend, encoders: Encoders, rules: Rules, live: Live | None
) -> str | None:
    """Why the generation ``live`` cannot be opened as it is (a rebuild follows), or None."""
    if live is None:
        return "no projections yet"
    if live.schema_version != SCHEMA_VERSION:
        return f"read model schema {live.schema_version} -> {SCHEMA_VERSION}"
    if live.vector_version != VECTOR_VERSION:
        return f"vector projection version {live.vector_version} -> {VECTOR_VERSION}"
    if live.encoders != encoders.identity:
        return f"encoders changed ({live.encoders} -> {encoders.identity})"
    if live.rules != rules.identity:
        return f"derivation rules changed ({live.rules!r} -> {rules.identity!r}): a backfill"
    if not (home / live.sqlite).exists():
        return f"the read model {live.sqlite} is missing"
    collections = set(backend.collections())
    if live.memories not in collections or live.entities not in collections:
        return "a Qdrant collection is missing"
    try:
        ReadModel.open(home / live.sqlite).close()
    except ReadModelError as exc:
        return str(exc)
    return None


def build(
    home: Path,
    journal: JournalBackend,
    backend: VectorBackend,
    encoders: Encoders,
    rules: Rules,
    old: Live | None,
    progress: Progress | None,
) -> Live:
    """Build a new generation from position 0, switch to it, drop the old one."""
    number = (old.generation if old else 0) + 1
    live = plan_generation(number, encoders, rules, tag=home_tag(home))
    # Leftovers of a rebuild that crashed before its switch.
    remove_sqlite(home / live.sqlite)
    for name in (live.memories, live.entities):
        if name in backend.collections():
            backend.drop_collection(name)
    collections = Collections(live.memories, live.entities)
    if splits(journal, encoders):
        sink = VectorSink(backend, collections, encoders)
        sink.ensure()
        with sink.bulk():
            apply_split(journal, home / live.sqlite, rules, sink, progress)
    else:
        read_model = ReadModel.open(home / live.sqlite, rules=rules)
        try:
            sink = VectorSink(backend, collections, encoders, read_model.episode_before)
            sink.ensure()
            # One flush at the end instead of one per batch: an interrupted build is
            # discarded (the pointer still names the old generation), never resumed.
            with sink.bulk():
                apply_all(journal, read_model, sink, after=0, progress=progress)
        finally:
            read_model.close()
    if old is not None:
        # Served from its files, as a new process would open it: an embedded shard
        # filled in this process answers slower while it stays open (EdgeBackend.release).
        # Not after a first build: a new home's first store then left more free space
        # after its process ended than before (tests/e2e/test_disk_full.py), not yet
        # understood.
        sink.release()
    write_pointer(home, live)
    if old is not None and old.generation != live.generation:
        remove_sqlite(home / old.sqlite)
        # Its collections, and any copy projections.index_beside left of them.
        for name in of_generation(backend, old):
            backend.drop_collection(name)
    return live


def drop_copies(backend: VectorBackend, live: Live) -> None:
    """Remove the collections of ``live``'s generation that are not live: copies
    :func:`projections.index_beside.index_beside` made and did not switch in, or the ones it
    switched out, left by a crash or a failed build. One another process still holds is left
    for the next time."""
    keep = {live.memories, live.entities}
    for name in of_generation(backend, live):
        if name not in keep:
            try:
                backend.drop_collection(name)
            except VectorStoreError as exc:
                log.warning("projections: could not remove the copy %s: %s", name, exc)
