"""``ferrex journal …``: inspect, verify, repair, compact and copy the event journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ferrex.app import App, open_journal_at, translated
from ferrex.cli.home import existing_home, reads_home
from ferrex.cli.progress import progress
from ferrex.cli.render import count_of, echo_either
from ferrex.errors import JournalFailure, UsageError, from_journal_error
from ferrex.porting.gitverify import AgainstReport, verify_against
from journal import JournalError, to_builtins
from journal.events import KNOWN_TAGS
from journal.verify import VerifyReport
from projections.generations import applied_position, read_pointer


@click.group()
def journal() -> None:
    """Inspect, verify and repair the event journal (the source of truth)."""


def _journal_dir(app: App) -> Path:
    if app.journal_url is not None:
        raise UsageError(
            "this command works on a journal in files; journal.url puts this one on PostgreSQL",
            hint="PostgreSQL's own backups and replicas protect a journal there; `ferrex "
            "journal verify` checks it",
        )
    if not app.journal_dir.is_dir():
        raise UsageError(
            f"no journal at {app.journal_dir}",
            hint="check --home / FERREX_HOME; a journal is created by the first store",
        )
    return app.journal_dir


@journal.command("verify")
@click.option(
    "--against",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Also check that the git export in DIR (`ferrex export git DIR`) matches the "
    "journal, record by record.",
)
@reads_home
def verify_cmd(app: App, against: Path | None, as_json: bool) -> None:
    """Check every record: framing, checksums, positions, the hash chain and memory bodies.

    Read-only: it changes nothing and can run while ferrex is serving. Exits 0 when the
    journal is intact, 3 when it is damaged (the first problem is printed precisely) or
    ends before a position the read model applied (acknowledged records missing).
    With --against DIR it also reads the journal as other commands do (opening it sets a
    torn tail aside) and exits 3 when the export differs from the journal: an edited,
    missing or extra record, named by file, line and position.
    """
    # Positions the projections applied that the journal no longer holds: acknowledged
    # records cut (a torn tail) or a journal put back from an older copy. Read before the
    # journal, so a record a server appends and applies meanwhile is no false alarm.
    applied = applied_position(app.home)
    try:
        report = _verified(app)
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    problem = report.problem
    export = None
    if against is not None and problem is None:
        try:
            export = verify_against(app.journal(), against.absolute())
        except JournalError as exc:
            raise from_journal_error(exc) from exc
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
    if export is not None:
        doc["export"] = export.as_dict()
    lines = [
        f"{count_of(report.records, 'record')} in {count_of(report.segments, 'segment')}, "
        f"head {report.head_position} ({report.head_hash.hex()[:16]}…)"
    ]
    if report.torn_tail is not None:
        t = report.torn_tail
        lines.append(
            f"note: {t.length} incomplete bytes at the end of {t.segment.name} "
            f"(offset {t.offset}: {t.reason}); a write in progress, or a torn write that "
            "the next open sets aside"
        )
    missing = applied > report.head_position and problem is None
    if missing:
        doc["ok"] = False
        doc["missing"] = {"from": report.head_position + 1, "to": applied}
        lines.append(
            f"MISSING: positions {report.head_position + 1} to {applied} were written and "
            "applied (the read model holds them) but the journal ends before them: "
            "acknowledged records were cut or the journal was put back from an older copy; "
            "put them back from a copy, or `ferrex replay` to go on without them"
        )
    if problem is not None:
        lines.append(
            f"DAMAGED: {problem.segment.name} offset {problem.offset}"
            f" (position {problem.position}): {problem.kind}: {problem.reason}"
        )
    elif not missing:
        lines.append("ok: framing, positions, hash chain and bodies verified")
    if export is not None:
        lines += _against_lines(export)
    echo_either(doc, as_json, "\n".join(lines))
    if problem is not None or missing or (export is not None and not export.ok):
        raise click.exceptions.Exit(JournalFailure.exit_code)


def _verified(app: App) -> VerifyReport:
    if app.journal_url is None:
        _journal_dir(app)  # a clear refusal when there is none
    return app.journal_to_verify().verify()


def _against_lines(export: AgainstReport) -> list[str]:
    """What ``journal verify --against`` says of the export, a line each."""
    behind = max(0, export.journal_head - export.position)
    pending = f"; {behind} newer records not exported yet" if behind else ""
    if export.ok:
        return [
            f"export {export.directory}: {count_of(export.checked, 'record')} "
            f"{'matches' if export.checked == 1 else 'match'} the journal "
            f"(up to position {export.position}){pending}"
        ]
    lines = [
        f"EXPORT MISMATCH: {export.directory}: {count_of(export.problem_count, 'problem')} "
        f"in {count_of(export.checked, 'record')} checked"
    ]
    lines += [f"  {mismatch.kind}: {mismatch.describe()}" for mismatch in export.problems[:20]]
    if export.problem_count > 20:
        lines.append(f"  … and {export.problem_count - 20} more (--json lists up to 100)")
    return lines


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
@existing_home
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
    if app.journal_url is None:
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
@existing_home
def repair_cmd(app: App, apply: bool) -> None:
    """Set a damaged record aside so the journal opens again, saying exactly what is lost.

    Without --apply this is a dry run. Stop every ferrex process on this data directory
    first. The damaged bytes are kept in a file beside the segment, and the repair is
    recorded in repairs.json; run it again if `journal verify` still reports damage.
    """
    if app.journal_url is not None:
        _report_only(app, apply)
        return
    directory = _journal_dir(app)
    rebuilt = apply and read_pointer(app.home) is not None
    try:
        if apply:
            with progress("rebuilding the projections") as update:
                entry = app.repair_journal(update)
        else:
            entry = app.planned_repair()
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
        f"{verb}: {entry.segment} offset {entry.offset}, {count_of(entry.length, 'byte')} "
        f"({entry.reason}); lost: {lost}; the journal resumes at position "
        f"{entry.resume_position}"
    )
    if entry.saved_to and apply:
        click.echo(f"the damaged bytes are kept in {directory / entry.saved_to}")
    if rebuilt:
        click.echo("rebuilt the projections from the repaired journal")
    if not apply:
        click.echo(
            "dry run: nothing changed. Run again with --apply to do it (which also rebuilds "
            "the projections from the repaired journal).",
            err=True,
        )


def _report_only(app: App, apply: bool) -> None:
    """repair on PostgreSQL: say what is damaged; the repair is a restore from its backups."""
    try:
        report = _verified(app)
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    if report.problem is None:
        click.echo("nothing to repair: the journal verifies")
        return
    problem = report.problem
    click.echo(
        f"DAMAGED: position {problem.position}: {problem.kind}: {problem.reason}; a journal on "
        "PostgreSQL is repaired from PostgreSQL (a replica or a backup), not by ferrex"
    )
    if apply:
        raise UsageError(
            "ferrex does not set records aside in a journal on PostgreSQL",
            hint="restore the damaged rows of ferrex_journal_records from a replica or backup",
        )
    raise click.exceptions.Exit(JournalFailure.exit_code)


@journal.command("compact")
@click.option("--dry-run", is_flag=True, help="Only say what would be purged; change nothing.")
@click.option(
    "--journal-only",
    is_flag=True,
    help="Purge the journal, its leftovers and the embedding cache, but do not rebuild the "
    "projections yet (safe beside a running server; run compact again later).",
)
@reads_home
def compact_cmd(app: App, dry_run: bool, journal_only: bool, as_json: bool) -> None:
    """Purge the text of forgotten memories from the data directory, for real.

    `ferrex forget` takes a memory out of recall and of every projection at once, but its
    text stays in the journal (and in free space of the read model, Qdrant and the embedding
    cache). compact removes it everywhere under the data directory:

    \b
    - journal: sealed segments are rewritten with the forgotten bodies redacted (copy,
      fsync, rename: a crash leaves the old file or the new one, both valid). Each record
      keeps the hash of its text, so the hash chain and `journal verify` still pass. The
      active segment is sealed first if it holds such text (the next append starts a new
      segment). Torn tails and repair leftovers beside the segments are scrubbed too.
    - embedding cache: the vectors of those texts are deleted and the file rewritten.
    - projections: rebuilt into a new generation from the compacted journal; the old read
      model and Qdrant collections are deleted (deleted rows and points leave bytes behind).

    \b
    Only forgotten memories are purged: superseded versions keep their text (history is
    kept on purpose), and entity names are not memory text. Copies outside the data
    directory (a git export, backups) are not touched: regenerate an export from the
    compacted journal. Writers wait while the journal is rewritten; readers are not
    disturbed. With embedded Qdrant, stop a running server before the rebuild (or use
    --journal-only now and compact again later). Compacting again changes nothing.

    \b
    Exit codes: 0 done (or nothing to do; --dry-run changes nothing), 2 usage, 3 the
    journal does not verify (nothing changed), 4 the embedding model is unavailable for
    the rebuild, 5 a store is held by another process or unreachable (the journal may be
    compacted already; run compact again once it is free), 1 unexpected failure.
    """
    import os

    from ferrex import compaction
    from ferrex.cli.progress import progress

    if app.journal_url is not None:
        _compact_shared(app, dry_run, as_json)
        return
    _journal_dir(app)
    crash = os.environ.get(compaction.CRASH_ENV)
    step = compaction.crash_hook(crash) if crash else None
    with progress("compacting", unit="segment reads") as update, progress("rebuilding") as rebuilt:
        outcome = compaction.compact(
            app,
            dry_run=dry_run,
            journal_only=journal_only,
            step=step,
            progress=update,
            rebuild_progress=rebuilt,
        )
    doc = outcome.as_dict()
    if as_json:
        click.echo(json.dumps(doc))
    else:
        for line in _compact_lines(doc):
            click.echo(line)
    if outcome.error is not None:
        raise outcome.error
    if outcome.check is not None and not outcome.check.ok:
        raise click.exceptions.Exit(JournalFailure.exit_code)


PURGE_EACH_SERVER = (
    "each ferrex server that shares this journal still holds the forgotten text in its own "
    "projections and embedding cache: on each, stop the server and run `ferrex replay` "
    "(a new generation is built from the compacted journal and the old one deleted)"
)


def _compact_shared(app: App, dry_run: bool, as_json: bool) -> None:
    """compact on PostgreSQL: redact the shared journal's forgotten bodies in place."""
    journal = app.journal()
    if dry_run:
        from journal.postgres import PostgresJournal, redactions

        assert isinstance(journal, PostgresJournal)  # journal.url always opens PostgreSQL

        try:
            positions = [position for _, position, _ in redactions(journal)]
        except JournalError as exc:
            raise from_journal_error(exc) from exc
        if as_json:
            click.echo(json.dumps({"dry_run": True, "would_redact_positions": positions}))
        else:
            click.echo(f"would redact forgotten bodies in {count_of(len(positions), 'record')}")
            click.echo("dry run: nothing changed")
        return
    try:
        changed = journal.compact()
        check = journal.verify()
    except JournalError as exc:
        raise from_journal_error(exc) from exc
    doc = {
        "redacted_records": changed,
        "verify": {"ok": check.ok, "head_position": check.head_position},
        "each_server": PURGE_EACH_SERVER,
    }
    if as_json:
        click.echo(json.dumps(doc))
    else:
        click.echo(f"redacted forgotten bodies in {count_of(changed, 'record')} of {journal.where}")
        click.echo(
            f"verify: {'ok' if check.ok else 'FAILED'}, head {check.head_position}, "
            f"{check.redacted_bodies} redacted bodies"
        )
        click.echo(f"note: {PURGE_EACH_SERVER}")
    if not check.ok:
        raise click.exceptions.Exit(JournalFailure.exit_code)


@journal.command("copy")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="URL|DIR",
    help="A postgresql:// URL (an empty database, or an unfinished copy), or a directory for "
    "a journal in files.",
)
@reads_home
def copy_cmd(app: App, to: str, as_json: bool) -> None:
    """Copy this journal, record for record, to PostgreSQL or to files.

    The records move byte for byte: positions, hashes and the hash chain are the same on
    both sides, which the copy checks at the end by comparing head hashes. Interrupted, it
    resumes: run it again and it continues where the target stops. A target holding
    another journal is refused. Then point journal.url (or FERREX_JOURNAL_URL) at the copy,
    or unset it to use a copied directory as this home's journal.
    """
    from ferrex.cli.progress import progress
    from journal.copy import copy
    from journal.pg_connect import is_url

    if app.journal_url is None:
        _journal_dir(app)
    source = app.journal()
    target_dir = None if is_url(to) else Path(to).expanduser().absolute()
    if (target_dir is not None and target_dir == app.journal_dir.absolute() and
            app.journal_url is None) or to == app.journal_url:  # fmt: skip
        raise UsageError("--to names this journal itself", hint="name another database or "
                         "directory")  # fmt: skip
    with translated():
        target = open_journal_at(to)
        try:
            with progress("copying") as update:
                report = copy(source, target, update)
        finally:
            target.close()
    where = target.where
    doc = {
        "to": where,
        "copied": report.copied,
        "resumed_at": report.resumed_at,
        "head_position": report.head_position,
        "head_hash": report.head_hash.hex(),
        "verified": True,
    }
    if as_json:
        click.echo(json.dumps(doc))
    else:
        resumed = f" (resumed after position {report.resumed_at})" if report.resumed_at else ""
        click.echo(f"copied {count_of(report.copied, 'record')} to {where}{resumed}")
        click.echo(
            f"verified: both heads are position {report.head_position} "
            f"({report.head_hash.hex()[:16]}…)"
        )


def _compact_lines(doc: dict[str, Any]) -> list[str]:
    would = doc["dry_run"]
    redacted = doc["redacted"]
    positions = ", ".join(str(r["position"]) for r in redacted[:20])
    more = f" and {len(redacted) - 20} more" if len(redacted) > 20 else ""
    lines = [
        f"{count_of(doc['forgotten_memories'], 'forgotten memory', 'forgotten memories')} in "
        "the journal; "
        f"{doc['already_redacted']} already redacted"
    ]
    if redacted:
        verb = "would redact" if would else "redacted"
        at = "position" if len(redacted) == 1 else "positions"
        lines.append(
            f"{verb} {count_of(len(redacted), 'body', 'bodies')} at {at} {positions}{more}"
        )
    segments = doc["segments_to_rewrite"] if would else [s["segment"] for s in doc[
        "segments_rewritten"]]  # fmt: skip
    if segments:
        verb = "would rewrite" if would else "rewrote"
        lines.append(f"{verb} {count_of(len(segments), 'segment')}: {', '.join(segments)}")
    if doc["sealed"]:
        lines.append(f"sealed the active segment; appends continue in {doc['sealed']}")
    if doc["would_seal"]:
        lines.append("would seal the active segment (it holds forgotten text)")
    if doc["leftovers_scrubbed"]:
        verb = "would scrub" if would else "scrubbed"
        lines.append(f"{verb} leftover files: {', '.join(doc['leftovers_scrubbed'])}")
    if doc["temps_removed"]:
        verb = "would remove" if would else "removed"
        lines.append(f"{verb} unfinished copies: {', '.join(doc['temps_removed'])}")
    cache = doc["cache"]
    if cache["texts"]:
        lines.append(
            f"embedding cache: {count_of(cache['texts'], 'text hash', 'text hashes')} "
            + (
                "to look up"
                if would
                else f"looked up, {count_of(cache['rows_deleted'], 'vector')} deleted"
            )
        )
    state = doc["projections"]["state"]
    if state == "rebuilt":
        lines.append(f"projections: rebuilt as generation {doc['projections']['generation']}")
    elif state != "unchanged":
        lines.append(f"projections: {state}")
    if doc["verify"] is not None:
        v = doc["verify"]
        lines.append(
            f"verify: {'ok' if v['ok'] else 'FAILED'}, head {v['head_position']}, "
            f"{v['redacted_bodies']} redacted bodies, hash chain intact"
            if v["ok"]
            else f"verify: FAILED at head {v['head_position']}"
        )
    lines.extend(f"note: {n}" for n in doc["notes"])
    if would:
        lines.append("dry run: nothing changed")
    elif not doc["changed"]:
        lines.append("nothing to compact")
    return lines
