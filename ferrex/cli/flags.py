"""The flags ``ferrex`` takes and ``ferrex serve`` takes again (:func:`caller_options`): who
the commands speak for, their default namespace and their stores' default visibility, and
the configuration keys they set (:func:`caller_flags`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def caller_options(*, agent: str, namespace: str, visibility: str) -> Callable[[F], F]:
    """``--agent-id``, ``--namespace`` and ``--default-visibility`` (in that order), each
    with its help on this command."""

    def add(command: F) -> F:
        command = click.option(
            "--default-visibility", type=click.Choice(["private", "shared"]), help=visibility
        )(command)
        command = click.option("--namespace", help=namespace)(command)
        return click.option("--agent-id", help=agent)(command)

    return add


def caller_flags(
    agent_id: str | None, namespace: str | None, default_visibility: str | None
) -> dict[str, str | None]:
    """The configuration keys :func:`caller_options` set (None: not given)."""
    return {
        "store.agent_id": agent_id,
        "store.default_namespace": namespace,
        "store.default_visibility": default_visibility,
    }
