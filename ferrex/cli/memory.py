"""``ferrex store``, ``forget`` and ``import``: the write side from a shell.

Exit codes beyond the common ones: 7 when the memory rules refuse a store (duplicate,
ambiguous conflict, a superseded or unknown target). ``import`` exits 0 when every line was
stored or recognised as a duplicate fact, 7 when some were refused, 2 when the file or a
line is not valid input (nothing of that line is written; the others are).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ferrex.app import App
from ferrex.cli.progress import progress
from ferrex.errors import FerrexError, Refused, UsageError
from ferrex.memory_input import StoreRequest

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
@click.option("--namespace", help="Default: store.default_namespace of the configuration.")
@click.option("--valid-from", help="When it became true (ISO 8601), for back-dated memories.")
@click.option("--agent-id", help="The agent it belongs to.")
@click.option("--visibility", type=click.Choice(["private", "shared"]))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def store(app: App, /, as_json: bool, **fields: Any) -> None:
    """Store one memory: an event (--content), a fact (--subject/--predicate/--object) or a
    procedure (--name and --step ...).

    Dedup, conflict resolution and entity resolution run as for an agent's store. Prints the
    new id, or with --json the whole outcome (resolved entities, superseded ids, position).
    """
    multi_valued = bool(fields.pop("multi_valued"))
    request = _request({k: v for k, v in fields.items() if v not in (None, ())}, where="options")
    result = app.writer().store(request, multi_valued=multi_valued)
    if as_json:
        click.echo(json.dumps(result.as_dict()))
        return
    if result.status == "duplicate":
        click.echo(f"{result.id} (already known; confirmed)")
    else:
        extra = f", superseded {', '.join(result.superseded)}" if result.superseded else ""
        click.echo(f"{result.id} ({result.type}{extra})")


@click.command()
@click.argument("ids", nargs=-1, required=True)
@click.option("--cascade", is_flag=True, help="Also drop entities no other memory refers to.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def forget(app: App, ids: tuple[str, ...], cascade: bool, as_json: bool) -> None:
    """Remove memories from recall and from every projection.

    The journal keeps the event for audit; `ferrex journal compact` purges the text too.
    Unknown ids are reported, not errors.
    """
    result = app.writer().forget(list(ids), cascade=cascade)
    doc = {
        "forgotten": list(result.forgotten),
        "not_found": list(result.not_found),
        "dropped_entities": list(result.dropped_entities),
        "position": result.position,
    }
    if as_json:
        click.echo(json.dumps(doc))
        return
    for memory_id in result.forgotten:
        click.echo(f"forgot {memory_id}")
    for memory_id in result.not_found:
        click.echo(f"not found: {memory_id}")


_FIELDS = {
    "type": "type", "memory_type": "type", "content": "content", "subject": "subject",
    "predicate": "predicate", "object": "object", "object_": "object", "name": "name",
    "steps": "steps", "conditions": "conditions", "entities": "entities",
    "supersedes": "supersedes", "source": "source", "confidence": "confidence",
    "context": "context", "namespace": "namespace", "valid_from": "valid_from",
    "agent_id": "agent_id", "visibility": "visibility",
}  # fmt: skip
_LISTS = {"steps", "conditions", "entities"}


def _request(raw: dict[str, Any], *, where: str) -> StoreRequest:
    """A StoreRequest from CLI options or one import line, with clear errors."""
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "multi_valued":
            continue
        name = _FIELDS.get(key)
        if name is None:
            raise UsageError(
                f"unknown field {key!r} in {where}",
                hint=f"known fields: {', '.join(sorted(set(_FIELDS.values())))}, multi_valued",
            )
        if name in _LISTS:
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise UsageError(f"{name} in {where} must be a list of strings")
            value = tuple(value)
        if name == "context" and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise UsageError(f"context in {where} is not JSON: {exc}") from exc
        fields[name] = value
    try:
        return StoreRequest(**fields)
    except TypeError as exc:  # a value of the wrong kind for a dataclass field
        raise UsageError(f"invalid {where}: {exc}") from exc


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def import_(app: App, file: str, as_json: bool) -> None:
    """Store every line of a JSON-lines FILE (- for stdin), one memory per line.

    Each line is an object with the fields of the store tool (content, subject, predicate,
    object, name, steps, conditions, entities, supersedes, source, confidence, context,
    namespace, valid_from, agent_id, visibility, multi_valued). Lines are decided in order
    and written in group commits with batched embedding. Reports the outcome of every line.
    """
    text = sys.stdin.read() if file == "-" else _read(Path(file))
    requests: list[tuple[int, StoreRequest, bool]] = []
    outcomes: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            if not isinstance(raw, dict):
                raise UsageError("a line must be a JSON object")
            requests.append(
                (number, _request(raw, where=f"line {number}"), bool(raw.get("multi_valued")))
            )
        except (json.JSONDecodeError, UsageError) as exc:
            error = exc if isinstance(exc, FerrexError) else UsageError(f"not JSON: {exc}")
            outcomes[number] = {"line": number, "status": "invalid", **error.as_dict()}
    writer = app.writer()
    with progress("importing", "lines") as update:
        for multi in (False, True):
            group = [(n, r) for n, r, m in requests if m is multi]
            results = writer.store_many([r for _, r in group], multi_valued=multi, progress=update)
            for (number, _), result in zip(group, results, strict=True):
                if isinstance(result, FerrexError):
                    status = "refused" if isinstance(result, Refused) else "invalid"
                    outcomes[number] = {"line": number, "status": status, **result.as_dict()}
                else:
                    outcomes[number] = {"line": number, **result.as_dict()}
    lines = [outcomes[n] for n in sorted(outcomes)]
    counts: dict[str, int] = {}
    for line in lines:
        counts[line["status"]] = counts.get(line["status"], 0) + 1
    if as_json:
        click.echo(json.dumps({"counts": counts, "lines": lines}))
    else:
        for line in lines:
            if line["status"] in ("invalid", "refused"):
                click.echo(
                    f"line {line['line']}: {line['status']} [{line['code']}] {line['message']}"
                )
        click.echo(", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "empty")
    if counts.get("invalid"):
        raise click.exceptions.Exit(UsageError.exit_code)
    if counts.get("refused"):
        raise click.exceptions.Exit(Refused.exit_code)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text: {exc}") from exc
