"""``ferrex consolidate``: fold old episodes into extractive summaries, list them, undo one
or all.

Through the hub like the tools (a running server owns the stores). Folding and undoing all
run in rounds of ``ROUND`` summaries, one call each, so a long run shows its progress and
Ctrl-C leaves every finished round written. Exits 2 on a bad age or a bad combination of
options, 7 (``not_found``) when ``--undo`` or ``--show`` names no summary; nothing is
written then.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import click

from ferrex.app import App
from ferrex.cli.home import reads_home
from ferrex.cli.progress import progress
from ferrex.cli.render import count_of
from ferrex.cli.through import agent_option, call_tool
from ferrex.errors import UsageError
from ferrex.server.tool_calls import Consolidate

ROUND = 64
"""Summaries made or undone per call."""


@click.command()
@click.option("--dry-run", is_flag=True, help="Say what would be folded; write nothing.")
@click.option("--undo", "undo", metavar="ID", help="Undo the consolidation that made summary ID.")
@click.option("--undo-all", is_flag=True, help="Undo every consolidation (of --namespace).")
@click.option("--list", "list_", is_flag=True, help="List the summaries and what each folds.")
@click.option("--show", metavar="ID", help="Show summary ID and the text of what it folds.")
@click.option(
    "--older-than",
    "older_than",
    type=float,
    metavar="DAYS",
    help="Fold episodes ferrex learned more than DAYS ago (default: consolidation.after_days).",
)
@click.option("--namespace", help="Only this namespace (default: every namespace).")
@agent_option
@reads_home
def consolidate(
    app: App,
    dry_run: bool,
    undo: str | None,
    undo_all: bool,
    list_: bool,
    show: str | None,
    older_than: float | None,
    namespace: str | None,
    agent_id: str | None,
    as_json: bool,
) -> None:
    """Fold episodes learned long ago into one summary per conversation session.

    The default unit is the turn (consolidation.unit = "turn"): a summary is made of whole
    turns of its sources, never rewritten. Every turn that states something (a number, a
    name, an identifier or quoted term, a date, a first-person statement such as a decision
    or a preference) is kept; what carries no fact (greetings, thanks, questions,
    restatements) may go, up to consolidation.keep_ratio (0.8) of the text kept; a
    group in which every turn states something is left as it is. A group
    is one source's (a conversation's) or one episode's turns, split at pauses of more
    than 6 hours and never mixing memories whose entities do not overlap; per namespace,
    agent and visibility. A summary carries its sources' entities and highest importance,
    and is shared only if every source was. The sources leave current recall but stay in
    the journal (recall with --as-of before the consolidation sees them); recall marks a
    summary with `summary_of`. `--list` shows the summaries, `--show ID` one and its
    sources, `--undo ID` / `--undo-all` bring the sources back and forget the summaries.
    Pinned memories, memories with a ttl and summaries are never folded.
    """
    actions = [name for name, on in (("--undo", undo is not None), ("--undo-all", undo_all),
               ("--list", list_), ("--show", show is not None)) if on]  # fmt: skip
    if len(actions) > 1:
        raise UsageError(f"{' and '.join(actions)} cannot be combined", hint="one at a time")
    if actions and (dry_run or older_than is not None):
        raise UsageError(
            f"{actions[0]} takes no --dry-run or --older-than",
            hint="--dry-run and --older-than are for folding",
        )
    if undo is not None and namespace is not None:
        raise UsageError("--undo takes no --namespace", hint="the summary's id names it")
    if older_than is not None and not older_than >= 0:
        raise UsageError(
            f"--older-than must be 0 days or more, not {older_than}",
            hint="--older-than 30 folds what ferrex learned more than 30 days ago",
        )
    if list_ or show is not None:
        _list(app, namespace, show, agent_id, as_json)
    elif undo is not None:
        doc = call_tool(app, Consolidate(undo=undo), agent_id=agent_id)
        if as_json:
            click.echo(json.dumps(doc))
        else:
            back = count_of(len(doc["restored"]), "memory", "memories")
            click.echo(f"undid {doc['summary_id']}: {back} back in recall")
    elif undo_all:
        _undo_all(app, namespace, agent_id, as_json)
    else:
        _fold(app, older_than, namespace, dry_run, agent_id, as_json)


def _list(
    app: App, namespace: str | None, show: str | None, agent_id: str | None, as_json: bool
) -> None:
    request = Consolidate(list=True, namespace=namespace, summary_id=show)
    doc = call_tool(app, request, agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(doc))
        return
    for s in doc["summaries"]:
        folded = count_of(len(s["memory_ids"]), "memory", "memories")
        click.echo(
            f"{s['summary_id']}  {folded} of {s['group']} ({s['namespace']}), "
            f"{count_of(s['chars'], 'character')}, {s['visibility']}"
        )
        if show is None:
            continue
        click.echo(f"  summary: {s['content']}")
        for source in s["sources"]:
            click.echo(f"  {source['id']}  {source['content']}")
    if not doc["summaries"]:
        click.echo("no summaries")


def _undo_all(app: App, namespace: str | None, agent_id: str | None, as_json: bool) -> None:
    listed = call_tool(app, Consolidate(list=True, namespace=namespace), agent_id=agent_id)
    total = len(listed["summaries"])
    undone: list[dict[str, Any]] = []
    with progress("undoing", "summaries", quiet=as_json) as update:
        while len(undone) < total:
            request = Consolidate(undo_all=True, namespace=namespace, limit=ROUND)
            doc = call_tool(app, request, agent_id=agent_id)
            undone += doc["undone"]
            update(len(undone), total)
            if not doc["undone"]:
                break  # nothing left that could be undone (another process got there first)
    restored = sum(len(u["restored"]) for u in undone)
    if as_json:
        click.echo(json.dumps({"undone": undone, "restored": restored}))
    elif undone:
        summaries = count_of(len(undone), "summary", "summaries")
        click.echo(f"undid {summaries}: {count_of(restored, 'memory', 'memories')} back in recall")
    else:
        click.echo("no summaries to undo")


def _fold(
    app: App,
    older_than: float | None,
    namespace: str | None,
    dry_run: bool,
    agent_id: str | None,
    as_json: bool,
) -> None:
    fold = Consolidate(older_than_days=older_than, namespace=namespace)
    plan = call_tool(app, replace(fold, dry_run=True), agent_id=agent_id)
    if dry_run:
        _report(plan, as_json)
        return
    total = len(plan["summaries"])
    rounds: list[dict[str, Any]] = []
    with progress("folding", "summaries", quiet=as_json) as update:
        done = 0
        while done < total:
            doc = call_tool(app, replace(fold, max_groups=ROUND), agent_id=agent_id)
            rounds.append(doc)
            done += len(doc["summaries"])
            update(done, total)
            if not doc["summaries"]:
                break  # what is left can no longer be folded (changed meanwhile)
    summaries = [s for r in rounds for s in r["summaries"]]
    merged: dict[str, Any] = {
        "summaries": summaries,
        "folded": sum(len(s["memory_ids"]) for s in summaries),
        "chars": sum(s["chars"] for s in summaries),
        "source_chars": sum(s["source_chars"] for s in summaries),
        "position": next((r["position"] for r in reversed(rounds) if r["position"]), None),
        "dry_run": False,
    }
    warnings = [w for r in rounds for w in r.get("warnings", ())]
    if warnings:
        merged["warnings"] = list(dict.fromkeys(warnings))
    _report(merged, as_json)


def _report(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(doc))
        return
    verb = "would fold" if doc["dry_run"] else "folded"
    for s in doc["summaries"]:
        folded = count_of(len(s["memory_ids"]), "memory", "memories")
        click.echo(
            f"{verb} {folded} of {s['group']} ({s['namespace']}) into {s['summary_id']}: "
            f"{s['source_chars']} → {count_of(s['chars'], 'character')}, {s['visibility']}"
        )
    if not doc["summaries"]:
        click.echo("nothing to fold")
    elif doc["source_chars"]:
        click.echo(
            f"{verb} {count_of(doc['folded'], 'memory', 'memories')} into "
            f"{count_of(len(doc['summaries']), 'summary', 'summaries')}: "
            f"{doc['source_chars']} → {count_of(doc['chars'], 'character')}"
        )
