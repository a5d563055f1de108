"""``ferrex entity list|show|merge|split|differ``: see entities and correct their resolution.

A fact's subject is an entity; two facts conflict only when their subjects are one entity.
When the resolver merged two things that differ (or kept apart two spellings of one), these
commands say so: ``merge KEEP OTHER`` (OTHER is KEEP), ``split ENTITY SPELLING`` (that
spelling of ENTITY is something else: it becomes an entity of its own, with the facts it is
the subject of), ``differ A B`` (no possible conflicts between their facts). ``list [PREFIX]``
and ``show NAME`` read what the dashboard's entity pages read: the names the caller may see,
and one entity's spellings (how each was matched) and latest memories.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from ferrex.app import App
from ferrex.cli.home import existing_home
from ferrex.cli.through import SCOPED_NAMESPACE_HELP, agent_option, call_tool
from ferrex.server.tool_calls import DashboardRead, EntityCommand


@click.group("entity")
def entity() -> None:
    """List entities and show one; merge entities, split a wrongly merged spelling off one,
    or say two differ.

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


def _read(app: App, agent_id: str | None, view: str, namespace: str | None,
          **query: object) -> dict[str, object]:  # fmt: skip
    wanted = {"view": view, **query, **({"namespace": namespace} if namespace else {})}
    return call_tool(app, DashboardRead(query=wanted), agent_id)


_F = TypeVar("_F", bound=Callable[..., Any])


def _a_read(skipped: str) -> Callable[[_F], _F]:
    """The options of a read of entities (``skipped``: what ``--offset`` skips), then the
    home it reads, which must exist."""

    def wrap(command: _F) -> _F:
        for option in (
            existing_home,
            click.pass_obj,
            click.option("--json", "as_json", is_flag=True,
                         help="Print one JSON document on stdout."),
            agent_option,
            click.option("--offset", type=click.IntRange(min=0), default=0, show_default=True,
                         help=f"Skip this many {skipped}."),
            click.option("--namespace", help=SCOPED_NAMESPACE_HELP),
        ):  # fmt: skip
            command = cast(_F, option(command))
        return command

    return wrap


@entity.command("list")
@click.argument("prefix", required=False, default="")
@_a_read("names: the next page starts where the last ended")
def list_entities(
    app: App, prefix: str, namespace: str | None, offset: int, agent_id: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """The entity names you may see, alphabetically (those starting with PREFIX, in any
    case), a hundred a page; `entity show NAME` shows one."""
    doc = _read(app, agent_id, "entities", namespace, prefix=prefix, offset=offset)
    if as_json:
        click.echo(json.dumps(doc))
        return
    names = doc["names"]
    assert isinstance(names, list) and isinstance(doc["total"], int)
    for name in names:
        click.echo(name)
    shown = offset + len(names)
    more = f"; --offset {shown} for the next page" if shown < doc["total"] else ""
    click.echo(f"{len(names)} of {doc['total']} in {doc['namespace']}{more}", err=True)


@entity.command("show")
@click.argument("name")
@_a_read("of its memories (the last stored first)")
def show_entity(
    app: App, name: str, namespace: str | None, offset: int, agent_id: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """One entity, named by any spelling or its id: its spellings (how each was matched) and
    the memories that name it, the last stored first, a page at a time: each with the time it
    tells of, and [ended DATE] when it was replaced or ended (--json: t_invalid)."""
    doc = _read(app, agent_id, "entity", namespace, name=name, offset=offset)
    if as_json:
        click.echo(json.dumps(doc))
        return
    aliases = doc["aliases"]
    memories = doc["memories"]
    assert isinstance(aliases, list) and isinstance(memories, list)
    click.echo(f"{doc['name']} ({doc['namespace']})")
    for a in aliases:
        click.echo(f"  spelling {a['alias']!r}: {a['match']} {a['score']:g}")
    for m in memories:
        # A replaced or ended fact says so: the entity's history is listed whole.
        ended = f" [ended {m['t_invalid'][:10]}]" if m.get("t_invalid") else ""
        click.echo(f"  {m['id']} {m['type']} {m['event_time'][:10]}{ended}: {m['summary']}")
    if doc["more"]:
        click.echo(f"more: --offset {offset + len(memories)}", err=True)
