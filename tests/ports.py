"""A free TCP port on the loopback interface, for a test that starts a server of its own."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now: bound once by the system's choice, then released (a
    race with another process is possible, and unlikely within one test run)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
