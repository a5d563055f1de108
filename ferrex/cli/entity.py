"""``ferrex entity merge|split|differ``: correct entity resolution, as journal events.

A fact's subject is an entity; two facts conflict only when their subjects are one entity.
When the resolver merged two things that differ (or kept apart two spellings of one), these
commands say so: ``merge KEEP OTHER`` (OTHER is KEEP), ``split ENTITY SPELLING`` (that
spelling of ENTITY is something else: it becomes an entity of its own, with the facts it is
the subject of), ``differ A B`` (no possible conflicts between their facts).
"""

from __future__ import annotations

import json

import click

from ferrex.app import App
from ferrex.cli.home import existing_home
from ferrex.cli.through import SCOPED_NAMESPACE_HELP, agent_option, call_tool
from ferrex.server.tool_calls import EntityCommand


@click.group("entity")
def entity() -> None:
    """Merge entities, split a wrongly merged spelling off one, or say two differ.

    Name an entity by any of its spellings (a fact's subject, an entity a memory names) or
    by its id (ent_..., as a store's --json answer gives it)."""


def _action(action: str, help_text: str, first: str, second: str) -> click.Command:
    @click.command(action, help=help_text)
    @click.argument(first)
    @click.argument(second)
    @click.option("--namespace", help=SCOPED_NAMESPACE_HELP)
    @agent_option
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
    @click.pass_obj
    @existing_home
    def command(
        app: App, /, namespace: str | None, agent_id: str | None, as_json: bool, **names: str
    ) -> None:
        request = EntityCommand(
            action=action,
            first=names[first.lower()],
            second=names[second.lower()],
            namespace=namespace,
        )
        doc = call_tool(app, request, agent_id)
        if as_json:
            click.echo(json.dumps(doc))
            return
        words = {"merge": "merged into", "split": "split off as", "differ": "differs from"}
        click.echo(
            f"{doc['action']}: {doc['other']} {words[action]} {doc['entity']}"
            if action != "split"
            else f"split: {names[second.lower()]!r} is now {doc['other']}, "
            f"apart from {doc['entity']}"
        )

    return command


entity.add_command(
    _action(
        "merge", "OTHER is the entity KEEP: its spellings and links join KEEP.", "KEEP", "OTHER"
    )
)
entity.add_command(
    _action(
        "split",
        "SPELLING of ENTITY is something else: it becomes an entity of its own, with the "
        "facts whose subject it spells, and the two are said to differ.",
        "ENTITY",
        "SPELLING",
    )
)
entity.add_command(
    _action(
        "differ",
        "A and B are different things: their facts are never flagged as "
        "possible conflicts of each other.",
        "A",
        "B",
    )
)
