"""``ferrex stats`` and ``ferrex reflect``: the memory as a whole, from a shell."""

from __future__ import annotations

import json

import click

from ferrex.app import App
from ferrex.cli.through import call_tool


@click.command("stats")
@click.option("--namespace", help="Only this namespace (default: all).")
@click.option("--detailed", is_flag=True, help="Counts, staleness, storage, lag and models.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def stats_cmd(app: App, namespace: str | None, detailed: bool, as_json: bool) -> None:
    """How much is remembered, what is recent, and what needs attention.

    The brief form is what an agent reads at the start of a conversation; --detailed adds
    counts per type, the staleness distribution, conflicts, entities, storage sizes, the
    journal position and projection lag, and the models in use.
    """
    doc = call_tool(app, "stats", {"namespace": namespace, "detailed": detailed})
    if as_json:
        click.echo(json.dumps(doc))
        return
    attention = doc["needs_attention"]
    click.echo(
        f"{doc['total']} memories; needs attention: {attention['stale']} stale, "
        f"{attention['conflicts']} conflicts, {attention['unvalidated']} never validated"
    )
    for item in doc["recent"]:
        click.echo(f"  {item['id']} [{item['type']}] {item['summary']}")
    if detailed:
        for key in ("by_type", "staleness", "journal", "storage_bytes", "models"):
            click.echo(f"{key}: {json.dumps(doc[key])}")


@click.command("reflect")
@click.option("--namespace", help="Only this namespace (default: all).")
@click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def reflect_cmd(app: App, namespace: str | None, limit: int, as_json: bool) -> None:
    """What needs attention: stale and never-validated memories (with reasons), active
    contradictions, forget candidates (least used), and entities nobody mentions lately."""
    doc = call_tool(app, "reflect", {"namespace": namespace, "limit": limit})
    if as_json:
        click.echo(json.dumps(doc))
        return
    for section in ("stale", "unvalidated", "contradictions", "forget_candidates",
                    "dormant_entities"):  # fmt: skip
        items = doc[section]
        click.echo(f"{section.replace('_', ' ')}: {len(items)}")
        for item in items:
            click.echo(f"  {json.dumps(item, ensure_ascii=False)}")
