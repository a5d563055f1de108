"""Which project a directory is in, and the namespace that project gets.

A project is the git work tree a directory is in (the nearest directory upwards holding
``.git``), else the directory itself. With ``store.project_namespace`` on, a process's default
namespace is its project's name (the project directory's name, on one line, at most
:data:`NAMESPACE_CHARS` characters): the MCP server takes it from its working directory (a
client starts it in the project), a hook from the ``cwd`` the client gives it, so both land
in the same namespace. ``--namespace`` still wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

NAMESPACE_CHARS: Final = 128


def project_root(directory: Path) -> Path:
    """The git work tree ``directory`` is in, else ``directory`` itself (resolved)."""
    start = directory.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_namespace(directory: Path) -> str | None:
    """The namespace of the project ``directory`` is in; None for the file system's root."""
    name = " ".join(project_root(directory).name.split())[:NAMESPACE_CHARS].strip()
    return name or None
