"""The C heap's arena cap: set from inside the process unless the operator set it already."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from ferrex import heap

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_arena_cap_is_set_unless_the_environment_sets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert heap.limit_arenas(8) is True  # eight: what glibc allows a 1-core process anyway
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.limit_arenas(8) is False
    heap.trim()  # no error either way


PROBE = """
import ctypes, sys
from ferrex import heap

class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
if sys.argv[1] == "fixed":
    assert heap.map_large_blocks()
size = 4 * 1024 * 1024
libc.free(libc.malloc(size))  # a mapped block freed: glibc raises its threshold past it
before = libc.mallinfo2().hblks
block = libc.malloc(size)
print(libc.mallinfo2().hblks - before)  # 1 if it was mapped alone, 0 if the heap gave it
libc.free(block)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
@pytest.mark.parametrize(("how", "mapped"), [("glibc's own", "0"), ("fixed", "1")])
def test_large_blocks_stay_mapped_alone_once_the_threshold_is_fixed(how: str, mapped: str) -> None:
    """A large block freed raises glibc's threshold, so the next one comes from the heap
    (which keeps it when freed); with the threshold fixed it is mapped alone again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    run = [sys.executable, "-c", PROBE, how.split()[0]]
    done = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, mapped), done.stderr


def test_the_environment_keeps_its_own_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert heap.map_large_blocks() is False
