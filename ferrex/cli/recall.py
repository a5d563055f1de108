"""``ferrex recall``: hybrid retrieval with freshness, from a shell."""

from __future__ import annotations

import json

import click

from ferrex.app import App
from ferrex.cli.home import reads_home
from ferrex.cli.render import flatten
from ferrex.cli.through import AGENT_HELP, SCOPED_NAMESPACE_HELP, call_tool
from ferrex.rules import arguments
from ferrex.server.tool_calls import Recall, RecallArgs

MEMORY_TYPES = click.Choice(["episodic", "semantic", "procedural"])


@click.command()
@click.argument("query")
@click.option("--type", "types", type=MEMORY_TYPES, multiple=True, help="Only these types.")
@click.option("--entity", "entities", multiple=True, help="Only memories about this entity.")
@click.option(
    "--limit",
    type=click.IntRange(1, arguments.MAX_RECALL_LIMIT),
    help=f"How many results (default {arguments.RECALL_LIMIT}).",
)
@click.option("--include-stale", is_flag=True, help="Also show memories labelled stale.")
@click.option("--include-invalidated", is_flag=True, help="Also show superseded memories.")
@click.option("--as-of", help="What was valid at this time (ISO 8601), superseded since or not.")
@click.option("--after", help="Only memories whose event time is at or after this.")
@click.option("--before", help="Only memories whose event time is before this.")
@click.option("--namespace", help=SCOPED_NAMESPACE_HELP)
@click.option("--agent-id", help=AGENT_HELP)
@click.option("--explain", is_flag=True, help="Show the score of every stage.")
@click.option(
    "--strategy",
    type=click.Choice(arguments.STRATEGIES),
    default=arguments.DEFAULT_STRATEGY,
    show_default=True,
    help="How to weigh the evidence (no strategy switches a leg off).",
)
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Drop results less relevant than this, 0 to 1; 0 keeps all (default: leave out "
    "those judged irrelevant).",
)
@click.option(
    "--validate",
    "validate_ids",
    multiple=True,
    help="Confirm this result id as correct (marks it validated now). Repeatable.",
)
@reads_home
def recall(
    app: App,
    /,
    query: str,
    types: tuple[str, ...],
    entities: tuple[str, ...],
    limit: int | None,
    include_stale: bool,
    include_invalidated: bool,
    as_of: str | None,
    after: str | None,
    before: str | None,
    namespace: str | None,
    agent_id: str | None,
    explain: bool,
    strategy: str,
    min_relevance: float | None,
    validate_ids: tuple[str, ...],
    as_json: bool,
) -> None:
    """Find the memories that answer QUERY (dense + BM25, fused, freshest first on ties).

    Each result shows its freshness: fresh, aging, stale (hidden unless --include-stale) or
    superseded (hidden unless --include-invalidated or --as-of). A recall counts as an
    access of each result, never as a validation.
    """
    args = RecallArgs(
        query=query, types=types, entities=entities,
        namespace=namespace, limit=limit or app.config["recall.limit"],
        include_stale=include_stale, include_invalidated=include_invalidated,
        as_of=as_of, after=after, before=before, explain=explain, strategy=strategy,
        min_relevance=min_relevance,
    )  # fmt: skip
    request = Recall(args=args, validate_ids=validate_ids)
    result = call_tool(app, request, agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(result))
        return
    if not result["results"]:
        click.echo("no memories found")
    elif result.get("nothing_relevant"):
        click.echo(f"({result['note']})", err=True)
    for item in result["results"]:
        label = item["freshness"]["label"]
        if item["type"] == "semantic":
            text = f"{item['subject']} {item['predicate']} {item['object']}"
        elif item["type"] == "procedural":
            text = f"{item['name']} (v{item['version']}): " + "; ".join(item["steps"])
        else:
            text = item["content"]
        flags = " CONTRADICTED" if item.get("contradiction") else ""
        if item.get("possible_conflict"):
            flags += f", may conflict with {', '.join(item['possible_conflict'])}"
        flags += ", pinned" if item.get("pinned") else ""
        flags += f", importance {item['importance']:g}" if "importance" in item else ""
        flags += f", expires {item['expires_at']}" if item.get("expires_at") else ""
        flags += f", summary of {item['summary_of']}" if item.get("summary_of") else ""
        relevant = item["relevance_label"]
        click.echo(f"{item['id']}  [{item['type']}, {label}, {relevant}{flags}]  {text}")
        if explain:  # every stage's score, the ones that did not run left out
            stages = [(k, v) for k, v in flatten(item["explain"]) if v != "-"]
            click.echo("    " + "  ".join(f"{k} {v}" for k, v in stages))
    if result["hidden"]:
        held = ", ".join(f"{n} {why}" for why, n in sorted(result["hidden"].items()))
        click.echo(f"(held back: {held})", err=True)
        if result["hidden"].get("irrelevant") and min_relevance is None:
            click.echo("(--min-relevance 0 shows the irrelevant ones too)", err=True)
    if result["unknown_entities"]:
        click.echo(f"(unknown entities: {', '.join(result['unknown_entities'])})", err=True)
    if result.get("warning"):  # e.g. keywords alone: the embeddings server is unreachable
        click.echo(f"(warning: {result['warning']})", err=True)
