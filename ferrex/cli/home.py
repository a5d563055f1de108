"""Commands that read a data directory refuse one that does not exist.

A mistyped ``--home`` (or ``FERREX_HOME``) must not be taken for a new, empty home: reading
commands (stats, recall, reflect, export, journal verify/show, …) and commands that act on
memories already there (forget, mark) say the directory does not exist and create nothing.
``store``, ``import``, ``serve`` (and a bare ``ferrex``) and ``ui`` make a new home. With
``journal.url`` the journal is in PostgreSQL, so a new data directory is built from it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ferrex.app import App
from ferrex.errors import NoHome, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def missing_home(app: App) -> UsageError:
    return NoHome(
        f"the data directory {app.home} does not exist: there is no journal and no memory "
        "to read there, and nothing was created",
        hint="check --home or FERREX_HOME (a typo?); `ferrex store` or `ferrex serve` "
        "makes a new data directory",
    )


def existing_home(command: F) -> F:
    """Refuse to run ``command`` (with ``no_home``, exit 2) when the home does not exist.
    Goes right above the function, below ``@click.pass_obj``."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        app = click.get_current_context().find_object(App)
        if app is not None and app.journal_url is None and not app.home.is_dir():
            raise missing_home(app)
        return command(*args, **kwargs)

    return checked  # type: ignore[return-value]


def reads_home(command: F) -> F:
    """A command that reads an existing home and can answer in JSON: ``--json`` (as
    ``as_json``), the App passed first (``@click.pass_obj``), and :func:`existing_home`."""
    checked = click.pass_obj(existing_home(command))
    option = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document on stdout."
    )
    return cast(F, option(checked))
