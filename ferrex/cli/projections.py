"""``ferrex replay``, ``reconcile`` (also ``audit reconcile``) and ``optimize``.

Exit codes beyond the common ones: ``reconcile`` exits 6 when drift remains.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ferrex.app import App
from ferrex.cli.home import existing_home, reads_home
from ferrex.cli.progress import progress
from ferrex.cli.render import count_of, echo_either
from ferrex.config import set_in_file
from ferrex.errors import FerrexError

F = TypeVar("F", bound=Callable[..., Any])

DRIFT_EXIT = 6
#: An import that stores this many memories or more, or a replay or re-embed of a home that
#: holds as many, ends by building the vector indexes (:meth:`App.index_vectors`): these
#: commands have the data directory to themselves, so no query waits for the build.
INDEX_AFTER = 5_000


def index_option(what: str) -> Callable[[F], F]:
    """``--index/--no-index`` (as ``index``) for a command that ends by building the vector
    indexes after ``what`` (the words before "5,000 memories or more")."""
    return click.option(
        "--index/--no-index",
        default=True,
        show_default=True,
        help=f"After {what} {INDEX_AFTER:,} memories or more, build the vector indexes "
        "(what `ferrex optimize` does) so that recall stays fast at that size: seconds at "
        "10,000 memories, a minute or more at 100,000s.",
    )


def index_after(app: App, count: int, index: bool, as_json: bool) -> dict[str, Any] | None:
    """After a command that left ``count`` memories to index (:data:`INDEX_AFTER` or more,
    and ``index``): the vector indexes built, and how long that took (for both outputs);
    else None. A build that fails is reported (``error``), not raised: what the command
    wrote stands, and ``ferrex optimize`` can build them later."""
    if not index or count < INDEX_AFTER:
        return None
    if not as_json:
        click.echo("building the vector indexes for recall (--no-index skips it) ...", err=True)
    started = time.perf_counter()
    try:
        built = app.index_vectors()
    except FerrexError as exc:
        if not as_json:
            said = f"the vector indexes were not built: {exc.message}; what was written "
            click.echo(said + "stands, and `ferrex optimize` builds them later", err=True)
        return {"error": exc.as_dict()}
    seconds = round(time.perf_counter() - started, 3)
    if not as_json:
        if any(built.values()):
            click.echo(f"vector indexes built in {seconds:.1f} s", err=True)
        else:
            click.echo(f"vector indexes: none needed at this size ({seconds:.1f} s)", err=True)
    return {"collections": built, "seconds": seconds}


@click.command()
@index_option("a replay of")
@reads_home
def replay(app: App, index: bool, as_json: bool) -> None:
    """Rebuild the read model and the vector collections from the journal.

    The new generation is built beside the live one, which keeps serving, and switched in
    atomically when complete; a crash part way leaves the old one live. Embeddings come
    from the cache where the text was seen before, so a replay re-embeds only new text.
    """
    started = time.perf_counter()
    with progress("replaying") as update:
        projections = app.replay(progress=update)
    live = projections.live
    seconds = time.perf_counter() - started
    records = projections.read_model.checkpoint()
    memories = projections.read_model.count()
    doc: dict[str, Any] = {
        "generation": live.generation,
        "records": records,
        "memories": memories,
        "seconds": round(seconds, 3),
        "records_per_second": round(records / seconds, 1) if seconds > 0 else None,
        "sqlite": live.sqlite,
        "collections": [live.memories, live.entities],
    }
    doc["indexed"] = index_after(app, memories, index, as_json)
    echo_either(
        doc, as_json,
        f"replayed {count_of(records, 'record')} ({count_of(memories, 'memory', 'memories')}) "
        f"into generation {live.generation} in {seconds:.1f} s",
    )  # fmt: skip


@click.command()
@click.option("--fix", is_flag=True, help="Repair the drift by replaying what is affected.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--examples",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="Example ids shown per kind.",
)
@click.pass_obj
@existing_home
def reconcile(app: App, fix: bool, as_json: bool, examples: int) -> None:
    """Compare the journal, the read model and Qdrant, and report any drift.

    Reports checkpoint lag, read-model rows that differ from a replay of the journal,
    memories missing from Qdrant, orphan points, stale payloads (e.g. a superseded fact
    whose point still says valid) and entity drift. --fix repairs by replaying only what is
    affected, then reports again. Exits 0 when there is no drift, 6 when drift remains.
    """
    from projections.reconcile import reconcile as reconciled

    drift = reconciled(app.projections(), fix=fix)
    doc = drift.as_dict(examples)
    lines = [
        f"journal head {drift.journal_head}, read model at {drift.sqlite_checkpoint}, "
        f"qdrant at {drift.qdrant_checkpoint} (lag {drift.lag})",
        *(f"{kind}: {doc[kind]['count']} (e.g. {', '.join(doc[kind]['examples'])})"
          for kind in ("sqlite_rows", "missing_points", "orphan_points", "stale_payloads",
                       "entity_drift")
          if doc[kind]["count"]),
        "no drift" if drift.clean else "DRIFT found (run with --fix to repair)",
    ]  # fmt: skip
    echo_either(doc, as_json, "\n".join(lines))
    if not drift.clean:
        raise click.exceptions.Exit(DRIFT_EXIT)


@click.command()
@click.option(
    "--model",
    required=True,
    help="The dense model to move to: small, small-float, mid, best, a model directory, or "
    "openai:MODEL (on the server at models.embedding_url).",
)
@index_option("a re-embed of")
@reads_home
def reembed(app: App, model: str, index: bool, as_json: bool) -> None:
    """Re-embed every memory with another dense model, then switch to it.

    The new vectors are built by a replay into a new generation while the current one keeps
    answering; when it is complete, ferrex switches over, drops the old one, and records the
    model in ferrex.toml so that later runs use it. Only new texts are embedded: vectors of
    the new model already in the cache are reused.
    """
    embedder = app.embedder_for(model)
    embedder.model()  # fail now, before anything changes, if the model is unavailable
    started = time.perf_counter()
    with progress("re-embedding") as update:
        projections = app.replay(progress=update, embedder=embedder)
    set_in_file(app.config.file, "models.dense", model)
    if app.config.origin("models.dense").startswith("env"):
        click.echo(
            f"note: {app.config.origin('models.dense')} is set and overrides ferrex.toml; "
            f"change or unset it to keep using {model}",
            err=True,
        )
    live = projections.live
    doc: dict[str, Any] = {
        "model": embedder.identity.key,
        "generation": live.generation,
        "records": projections.read_model.checkpoint(),
        "seconds": round(time.perf_counter() - started, 3),
        "config": str(app.config.file),
    }
    doc["indexed"] = index_after(app, projections.read_model.count(), index, as_json)
    echo_either(
        doc, as_json,
        f"re-embedded with {embedder.identity.name} ({embedder.identity.dim} dims) into "
        f"generation {live.generation} in {doc['seconds']} s; recorded in {doc['config']}",
    )  # fmt: skip


@click.group()
def audit() -> None:
    """Audit commands (aliases kept for users of earlier ferrex versions)."""


audit.add_command(reconcile)


@click.command()
@reads_home
def optimize(app: App, as_json: bool) -> None:
    """Build the vector indexes (HNSW) of the embedded Qdrant: explicit maintenance.

    Queries work without it but get slower as memory grows. A running server builds them by
    itself, on a copy it switches in (qdrant.index_every_seconds), and an import, replay or
    re-embed of 5,000 memories or more ends by building them; run this when no server
    does, e.g. after many stores made with qdrant.index_every_seconds = 0. It takes seconds
    at 10k memories and minutes at a million, and needs the data directory to itself:
    Qdrant Edge holds a collection for the whole build.
    """
    app.projections()  # opened (a rebuild it needs, first) before the clock starts
    started = time.perf_counter()
    done = app.index_vectors()
    seconds = time.perf_counter() - started
    if as_json:
        click.echo(json.dumps({"optimized": done, "seconds": round(seconds, 3)}))
    else:
        for name, changed in done.items():
            click.echo(f"{name}: {'optimized' if changed else 'nothing to do'}")
        click.echo(f"took {seconds:.1f} s")


@click.group()
def backfill() -> None:
    """Recompute derived values with the current rules (a backfill is a rebuild)."""


@backfill.command("normalized-predicates")
@click.option("--dry-run", is_flag=True, help="List what would change; change nothing.")
@reads_home
def normalized_predicates(app: App, dry_run: bool, as_json: bool) -> None:
    """Re-normalize the predicates of every fact with the current synonym groups.

    After changing [predicates] in ferrex.toml, facts stored earlier keep the predicate
    their store decided; this rebuilds the read model so that conflicts and contradictions
    are found under the new groups. The dry run lists the facts whose normalized predicate
    would change. (Any command also rebuilds when it finds the rules changed; the dry run
    is the way to look first.)
    """
    from ferrex.parts import build_rules
    from projections.reconcile import predicate_drift

    rules = build_rules(app.config)
    assert rules.predicate is not None
    changes = predicate_drift(app.home, app.journal(), rules.predicate)
    doc: dict[str, object] = {"changes": changes, "count": len(changes), "applied": False}
    if not dry_run:
        with progress("backfilling") as update:
            projections = app.replay(progress=update)
        doc["applied"] = True
        doc["generation"] = projections.live.generation
    if as_json:
        click.echo(json.dumps(doc))
        return
    for change in changes:
        click.echo(
            f"{change['id']}: {change['subject']} [{change['predicate']}] "
            f"{change['before']} -> {change['after']}"
        )
    verb = "would change" if dry_run else "changed"
    click.echo(f"{count_of(len(changes), 'fact')} {verb}")
