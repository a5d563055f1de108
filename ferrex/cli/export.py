"""``ferrex export git | jsonl``: the journal as a git audit trail; the memories as a dump.

Exit codes beyond the common ones: 2 when the target is not ours to write (a non-empty
directory that is no export, the export of another journal, local changes), 3 when the
export's resume point is not in the journal, 5 when git is missing or fails.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from ferrex.app import App
from ferrex.cli.home import existing_home, reads_home
from ferrex.cli.progress import progress
from ferrex.cli.render import count_of
from ferrex.errors import UsageError
from ferrex.porting.dump import check_dump_target, write_dump, write_dump_file
from ferrex.porting.gitexport import export_git


@click.group("export")
def export() -> None:
    """Export the journal to git (audit) or the live memories to JSON lines (portable)."""


@export.command("git")
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--rewrite",
    is_flag=True,
    help="Regenerate the whole history from the journal (after `journal compact`) and "
    "prune the old one from DIR.",
)
@reads_home
def git_cmd(app: App, directory: Path, rewrite: bool, as_json: bool) -> None:
    """Write the journal into the git repository DIR as JSON lines, one record per line.

    Incremental: only the records after the last export, as one commit whose message
    counts what they changed. The resume point is committed with them, so a clone of DIR
    resumes too. Deterministic: the same journal exported in the same batches gives the
    same commit ids. DIR is created if missing; a non-empty DIR must be an export of this
    journal. Check an export with `ferrex journal verify --against DIR`.
    """
    _require_journal(app)
    _whole_home(app)
    with progress("exporting", "records") as update:
        result = export_git(app.journal(), directory.absolute(), rewrite=rewrite, progress=update)
    if as_json:
        click.echo(json.dumps(result.as_dict()))
        return
    s = result.summary
    if result.up_to_date:
        click.echo(f"{directory} is up to date (journal head {result.head_position})")
        return
    verb = "rewrote" if rewrite else "exported"
    click.echo(
        f"{verb} positions {s.first}..{s.last} ({count_of(s.records, 'record')}) in "
        f"{count_of(len(result.commits), 'commit')}, "
        f"head {result.commits[-1][:12]}"
    )
    click.echo(
        f"{s.stored} stored, {s.superseded} superseded, "
        f"{s.folds() + ', ' if s.folds() else ''}{s.forgotten} forgotten, "
        f"{s.validated} validated ({count_of(s.redacted, 'body', 'bodies')} redacted)"
    )
    if result.still_reachable:
        click.echo(
            "note: the replaced history is still reachable from "
            f"{', '.join(result.still_reachable)}; force-push the export and re-clone copies "
            "so the purged text leaves them too",
            err=True,
        )


@export.command("jsonl")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=str))
@click.option(
    "--current-only",
    is_flag=True,
    help="Only the memories valid now, a portable snapshot (a backup holds history too).",
)
@click.option("--include-invalidated", is_flag=True, hidden=True)  # the default now
@click.option("--namespace", "only_namespace", help="Only this namespace.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout.")
@click.pass_obj
@existing_home
def jsonl_cmd(
    app: App,
    file: str,
    current_only: bool,
    include_invalidated: bool,
    only_namespace: str | None,
    as_json: bool,
) -> None:
    """Back up the memories to FILE (- for stdout), one JSON object per line.

    The dump is whole at one journal position, which its first line names with its format:
    every memory not forgotten, superseded ones and their history included (--current-only
    for the valid ones alone), a line per entity (id, name, scope, spellings), then the
    possible conflicts, differences and consolidations between them. Each memory's line
    keeps its id, type, text, entities (by name and id), namespace, agent, visibility,
    source, confidence, times, supersede links, marks, multi-valued flag, derived episode
    and import key, so `ferrex import FILE` into an empty home restores them with their ids
    and times, created_at (when this home learned each) included; only the journal
    positions and the entities' creation times are the import's.

    It reads the journal, not the stores, so it runs while servers use the home.
    """
    if file == "-" and as_json:
        raise UsageError("--json prints on stdout, where the dump goes with FILE -",
                         hint="write the dump to a file to get the JSON summary")  # fmt: skip
    if current_only and include_invalidated:
        raise UsageError(
            "--include-invalidated and --current-only contradict each other",
            hint="history is included by default; drop --include-invalidated",
        )
    if file != "-":
        check_dump_target(Path(file))  # before the journal is read, which may take minutes
    _require_journal(app)
    _whole_home(app)
    with (
        tempfile.TemporaryDirectory(prefix=".export-", dir=_scratch_dir(app)) as scratch,
        progress("reading", "records") as read_update,
    ):
        read_model = app.journal_read_model(Path(scratch) / "export.sqlite", read_update)
        try:
            with progress("exporting", "memories") as update:
                options: dict[str, Any] = {
                    "current_only": current_only,
                    "namespace": only_namespace,
                    "progress": update,
                }
                if file == "-":
                    result = write_dump(read_model, sys.stdout.buffer, **options)
                    sys.stdout.buffer.flush()
                else:
                    result = write_dump_file(read_model, Path(file), **options)
        finally:
            read_model.close()
    if as_json:
        click.echo(json.dumps({"file": file, **result.as_dict()}))
        return
    # Which of the memories are invalidated (superseded history) or past their time to live
    # (dumped, hidden and swept once restored), said only when some are.
    said = [f"{result.invalidated} invalidated"] if result.invalidated else []
    if result.expired:
        whose = "its" if result.expired == 1 else "their"
        said.append(f"{result.expired} past {whose} time to live")
    invalidated = f" ({', '.join(said)})" if said else ""
    skipped = ""
    if result.redacted:
        left_out = count_of(result.redacted, "redacted memory", "redacted memories")
        skipped = f"; {left_out} left out"
    click.echo(
        f"exported {count_of(result.memories, 'memory', 'memories')}{invalidated} and "
        f"{count_of(result.entities, 'entity', 'entities')} to "
        f"{'stdout' if file == '-' else file} at journal position {result.journal_position}"
        f"{skipped}",
        err=file == "-",
    )


def _whole_home(app: App) -> None:
    """Say on stderr that the agent id in force (``--agent-id``, store.agent_id) narrows no
    export: a backup or an audit holds every agent's memories, so that it restores the home."""
    agent = app.config["store.agent_id"]
    if agent is None:
        return
    origin = app.config.origin("store.agent_id")
    click.echo(
        f"note: --agent-id does not limit an export ({agent!r}, from "
        f"{'the flag' if origin == 'flag' else origin}): it holds every agent's memories, "
        "a copy of the whole home",
        err=True,
    )


def _scratch_dir(app: App) -> Path | None:
    """Where the export builds its read model: the home (private, on the home's disk),
    else, for a read-only home, the system's temporary directory."""
    return None if app.read_only else app.home


def _require_journal(app: App) -> None:
    """Exports read a home; they never create one (a mistyped --home would be silent)."""
    if app.journal_url is None and not app.journal_dir.is_dir():
        raise UsageError(
            f"no journal at {app.journal_dir}",
            hint="check --home / FERREX_HOME; a journal is created by the first store",
        )
