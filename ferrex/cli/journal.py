"""``ferrex journal …``: inspect, verify and repair the event journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ferrex.app import App
from ferrex.errors import JournalFailure, UsageError, from_journal_error
from journal import JournalError, plan_repair, repair, to_builtins, verify
from journal.events import KNOWN_TAGS


@click.group()
def journal() -> None:
    """Inspect, verify and repair the event journal (the source of truth)."""


def _journal_dir(app: App) -> Path:
    if not app.journal_dir.is_dir():
        raise UsageError(
            f"no journal at {app.journal_dir}",
            hint="check --home / FERREX_HOME; a journal is created by the first store",
        )
    return app.journal_dir


@journal.command("verify")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def verify_cmd(app: App, as_json: bool) -> None:
    """Check every record: framing, checksums, positions, the hash chain and memory bodies.

    Read-only: it changes nothing and can run while ferrex is serving. Exits 0 when the
    journal is intact, 3 when it is damaged (the first problem is printed precisely).
    """
    try:
        report = verify(_journal_dir(app))
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    problem = report.problem
    doc: dict[str, Any] = {
        "ok": report.ok,
        "segments": report.segments,
        "records": report.records,
        "events": report.events,
        "head_position": report.head_position,
        "head_hash": report.head_hash.hex(),
        "redacted_bodies": report.redacted_bodies,
        "accepted_gaps": report.gaps,
        "problem": None
        if problem is None
        else {
            "kind": problem.kind,
            "segment": problem.segment.name,
            "offset": problem.offset,
            "position": problem.position,
            "reason": problem.reason,
        },
        "torn_tail": None
        if report.torn_tail is None
        else {
            "segment": report.torn_tail.segment.name,
            "offset": report.torn_tail.offset,
            "length": report.torn_tail.length,
            "reason": report.torn_tail.reason,
        },
    }
    if as_json:
        click.echo(json.dumps(doc))
    else:
        click.echo(
            f"{report.records} records in {report.segments} segments, "
            f"head {report.head_position} ({report.head_hash.hex()[:16]}…)"
        )
        if report.torn_tail is not None:
            t = report.torn_tail
            click.echo(
                f"note: {t.length} incomplete bytes at the end of {t.segment.name} "
                f"(offset {t.offset}: {t.reason}); a write in progress, or a torn write that "
                "the next open sets aside"
            )
        if problem is not None:
            click.echo(
                f"DAMAGED: {problem.segment.name} offset {problem.offset}"
                f" (position {problem.position}): {problem.kind}: {problem.reason}"
            )
        else:
            click.echo("ok: framing, positions, hash chain and bodies verified")
    if problem is not None:
        raise click.exceptions.Exit(JournalFailure.exit_code)


@journal.command("show")
@click.option("--after", type=click.IntRange(min=0), default=0, help="Only records after this.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N records.")
@click.option(
    "--type",
    "types",
    multiple=True,
    help="Only records with an event of this type (e.g. memory.stored). Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document (an array) on stdout.")
@click.pass_obj
def show_cmd(
    app: App, after: int, limit: int | None, types: tuple[str, ...], as_json: bool
) -> None:
    """Print records as readable JSON, one per line (or one array with --json)."""
    unknown = sorted(set(types) - KNOWN_TAGS)
    if unknown:
        raise UsageError(
            f"unknown event type {', '.join(unknown)}",
            hint=f"known types: {', '.join(sorted(KNOWN_TAGS))}",
        )
    out: list[dict[str, Any]] = []
    shown = 0
    _journal_dir(app)
    try:
        for record in app.journal().read(after=after, hashes=True):
            if limit is not None and shown >= limit:
                break
            view = to_builtins(record)
            if types and not any(e["event"] in types for e in view["events"]):
                continue
            shown += 1
            if as_json:
                out.append(view)
            else:
                click.echo(json.dumps(view, ensure_ascii=False))
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False))


@journal.command("repair")
@click.option("--apply", is_flag=True, help="Do it. Without it, only say what would be done.")
@click.pass_obj
def repair_cmd(app: App, apply: bool) -> None:
    """Set a damaged record aside so the journal opens again, saying exactly what is lost.

    Without --apply this is a dry run. Stop every ferrex process on this data directory
    first. The damaged bytes are kept in a file beside the segment, and the repair is
    recorded in repairs.json; run it again if `journal verify` still reports damage.
    """
    directory = _journal_dir(app)
    try:
        entry = repair(directory) if apply else plan_repair(directory)
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    if entry is None:
        click.echo("nothing to repair: the journal verifies")
        return
    lost = (
        f"positions {entry.lost_positions[0]}..{entry.lost_positions[1]}"
        if entry.lost_positions
        else "no record"
    )
    verb = "set aside" if apply else "would set aside"
    click.echo(
        f"{verb}: {entry.segment} offset {entry.offset}, {entry.length} bytes "
        f"({entry.reason}); lost: {lost}; the journal resumes at position "
        f"{entry.resume_position}"
    )
    if entry.saved_to and apply:
        click.echo(f"the damaged bytes are kept in {directory / entry.saved_to}")
    if not apply:
        click.echo("dry run: nothing changed. Run again with --apply to do it.", err=True)
