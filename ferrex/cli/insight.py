"""``ferrex stats`` and ``ferrex reflect``: the memory as a whole, from a shell."""

from __future__ import annotations

import json
from typing import Any

import click

from ferrex.app import App
from ferrex.cli.home import reads_home
from ferrex.cli.render import count_of, echo_pairs, echo_table, flatten, scalar
from ferrex.cli.through import OVERVIEW_NAMESPACE_HELP, agent_option, call_tool
from ferrex.rules import arguments
from ferrex.server.tool_calls import Reflect, Stats


@click.command("stats")
@click.option("--namespace", help=OVERVIEW_NAMESPACE_HELP)
@agent_option
@click.option("--detailed", is_flag=True, help="Counts, staleness, storage, lag and models.")
@reads_home
def stats_cmd(
    app: App, namespace: str | None, agent_id: str | None, detailed: bool, as_json: bool
) -> None:
    """How much is remembered, what is recent, and what needs attention.

    The brief form is what an agent reads at the start of a conversation; --detailed adds
    counts per type, the staleness distribution, conflicts, entities, storage sizes, the
    journal position and projection lag, and the models in use.
    """
    doc = call_tool(app, Stats(namespace=namespace, detailed=detailed), agent_id)
    if as_json:
        click.echo(json.dumps(doc))
        return
    attention = doc["needs_attention"]
    total = count_of(doc["total"], "memory", "memories")
    click.echo(
        f"{total}; needs attention: {attention['stale']} stale, "
        f"{count_of(attention['conflicts'], 'conflict')}, "
        f"{count_of(attention.get('possible_conflicts', 0), 'possible conflict')}, "
        f"{attention['unvalidated']} never validated"
        + (f"; {doc['expiring']} expiring" if doc.get("expiring") else "")
    )
    echo_table(doc["recent"], ("id", "type", "summary"))
    if not detailed:
        return
    for key, title in (("by_type", "by type"), ("staleness", "staleness"),
                       ("journal", "journal"), ("storage_bytes", "storage (bytes)"),
                       ("models", "models")):  # fmt: skip
        value = doc.get(key)
        if value is None:
            continue
        click.echo(f"{title}:")
        echo_pairs(flatten(value) if isinstance(value, dict) else [(key, scalar(value))])
    if "entities" in doc:
        click.echo(f"entities: {scalar(doc['entities'])}")
    conflicts = doc.get("conflicts") or []
    if conflicts:
        click.echo(f"conflicts: {len(conflicts)}")
        for conflict in conflicts:
            click.echo(f"  {_conflict_line(conflict)}")


@click.command("reflect")
@click.option("--namespace", help=OVERVIEW_NAMESPACE_HELP)
@agent_option
@click.option(
    "--limit",
    type=click.IntRange(1, arguments.MAX_REFLECT_LIMIT),
    default=arguments.REFLECT_LIMIT,
    show_default=True,
)
@reads_home
def reflect_cmd(
    app: App, namespace: str | None, agent_id: str | None, limit: int, as_json: bool
) -> None:
    """What needs attention: stale and never-validated memories (with reasons), active
    contradictions, forget candidates (least used), and entities nobody mentions lately."""
    doc = call_tool(app, Reflect(namespace=namespace, limit=limit), agent_id)
    if as_json:
        click.echo(json.dumps(doc))
        return
    columns: dict[str, tuple[str, ...]] = {
        "stale": ("id", "staleness", "reasons", "summary"),
        "unvalidated": ("id", "age_days", "summary"),
        "forget_candidates": ("id", "access_count", "last_accessed", "label", "eviction",
                              "summary"),
        "dormant_entities": ("id", "last_referenced", "name"),
    }  # fmt: skip
    for section in ("stale", "unvalidated", "contradictions", "possible_conflicts",
                    "forget_candidates", "dormant_entities"):  # fmt: skip
        items = doc.get(section, [])
        click.echo(f"{section.replace('_', ' ')}: {len(items)}")
        if section == "contradictions":
            for item in items:
                click.echo(f"  {_conflict_line(item)}")
        elif section == "possible_conflicts":
            for item in items:
                sides = " | ".join(
                    f"{scalar(f.get('subject'))} {scalar(f.get('predicate'))} "
                    f"{scalar(f.get('object'))} ({scalar(f.get('id'))})"
                    for f in item.get("facts", [])
                )
                click.echo(f"  {sides}  [{scalar(item.get('reason'))}]")
                if item.get("what_to_do"):
                    click.echo(f"    {scalar(item.get('what_to_do'))}")
        else:
            echo_table(items, columns[section])


def _conflict_line(conflict: Any) -> str:
    """``subject predicate: object (id) | object (id)`` for a contradiction."""
    if not isinstance(conflict, dict):
        return scalar(conflict)
    facts = conflict.get("facts")
    if isinstance(facts, list):
        sides = " | ".join(
            f"{scalar(f.get('object'))} ({scalar(f.get('id'))})" if isinstance(f, dict)
            else scalar(f)
            for f in facts
        )  # fmt: skip
        where = f"[{conflict['namespace']}] " if conflict.get("namespace") else ""
        return (
            f"{where}{scalar(conflict.get('subject'))} {scalar(conflict.get('predicate'))}: {sides}"
        )
    return "; ".join(f"{k} {v}" for k, v in flatten(conflict))
