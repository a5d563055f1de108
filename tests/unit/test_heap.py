"""The C heap's arena cap: set from inside the process unless the operator set it already."""

from __future__ import annotations

import platform

import pytest

from ferrex import heap


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_arena_cap_is_set_unless_the_environment_sets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert heap.limit_arenas(8) is True  # eight: what glibc allows a 1-core process anyway
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert heap.limit_arenas(8) is False
    heap.trim()  # no error either way
