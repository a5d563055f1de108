"""This process's file descriptors: how many are open, and the soft limit raised for a server.

Both listening edges (the HTTP server, :mod:`ferrex.server.http_limits`; the owner's port,
:mod:`ferrex.server.hub`) cap their connections below what the limit leaves after a reserve,
so the journal, SQLite and Qdrant always have descriptors to open.
"""

from __future__ import annotations

import logging
import os
import resource

log = logging.getLogger("ferrex")


def raise_descriptor_limit() -> None:
    """Raise the soft RLIMIT_NOFILE to the hard one (at most 65,536): the headroom is the
    administrator's to give, and a server should take it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            log.debug("could not raise the descriptor limit", exc_info=True)


def open_descriptors() -> int:
    """How many file descriptors this process has open (0 if the system will not say)."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(directory))
        except OSError:
            continue
    return 0


def descriptor_room(reserve: int) -> int | None:
    """How many more descriptors the soft limit allows once ``reserve`` is kept back
    (None: no limit). Negative when the process is already inside its reserve."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return soft - open_descriptors() - reserve
