"""The C heap (glibc's malloc) of a long-running process: fewer arenas, freed memory returned.

glibc gives each thread that allocates while another holds the main arena an arena of its
own, up to eight per core; a server runs its tool calls on a pool of worker threads, so
every call's ONNX Runtime, SQLite and Qdrant allocations spread over many arenas, and each
arena keeps what it freed. :func:`limit_arenas` caps them (what ``MALLOC_ARENA_MAX`` does,
set from inside the process); :func:`trim` hands freed pages back. Elsewhere than glibc both
do nothing.
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


def trim() -> None:
    """Hand memory the C heap holds but no longer uses back to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
