"""npm packages the tests need, installed once into a cache directory (``FERREX_TEST_CACHE``,
else ``~/.cache/ferrex-tests``) by the project's own tests, so a clean machine gets them too.

Parallel test workers (pytest-xdist) share the cache: one installs a directory while the
others wait on its lock file, then find it installed.

When npm cannot reach its registry the test is skipped, with the reason, on a developer's
machine; under CI (``CI`` or ``FERREX_CI`` set, as ``.ci/run`` does) it fails instead, so a
CI run never passes by skipping."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from filelock import FileLock

#: What npm says when the registry cannot be reached (no network, no DNS).
_UNREACHABLE = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT",
                "ENETUNREACH", "network")  # fmt: skip


def cache_root() -> Path:
    return Path(os.environ.get("FERREX_TEST_CACHE", Path.home() / ".cache" / "ferrex-tests"))


def in_ci() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("FERREX_CI"))


def node() -> str:
    found = shutil.which("node")
    assert found is not None, "Node.js 20+ is needed (.ci/run installs it)"
    return found


def npm() -> str:
    found = shutil.which("npm")
    assert found is not None, "npm is needed (.ci/run installs it)"
    return found


def npm_packages(name: str, packages: Sequence[str], binary: str) -> Path:
    """The ``node_modules`` of cache directory ``name`` holding ``packages`` (installed
    there unless ``binary`` is already in its ``.bin``)."""
    directory = cache_root() / name
    modules = directory / "node_modules"
    directory.parent.mkdir(parents=True, exist_ok=True)
    # Checked under the lock: the binary's link can appear before another worker's install
    # has finished.
    with FileLock(directory.parent / f"{name}.lock"):
        if (modules / ".bin" / binary).exists():
            return modules
        directory.mkdir(exist_ok=True)
        done = subprocess.run(
            [npm(), "install", "--no-audit", "--no-fund", "--prefix", str(directory), *packages],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    if done.returncode != 0:
        said = done.stdout + done.stderr
        if not in_ci() and any(sign in said for sign in _UNREACHABLE):
            pytest.skip(f"the npm registry cannot be reached to install {packages}: {said[-300:]}")
        raise AssertionError(f"npm install {' '.join(packages)} failed:\n{said}")
    return modules


def inspector() -> Path:
    """The MCP Inspector CLI (version 0.15.0)."""
    modules = npm_packages("inspector-0.15.0", ["@modelcontextprotocol/inspector@0.15.0"],
                           "mcp-inspector")  # fmt: skip
    return modules / ".bin" / "mcp-inspector"


def typescript() -> Path:
    """tsc (TypeScript 5), in the cache directory ``.ci/run`` uses too."""
    return npm_packages("typescript-5", ["typescript@5"], "tsc") / ".bin" / "tsc"
