"""The C heap (glibc's malloc) of a long-running process: fewer arenas, freed memory returned.

glibc gives each thread that allocates while another holds the main arena an arena of its
own, up to eight per core; a server runs its tool calls on a pool of worker threads, so
every call's ONNX Runtime, SQLite and Qdrant allocations spread over many arenas, and each
arena keeps what it freed. :func:`limit_arenas` caps them (what ``MALLOC_ARENA_MAX`` does,
set from inside the process); :func:`map_large_blocks` keeps every large block in a memory
map of its own, handed back when it is freed; :func:`trim` hands freed pages back. Elsewhere
than glibc they do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from typing import Final

#: glibc's ``mallopt`` parameter number for the arena cap (``M_ARENA_MAX``).
_M_ARENA_MAX: Final = -8
#: Arenas a server keeps: its main thread's and one shared by every worker thread.
SERVER_ARENAS: Final = 2
#: glibc's ``mallopt`` parameter number for the size from which a block is mapped alone.
_M_MMAP_THRESHOLD: Final = -3
#: Blocks of this many bytes or more a server maps alone: glibc's starting threshold, kept.
SERVER_MMAP_THRESHOLD: Final = 128 * 1024


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018 (absent when the C library is not glibc)
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Cap malloc's arenas at ``arenas`` for the threads started from now on; True if set.

    Left alone when the environment sets ``MALLOC_ARENA_MAX`` (the operator's choice wins).
    """
    libc = _libc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


def map_large_blocks(threshold: int = SERVER_MMAP_THRESHOLD) -> bool:
    """Give every block of ``threshold`` bytes or more a memory map of its own, unmapped when
    it is freed; True if set.

    glibc starts there, but raises the threshold to the size of every mapped block that is
    freed (up to 32 MB), so after a few recalls the large buffers a query allocates and frees
    (Qdrant's and SQLite's) come from the arenas, which keep them: at 10k memories ten recalls
    left ~15 MB more resident. Setting it fixes the threshold. Left alone when the
    environment sets it (``MALLOC_MMAP_THRESHOLD_``, or in ``GLIBC_TUNABLES``).
    """
    libc = _libc()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if libc is None or "MALLOC_MMAP_THRESHOLD_" in os.environ or "mmap_threshold" in tunables:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold))


def trim() -> None:
    """Hand memory the C heap holds but no longer uses back to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
