"""``ferrex consolidate``: fold old episodes into extractive summaries, or undo one.

Through the hub like the tools (a running server owns the stores). Exits 2 on a bad age,
7 (``not_found``) when ``--undo`` names no summary; nothing is written then.
"""

from __future__ import annotations

import json
from typing import Any

import click

from ferrex.app import App
from ferrex.cli.home import reads_home
from ferrex.cli.through import agent_option, call_tool
from ferrex.errors import UsageError


@click.command()
@click.option("--dry-run", is_flag=True, help="Say what would be folded; write nothing.")
@click.option("--undo", "undo", metavar="ID", help="Undo the consolidation that made summary ID.")
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
    older_than: float | None,
    namespace: str | None,
    agent_id: str | None,
    as_json: bool,
) -> None:
    """Fold episodes learned long ago into one summary per source or episode.

    A summary is an episodic memory made only of sentences of its sources (the sentences
    that cover most of the group's content words), with their entities, their highest
    importance, shared only if every source was. The sources leave current recall but stay
    in the journal (recall with --as-of before the consolidation sees them); `--undo ID`
    brings them back and forgets the summary. Pinned memories are never folded.
    """
    if undo is not None and (dry_run or older_than is not None):
        raise UsageError("--undo takes no --dry-run or --older-than", hint="undo one at a time")
    if older_than is not None and not older_than >= 0:
        raise UsageError(
            f"--older-than must be 0 days or more, not {older_than}",
            hint="--older-than 30 folds what ferrex learned more than 30 days ago",
        )
    args: dict[str, Any] = (
        {"undo": undo}
        if undo is not None
        else {"older_than_days": older_than, "namespace": namespace, "dry_run": dry_run}
    )
    doc = call_tool(app, "consolidate", args, agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(doc))
        return
    if undo is not None:
        click.echo(f"undid {doc['summary_id']}: {len(doc['restored'])} memories back in recall")
        return
    verb = "would fold" if doc["dry_run"] else "folded"
    for s in doc["summaries"]:
        click.echo(
            f"{verb} {len(s['memory_ids'])} memories of {s['group']} ({s['namespace']}) into "
            f"{s['summary_id']}: {s['source_chars']} → {s['chars']} characters, {s['visibility']}"
        )
    if not doc["summaries"]:
        click.echo("nothing to fold")
    elif doc["source_chars"]:
        click.echo(
            f"{verb} {doc['folded']} memories into {len(doc['summaries'])} summaries: "
            f"{doc['source_chars']} → {doc['chars']} characters"
        )
