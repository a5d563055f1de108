"""``ferrex config show``: the effective configuration and where each value came from."""

from __future__ import annotations

import json

import click

from ferrex.app import App
from ferrex.config import KEYS
from ferrex.core.settings import build_synonyms
from ferrex.parts import build_rules
from ferrex.read.request import RecallSettings
from journal.pg_connect import redacted


@click.group("config")
def config_group() -> None:
    """Inspect the configuration (ferrex.toml, environment, flags)."""


def _shown(name: str, value: object) -> object:
    """The value to print: the journal's URL may carry the database password, and the
    embeddings server's URL credentials; neither is shown."""
    if name in ("journal.url", "models.embedding_url") and isinstance(value, str):
        return redacted(value)
    return value


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def show(app: App, as_json: bool) -> None:
    """Print every setting, its value and its origin (default, file, env VAR or flag).

    Precedence, highest first: flags, environment variables, the file, defaults. The
    settings are built as a call builds them, so a value every recall would refuse (a
    staleness table, a weight out of range) is an error here too.
    """
    RecallSettings.from_config(app.config)
    build_synonyms(app.config)
    build_rules(app.config)
    helps = {key.name: key for key in KEYS}
    rows = [
        {
            "key": name,
            "value": _shown(name, setting.value),
            "origin": setting.origin,
            "env": helps[name].env,
            "help": helps[name].help,
        }
        for name, setting in app.config.items()
    ]
    if as_json:
        click.echo(json.dumps({"file": str(app.config.file), "settings": rows}))
        return
    click.echo(f"file: {app.config.file}{'' if app.config.file.exists() else ' (absent)'}")
    for row in rows:
        click.echo(f"{row['key']} = {json.dumps(row['value'])}    # {row['origin']}")
