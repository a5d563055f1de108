"""``ferrex secrets scan``: the stored memories that carry likely secrets.

The store keeps likely secrets out by default (``store.secrets``, :mod:`ferrex.rules.secrets`);
this finds those stored before, under ``allow``, or by an older version. It reads the read
model (every memory, superseded ones too, of every agent: an operator's command) and checks
each memory's text fields with the very rule a store applies
(:func:`ferrex.rules.memory_input.secrets_in`); like ``export jsonl`` it opens the stores
itself, so a running server makes it answer ``busy``. It names the memory, field, kind and
character position, never the secret. Removing one for real is the existing purge:
``ferrex forget ID`` (it leaves the read model and the vectors at once), then
``ferrex journal compact`` (the journal keeps a forgotten memory's text until then).
"""

from __future__ import annotations

import json
from typing import Any, cast

import click

from ferrex.app import App
from ferrex.cli.home import existing_home
from ferrex.cli.render import count_of, echo_table
from ferrex.rules.memory_input import ValidStore, secrets_in
from ferrex.rules.secrets import redact
from journal.events import MemoryType, Visibility
from projections.readmodel.predicates import is_current
from projections.rows import Memory

PURGE = (
    "to remove one for good: `ferrex forget ID`, then `ferrex journal compact` (the journal "
    "keeps a forgotten memory's text until it is compacted; a git audit export also needs "
    "`ferrex export git --rewrite`)"
)


@click.group("secrets")
def secrets() -> None:
    """Likely secrets (keys, tokens, private keys, passwords) in memory."""


@secrets.command("scan")
@click.option("--namespace", help="Scan only this namespace (default: every one).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
@existing_home
def scan(app: App, namespace: str | None, as_json: bool) -> None:
    """List the stored memories whose text carries a likely secret: id, field, kind and
    position (never the secret itself), with how to purge them."""
    read_model = app.projections().read_model
    with read_model.snapshot():
        memories = read_model.memories(namespace=namespace)
        names = read_model.entity_names()
    found: list[dict[str, Any]] = []
    for memory in memories:
        for secret in secrets_in(_as_store(memory, names)):
            found.append(
                {
                    "id": memory.memory_id,
                    # A namespace can be what carries the secret: shown redacted.
                    "namespace": redact(memory.namespace),
                    "type": memory.type,
                    **({"superseded": True} if not is_current(memory) else {}),
                    **secret.as_dict(),
                }
            )
    ids = sorted({f["id"] for f in found})
    if as_json:
        doc = {"scanned": len(memories), "memories": len(ids), "found": found, "purge": PURGE}
        click.echo(json.dumps(doc))
        return
    if not found:
        click.echo(f"no likely secrets in {count_of(len(memories), 'memory', 'memories')}")
        return
    echo_table(found, ("id", "namespace", "field", "kind", "at"), indent=0)
    carry = "carries" if len(ids) == 1 else "carry"
    scanned = count_of(len(memories), "memory", "memories")
    click.echo(f"{len(ids)} of {scanned} {carry} likely secrets; {PURGE}")


def _as_store(memory: Memory, names: dict[str, str]) -> ValidStore:
    """A stored memory's text fields in the shape the store's secret check reads."""
    return ValidStore(
        type=cast(MemoryType, memory.type),
        content=memory.content,
        subject=memory.subject,
        predicate=memory.predicate,
        object=memory.object,
        confidence=memory.confidence,
        source=memory.source,
        entities=tuple(names[e] for e in memory.entity_ids if e in names),
        context=memory.context,
        supersedes=memory.supersedes,
        namespace=memory.namespace,
        t_valid=None,
        name=memory.procedure_name,
        conditions=memory.conditions,
        steps=memory.steps,
        agent_id=memory.agent_id,
        visibility=cast(Visibility, memory.visibility),
    )
