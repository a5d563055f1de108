"""``ferrex store``, ``forget``, ``mark`` and ``import``: the write side from a shell.

Exit codes beyond the common ones: 7 when the memory rules refuse a store (duplicate,
ambiguous conflict, a superseded or unknown target). ``import`` exits 0 when every line was
stored, recognised as a duplicate fact or skipped (a dump's id that exists, a memory-server
memory already known, a store line imported before), 7 when some were refused, 2 when the
file or a line is not valid input (nothing of that line is written; the others are; for a
Claude or ChatGPT export, a conversation), 130 when stopped by Ctrl-C.

Store lines are idempotent by their place and text: each carries an import key,
``"line N sha256:H"`` (N its line number, H the start of the SHA-256 of its JSON object
written canonically), stored with the memory (``MemoryBody.import_key``). A line whose key
already stored a memory in its namespace is skipped, whatever the rules would say today;
the same text on two lines is two memories (two turns "Thanks!" of one conversation).
A Claude or ChatGPT export (:mod:`ferrex.porting.chats`) uses the same mechanism with the
conversation's id and the message's as the key (``chatgpt conversation "CID" message
"MID"``, ``" part I/N"`` for a split message; files imported under the older
``"chatgpt message MID"`` are recognised too).

Ctrl-C (SIGINT) stops an import with exit 130, saying how many lines or messages were
written or skipped: each chunk written stays (the journal's group commits), and since an
import is idempotent by its keys, running the same command again resumes it.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, cast

import click

from ferrex.app import App
from ferrex.cli.home import reads_home
from ferrex.cli.progress import progress
from ferrex.cli.projections import index_after, index_option
from ferrex.cli.render import count_of
from ferrex.cli.through import AGENT_HELP, SCOPED_NAMESPACE_HELP, agent_option, call_tool
from ferrex.core.decide.store import NEW_MEMORY
from ferrex.core.settings import StoreSettings
from ferrex.errors import BackendUnavailable, FerrexError, NotFound, Refused, UsageError
from ferrex.porting import chats
from ferrex.porting.imports import (
    IMPORT_SECRETS,
    chat_export,
    check_format,
    counted,
    detect,
    import_chats,
    import_lines,
    json_lines,
    secrets_mode,
    secrets_report,
    store_request,
)
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.tool_calls import Confirm, Forget, Store, StoreArgs

MEMORY_TYPES = click.Choice(["episodic", "semantic", "procedural"])


@click.command()
@click.option("--type", "memory_type", type=MEMORY_TYPES, help="Default: inferred from fields.")
@click.option("--content", help="The memory, self-contained (episodic, or a fact's wording).")
@click.option("--subject", help="Semantic fact: subject (with --predicate and --object).")
@click.option("--predicate", help="Semantic fact: predicate, e.g. uses, depends on, owns.")
@click.option("--object", "object_", help="Semantic fact: object.")
@click.option("--name", help="Procedure name (procedural memories).")
@click.option("--step", "steps", multiple=True, help="A procedure step, in order. Repeatable.")
@click.option("--condition", "conditions", multiple=True, help="When the procedure applies.")
@click.option("--entity", "entities", multiple=True, help="An entity it is about. Repeatable.")
@click.option("--supersedes", help="Id of the memory this one replaces.")
@click.option("--multi-valued", is_flag=True, help="A fact that holds alongside others.")
@click.option("--source", help='Where it came from; "memory:ID" also confirms memory ID.')
@click.option("--confidence", type=float, default=1.0, show_default=True, help="0 to 1.")
@click.option("--context", help="A JSON object of extra context.")
@click.option("--namespace", help=SCOPED_NAMESPACE_HELP)
@click.option(
    "--valid-from",
    help="When it became true (ISO 8601), for back-dated memories; not in the future for a "
    "fact or a procedure.",
)
@click.option(
    "--split-long",
    is_flag=True,
    help="Keep a text longer than the model's window as one memory, embedded in parts.",
)
@click.option("--agent-id", help=AGENT_HELP)
@click.option("--visibility", type=click.Choice(["private", "shared"]))
@click.option("--importance", type=float, help="0 to 1 (default 0.5): a ranking signal.")
@click.option("--pinned", is_flag=True, help="Keep it: never stale, never evicted.")
@click.option("--ttl", help="Scratch: forget it after this long (3600, 90s, 15m, 2h, 7d).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def store(app: App, /, as_json: bool, **fields: Any) -> None:
    """Store one memory: an event (--content), a fact (--subject/--predicate/--object) or a
    procedure (--name and --step ...).

    Dedup, conflict resolution and entity resolution run as for an agent's store. Prints the
    new id, or with --json the whole outcome (resolved entities, superseded ids, position).
    """
    multi_valued = bool(fields.pop("multi_valued"))
    if fields["context"] is not None:
        fields["context"] = _context(fields["context"])
    request = store_request(
        {k: v for k, v in fields.items() if v not in (None, ())}, where="options"
    )
    try:
        result = call_tool(app, Store(args=_store_args(request, multi_valued)),
                           agent_id=request.agent_id)  # fmt: skip
    except FerrexError as exc:
        if exc.hint and "split_long" in exc.hint:  # the tool's argument is this flag here
            exc.hint = exc.hint.replace("split_long", "--split-long")
        raise
    if as_json:
        click.echo(json.dumps(result))
        return
    if result["status"] == "duplicate":
        click.echo(f"{result['id']} (already known; confirmed)")
    elif result["status"] == "stored_as_history":
        click.echo(f"{result['id']} ({result['type']}, stored as history, superseded by "
                   f"{result['superseded_by']})")  # fmt: skip
        click.echo(f"note: {result['history_reason']}", err=True)
    else:
        superseded = result["superseded"]
        extra = f", superseded {', '.join(superseded)}" if superseded else ""
        click.echo(f"{result['id']} ({result['type']}{extra})")
        # What the store did beside storing, and how to settle it, as the agent is told.
        for key in ("possible_conflict_note", "replaced_note", "plural_note", "note"):
            if key in result:
                click.echo(f"note: {result[key]}", err=True)
        if "similar" in result:
            click.echo(f"note: {result['similar']['note']}", err=True)


@click.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--cascade", is_flag=True, help="Also drop entities no other memory refers to.")
@agent_option
@reads_home
def forget(
    app: App, ids: tuple[str, ...], cascade: bool, agent_id: str | None, as_json: bool
) -> None:
    """Remove memories from recall and from every projection.

    The journal keeps the event for audit; `ferrex journal compact` purges the text too.
    A memory that a forgotten one had replaced (a fact's older value) is current again, and
    said so; forget it too to leave the slot empty.
    Exits 7 (not_found) when any id names no memory this agent may forget; the others are
    forgotten all the same.
    """
    doc = call_tool(app, Forget(ids=ids, cascade=cascade), agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(doc))
    else:
        for memory_id in doc["forgotten"]:
            click.echo(f"forgot {memory_id}")
        for again in doc.get("current_again", []):
            click.echo(again["note"])
    _refuse_missing(doc["not_found"], "forget", len(doc["forgotten"]))


def _refuse_missing(missing: list[str], verb: str, done: int) -> None:
    """``not_found`` (exit 7) when any id named no memory, saying how many others were
    ``verb``-ed all the same (an unknown id is a typo the caller should hear about)."""
    if not missing:
        return
    others = ""
    if done:
        past = "forgotten" if verb == "forget" else f"{verb}ed"
        others = f" (1 other {past})" if done == 1 else f" ({done} others {past})"
    raise NotFound(
        f"no memory {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''} to {verb}" + others,
        hint="`ferrex recall` or `ferrex export jsonl -` lists the memories' ids",
        details={"not_found": list(missing)},
    )


@click.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--importance", type=float, help="0 to 1 (0.5 is the default of a store).")
@click.option("--pin/--unpin", "pinned", default=None, help="Pin (keep) or unpin.")
@agent_option
@reads_home
def mark(
    app: App,
    ids: tuple[str, ...],
    importance: float | None,
    pinned: bool | None,
    agent_id: str | None,
    as_json: bool,
) -> None:
    """Set the importance of memories, or pin or unpin them (a memory.marked event);
    like the confirm tool with those arguments, it also confirms them. Pinning a memory
    with a time to live keeps it: the expiry is cleared. Exits 7 (not_found) when any id
    names no memory this agent may mark; the others are marked all the same."""
    if importance is None and pinned is None:
        raise UsageError("say what to mark", hint="pass --importance, --pin or --unpin")
    request = Confirm(ids=ids, importance=importance, pinned=pinned)
    doc = call_tool(app, request, agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(doc))
    else:
        for memory_id in doc.get("marked", []):
            click.echo(f"marked {memory_id}")
    _refuse_missing(doc["not_found"], "mark", len(doc.get("marked", [])))


@click.command()
@click.argument("memory_id")
@click.argument("others", nargs=-1, required=True)
@agent_option
@reads_home
def differ(
    app: App, memory_id: str, others: tuple[str, ...], agent_id: str | None, as_json: bool
) -> None:
    """Say that facts both hold: MEMORY_ID does not replace any of OTHERS (a facts.differ
    event each); a possible conflict between them is cleared. Like the confirm tool with
    differs_from, it also confirms MEMORY_ID. Exits 7 (not_found) on an unknown id."""
    doc = call_tool(app, Confirm(ids=(memory_id,), differs_from=others), agent_id=agent_id)
    if as_json:
        click.echo(json.dumps(doc))
    else:
        for first, second in doc.get("differ", []):
            click.echo(f"{first} and {second} both hold")
    if doc["not_found"]:
        raise NotFound(
            f"no memory {', '.join(doc['not_found'][:5])}",
            hint="`ferrex recall` or `ferrex reflect` shows the flagged facts' ids",
            details={"not_found": list(doc["not_found"])},
        )


FORMATS = click.Choice(["auto", "store", "dump", "memory-server", *chats.FORMATS])


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=str))
@click.option(
    "--format",
    "file_format",
    type=FORMATS,
    default="auto",
    show_default=True,
    help="store: store requests; dump: a `ferrex export jsonl` dump; memory-server: the "
    "MCP reference memory server's graph file; claude, chatgpt: the conversations.json of "
    "a Claude or ChatGPT export. auto: told apart by the first line (an export by its shape).",
)
@click.option(
    "--assistant",
    type=click.Choice(chats.ASSISTANT_MODES),
    help="claude, chatgpt: an assistant message longer than --split-chars is split into "
    "parts (split, the default), kept whole (full), or assistant messages are not imported "
    "at all (skip: user turns only).",
)
@click.option(
    "--split-chars",
    type=click.IntRange(min=chats.MIN_SPLIT_CHARS),
    help=f"claude, chatgpt: the longest part of a split message (default "
    f"{chats.DEFAULT_SPLIT_CHARS} characters).",
)
@click.option(
    "--secrets",
    "secrets",
    type=click.Choice(IMPORT_SECRETS),
    help="A line whose text carries a likely secret: redact (stored with [redacted:KIND]; "
    "the default unless store.secrets = allow), skip (not stored) or allow (stored as "
    "written). Redacted and skipped lines are reported.",
)
@index_option("an import that stored")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def import_(
    app: App,
    file: str,
    file_format: str,
    assistant: str | None,
    split_chars: int | None,
    secrets: str | None,
    index: bool,
    as_json: bool,
) -> None:
    """Import the JSON lines of FILE (- for stdin), or a Claude or ChatGPT export.

    store (the default for lines without an id): each line is a store request with the
    fields of the store tool (content, subject, predicate, object, name, steps,
    conditions, entities, supersedes, source, confidence, context, namespace, valid_from,
    agent_id, visibility, multi_valued), decided in order like an agent's store. A line
    imported before (the same text at the same line number) is skipped, so importing a
    file again stores only its new lines; the same text on two lines is two memories.

    dump (lines with an id, from `ferrex export jsonl`): each memory is restored as it
    was, without re-deciding: id, validity, supersede links, last validation and access
    kept, and created_at (when the dumped home learned it). A line whose id exists is skipped, so
    importing a dump twice adds nothing. Restore a dump into an empty home.

    memory-server: entities (their type becomes a fact "NAME is a TYPE", each observation
    an episodic memory about NAME) and relations (multi-valued facts FROM RELATION TO).
    Memories already known with the same text are skipped; near-duplicates are refused
    as for a store.

    claude, chatgpt: the conversations.json of an export. Each message of the
    conversation as shown (not the branches of edits and regenerations) becomes an
    episodic memory "user: ..." or "assistant: ...", with the conversation (title and id)
    as its source and the message's time as its event time. System and tool messages,
    tool calls, images and other non-text parts, attachments and empty conversations are
    left out and counted by reason. A message imported before (by its conversation's id
    and its own) is skipped, so a newer export stores only the new messages; one whose
    text changed since is skipped and reported. A conversation not of the export's shape
    is left out and reported (exit 2); the others are imported.

    Ctrl-C stops an import (exit 130) once the chunk being written is whole (a second
    Ctrl-C stops at once) and says how far it got: what was written stays, and running the
    same command again resumes, skipping what is imported already.

    All formats are written in group commits with batched embedding. Reports the outcome
    of every line; exits 5 if lines could not be stored (the embeddings server went away:
    run it again), 2 if a line was invalid, 7 if one was refused. A likely secret
    (see --secrets) never fails the import: its line is redacted or skipped, and the
    report names its kind, field and position, never the secret.
    """
    reached = _Reached()
    options = _ImportOptions(file_format, assistant, split_chars, secrets, index, as_json)
    try:
        _import(app, file, options, reached)
    except KeyboardInterrupt:  # Ctrl-C: what was written stays, a re-run resumes
        click.echo(reached.interrupted(), err=True)
        raise click.exceptions.Exit(INTERRUPTED) from None


INTERRUPTED = 130
"""The exit code of an import stopped by Ctrl-C (SIGINT), as a shell reports one."""


class _Reached:
    """How far an import got: the last count its progress reported (each chunk's, once the
    chunk is written), for what Ctrl-C prints.

    While lines are written, a first Ctrl-C stops the import at the next chunk's end, where
    no lock is held and no write is half done: a KeyboardInterrupt raised anywhere (inside a
    journal append, between a lock's acquire and its release) could leave a lock taken that
    the exit then waits on for ever. A second Ctrl-C stops at once."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        self.noun, self.plural = "line", "lines"
        self.stopping = False

    @contextmanager
    def progress(
        self, label: str, noun: str, plural: str | None = None, *, quiet: bool = False
    ) -> Iterator[Callable[[int, int], None]]:
        """:func:`ferrex.cli.progress.progress`, its counts also kept here; Ctrl-C taken at
        the chunks' ends meanwhile. ``noun`` is what is counted, one of them (``plural``: when
        it is not the noun and an s)."""
        self.noun, self.plural = noun, plural or noun + "s"
        with progress(label, self.plural, quiet=quiet) as update, self._ctrl_c_between_chunks():

            def counted(done: int, total: int) -> None:
                self.done, self.total = done, total
                update(done, total)
                if self.stopping:  # this chunk is written: a safe place to stop
                    raise KeyboardInterrupt

            yield counted

    @contextmanager
    def _ctrl_c_between_chunks(self) -> Iterator[None]:
        """SIGINT asks for a stop at the next chunk's end (a second one stops at once).
        Only where Python's own handler is in place: an inherited ``SIG_IGN`` (a job started
        with ``&``, ``nohup``) is left as it is, and off the main thread nothing changes."""
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        ):
            yield
            return

        def asked(_signum: int, _frame: FrameType | None) -> None:
            if self.stopping:
                raise KeyboardInterrupt
            self.stopping = True

        signal.signal(signal.SIGINT, asked)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupted(self) -> str:
        if not self.done:
            return "interrupted: nothing was written yet; run the same command to import the file"
        if self.done >= self.total:  # during the index build that follows a large import
            every = (
                f"the one {self.noun} was written or skipped, and stays"
                if self.total == 1
                else f"all {self.total:,} {self.plural} were written or skipped, and stay"
            )
            return (
                f"interrupted: {every}; the vector indexes were not built: `ferrex optimize` "
                "builds them"
            )
        one = self.done == 1
        return (
            f"interrupted: {self.done:,} of {self.total:,} {self.plural} "
            f"{'was' if one else 'were'} written or skipped by the time the import stopped, "
            f"and {'stays' if one else 'stay'}; run the same command again to resume (what is "
            "imported already is skipped)"
        )


@dataclass(frozen=True)
class _ImportOptions:
    """The options of ``ferrex import`` (see its help), as the command was given them."""

    file_format: str
    assistant: str | None
    split_chars: int | None
    secrets: str | None
    index: bool
    as_json: bool


def _import(app: App, file: str, options: _ImportOptions, reached: _Reached) -> None:
    text = sys.stdin.read() if file == "-" else _read(Path(file))
    text = text.removeprefix("\ufeff")  # UTF-8 "with BOM", as some editors save it
    app.require_ownership()  # busy is said at once, not after "loading model…"
    # The model loads on its own thread while the file is parsed and the home opened; the
    # load ends before the command does, whatever ends it (never in the interpreter's exit).
    embedder = app.embedder()
    embedder.load_in_background()
    click.get_current_context().call_on_close(embedder.join_loader)
    export = chat_export(text, options.file_format)
    if export is None and (options.assistant is not None or options.split_chars is not None):
        raise UsageError(
            "--assistant and --split-chars apply to claude and chatgpt exports only",
            hint="pass --format claude or --format chatgpt",
        )
    if export is not None:
        _import_chats(app, export[0], export[1], options, reached)
        return
    parsed, unreadable = json_lines(text)
    file_format, as_json = options.file_format, options.as_json
    if file_format == "auto":
        file_format = detect(parsed[0][1]) if parsed else "store"
    check_format(parsed, file_format)
    writer = app.writer()
    secrets = secrets_mode(writer, options.secrets)
    with reached.progress("importing", "line", quiet=as_json) as update:
        outcomes = import_lines(
            writer, parsed, file_format, update,
            agent_id=app.config["store.agent_id"], unreadable=unreadable,
        )  # fmt: skip
    counts = counted(outcomes)
    indexed = index_after(app, sum(counts.get(s, 0) for s in NEW_MEMORY), options.index, as_json)
    with_secrets = secrets_report(outcomes)
    if as_json:
        click.echo(json.dumps({"format": file_format, "counts": counts, "secrets": with_secrets,
                               "indexed": indexed, "lines": outcomes}))  # fmt: skip
    else:
        _echo_lines(outcomes, counts, with_secrets["lines"], secrets)
    _exit_for(counts)


def _echo_lines(
    outcomes: list[dict[str, Any]], counts: Mapping[str, int], secret_lines: int, secrets: str
) -> None:
    """The text report of a line import: the lines not stored, then the counts."""
    _echo_unavailable(outcomes, lambda first, n: f"lines {first['line']}.. ({n})", "lines")
    for o in outcomes:
        if o["status"] in ("invalid", "refused") or o.get("code") == "secret_refused":
            what = f" ({o['item']})" if "item" in o else ""
            click.echo(f"line {o['line']}{what}: {o['status']} [{o['code']}] {o['message']}")
        _echo_redacted(f"line {o['line']}", o)
    summary = ", ".join(f"{n} {status}{_restored_kinds(outcomes, status)}"
                        for status, n in sorted(counts.items())) or "empty"  # fmt: skip
    if secret_lines:
        done = "redacted" if secrets == "redact" else "skipped"
        summary += f"; likely secrets in {count_of(secret_lines, 'line')}, {done}"
    click.echo(summary)


def _restored_kinds(outcomes: list[dict[str, Any]], status: str) -> str:
    """What a dump's lines of one status held, when the lines are of several kinds
    (`` (4 memories, 1 entity, 3 possible_conflict lines)``); empty for a file of one."""
    kinds = Counter(o["what"] for o in outcomes if o["status"] == status and "what" in o)
    if len(kinds) < 2:
        return ""
    named = {"memory": ("memory", "memories"), "entity": ("entity", "entities")}
    order = sorted(kinds.items(), key=lambda k: (k[0] != "memory", k[0]))
    parts = [count_of(n, *named.get(kind, (f"{kind} line", f"{kind} lines"))) for kind, n in order]
    return f" ({', '.join(parts)})"


def _context(text: str) -> Any:
    """The value of ``--context``: JSON (the store checks that it is an object)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--context is not JSON: {exc}",
            hint="""give a JSON object, for example --context '{"ticket": "INC-1"}'""",
        ) from exc


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text: {exc}") from exc


def _import_chats(
    app: App, fmt: chats.ChatFormat, doc: Any, options: _ImportOptions, reached: _Reached
) -> None:
    """A Claude or ChatGPT export: parsed whole first (a file of the wrong shape is refused
    before anything is written; a conversation of the wrong shape is left out and reported
    as invalid, exit 2, like a bad line), then stored (:func:`ferrex.porting.imports.
    import_chats`)."""
    parsed = chats.parse(
        doc,
        fmt,
        assistant=cast(chats.AssistantMode, options.assistant or "split"),
        split_chars=options.split_chars or chats.DEFAULT_SPLIT_CHARS,
        content_chars=StoreSettings.from_config(app.config).limits.content_chars,
    )
    writer = app.writer()
    secrets = secrets_mode(writer, options.secrets)
    with reached.progress("importing", "memory", "memories") as update:
        summary = import_chats(writer, fmt, parsed, update, agent_id=app.config["store.agent_id"])
    counts: dict[str, int] = summary["counts"]
    new = sum(counts.get(s, 0) for s in NEW_MEMORY)
    summary["indexed"] = index_after(app, new, options.index, options.as_json)
    if options.as_json:
        click.echo(json.dumps(summary))
    else:
        _echo_chats(summary, secrets)
    _exit_for(counts)


def _exit_for(counts: Mapping[str, int]) -> None:
    """An import's exit code: anything left for an absent embeddings server first, then
    invalid lines, then refusals; 0 when everything was stored or skipped."""
    for status, error in (
        ("unavailable", BackendUnavailable),
        ("invalid", UsageError),
        ("refused", Refused),
    ):
        if counts.get(status):
            raise click.exceptions.Exit(error.exit_code)


def _echo_unavailable(
    outcomes: list[dict[str, Any]], which: Callable[[dict[str, Any], int], str], items: str
) -> None:
    """One line for what an embeddings server's absence left unstored (``which`` names the
    first of them and how many), with what to do about it."""
    unavailable = [o for o in outcomes if o["status"] == "unavailable"]
    if unavailable:
        first = unavailable[0]
        click.echo(
            f"{which(first, len(unavailable))}: not stored [{first['code']}] {first['message']} "
            f"(hint: {first['hint']}); run the import again when it answers: the {items} "
            "stored now are then skipped"
        )


def _echo_redacted(what: str, outcome: dict[str, Any]) -> None:
    for r in outcome.get("redacted", ()):
        click.echo(f"{what}: redacted a likely {r['kind']} in {r['field']} at character {r['at']}")


def _echo_chats(summary: dict[str, Any], secrets: str) -> None:
    """The text report of a chat import: the items not stored, then what was stored and
    what was skipped, by reason."""
    outcomes: list[dict[str, Any]] = summary["items"]
    _echo_unavailable(outcomes, lambda first, n: count_of(n, "message"), "messages")
    for bad in summary["invalid"]:  # the message names the conversation (number and id)
        click.echo(f"not imported: invalid [{bad['code']}] {bad['message']}")
    for o in outcomes:
        what = f"conversation {o['conversation_id']} message {o['message_id']}"
        what += f" part {o['part']}" if "part" in o else ""
        if o["status"] in ("invalid", "refused"):
            click.echo(f"{what}: {o['status']} [{o['code']}] {o['message']}")
        if o.get("reason") == "changed_since_import":
            click.echo(f"{what}: changed since its import, not stored: {o['message']} "
                       f"(hint: {o['hint']})")  # fmt: skip
        _echo_redacted(what, o)
    counts: dict[str, int] = summary["counts"]
    untimed = summary["untimed"]
    click.echo(
        f"{summary['format']}: {count_of(summary['conversations'], 'conversation')}, "
        f"{count_of(summary['messages'], 'message')}"
        + (f" ({untimed} without a time of their own)" if untimed else "")
    )
    click.echo(
        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing to store"
    )
    if summary["skipped"]:
        click.echo("skipped: " + ", ".join(
            f"{n} {reason}" for reason, n in summary["skipped"].items()))  # fmt: skip
    if summary["secrets"]["lines"]:
        done = "redacted" if secrets == "redact" else "skipped"
        click.echo(f"likely secrets in {count_of(summary['secrets']['lines'], 'message')}, {done}")


def _store_args(r: StoreRequest, multi_valued: bool) -> StoreArgs:
    """The store tool's arguments from the options (an empty list or an unset flag: not
    given, so the tool's defaults hold)."""
    return StoreArgs(
        type=r.type, content=r.content, subject=r.subject, predicate=r.predicate,
        object=r.object, name=r.name, steps=r.steps or None,
        conditions=r.conditions or None, entities=r.entities or None,
        supersedes=r.supersedes, source=r.source, confidence=r.confidence, context=r.context,
        namespace=r.namespace, valid_from=None if r.valid_from is None else str(r.valid_from),
        visibility=r.visibility, split_long=r.split_long or None, importance=r.importance,
        pinned=r.pinned or None, ttl=r.ttl, multi_valued=multi_valued,
    )  # fmt: skip
