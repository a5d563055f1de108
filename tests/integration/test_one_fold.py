"""The one fold of events: the command side's overlay answers what the read model answers.

Random sequences of interacting events go through a real journal into a real SQLite read
model, and through an :class:`~ferrex.core.view.Overlay` over a view of nothing (the decision
tests' ``FakeView``); every question a decision may ask (``View``) must get the same answer
from both. The row's ``position`` and ``created_at`` come from the journal's record, which the
overlay has not got (0 there).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path

import msgspec
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ferrex.core.view import EpisodeTail, Overlay, ReadModelView
from journal import (
    EntitiesMerged,
    EntityCreated,
    Event,
    FactsPossiblyConflicting,
    MemoryStored,
)
from journal.events import EpisodeRef, MemoryBody
from projections.rows import Memory, Spelling
from projections.sqlite import ReadModel
from tests.integration.test_read_model import interacting, journaled
from tests.strategies import plausible
from tests.unit.test_decide import FakeView

MEMORY_IDS = [f"m{i}" for i in range(6)]
ENTITY_IDS = [f"e{i}" for i in range(4)]


def _varied(event: Event, episode: EpisodeRef | None, fields: dict[str, str]) -> Event:
    """A store of the read model's strategy, in a derived episode or not, with a subject and
    predicate (a fact) or a procedure's name, so facts and procedures are asked about too."""
    if not isinstance(event, MemoryStored) or event.body is None:
        return event
    if event.memory_type == "semantic":
        fields = {k: v for k, v in fields.items() if k != "procedure_name"}
    elif event.memory_type == "procedural":
        fields = {k: v for k, v in fields.items() if k == "procedure_name"}
    else:
        fields = {}
    body = msgspec.structs.replace(event.body, **fields)
    return msgspec.structs.replace(event, episode=episode, body=body)


episodes = st.none() | st.builds(
    EpisodeRef, id=st.sampled_from(["ep1", "ep2"]), index=st.integers(0, 3)
)
fields = st.fixed_dictionaries(
    {},
    optional={
        "subject": st.sampled_from(["Tokio", "tokio"]),
        "predicate": st.sampled_from(["uses", "is"]),
        "object": st.sampled_from(["Redis 7", "redis cluster", "Kafka"]),
        "procedure_name": st.sampled_from(["deploy", "backup"]),
    },
)
# The read model's own strategy of interacting events, the stores varied (``_varied``).
events = st.tuples(interacting, episodes, fields).map(lambda t: _varied(*t))
commands = (
    st.lists(st.lists(events, min_size=1, max_size=3), min_size=1, max_size=20)
    .map(plausible)
    .filter(bool)
)


def _row(m: Memory | None) -> Memory | None:
    return None if m is None else replace(m, position=0, created_at=0.0)


def _spelled(spellings: list[Spelling]) -> list[Spelling]:
    return sorted(spellings, key=repr)


def _tail(tail: EpisodeTail | None) -> tuple[str, int] | None:
    return None if tail is None else (tail.episode, tail.index)


def _answers(view: Overlay | ReadModelView) -> dict[str, object]:
    rows = {i: _row(view.memory(i)) for i in MEMORY_IDS}
    held = [m for m in rows.values() if m is not None]
    facts = {
        (m.namespace, m.subject_key, m.predicate_normalized)
        for m in held
        if m.subject_key is not None and m.predicate_normalized is not None
    }
    # a few words of the facts' values, as a note naming them would give them
    words = tuple(sorted({w for m in held if m.object
                          for w in re.findall(r"[a-z0-9]+", m.object.casefold())}))[:4]  # fmt: skip
    return {
        "memories": rows,
        "facts_holding": {ns: [_row(m) for m in view.facts_holding(ns, words)] for ns in "ab"},
        "active_facts": {
            (ns, k, p): [_row(m) for m in view.active_facts(ns, k, p)] for ns, k, p in facts
        },
        "procedures": {
            (m.namespace, m.procedure_name): [
                _row(p) for p in view.procedures(m.namespace, m.procedure_name)
            ]
            for m in held
            if m.procedure_name is not None
        },
        "spellings": {ns: _spelled(view.spellings(ns)) for ns in ("a", "b")},
        "linked": {e: view.linked(e) for e in ENTITY_IDS},
        "differ": {(a, b): view.entities_differ(a, b) for a, b in combinations(ENTITY_IDS, 2)},
        "facts_differ": {(a, b): view.facts_differ(a, b) for a, b in combinations(MEMORY_IDS, 2)},
        # the pairs a decision reads (a pair flagged twice may keep either flag's reason)
        "flagged_with": {m: [c.other_id for c in view.flagged_with(m)] for m in MEMORY_IDS},
        "tails": {
            (ns, agent, vis): _tail(view.episode_tail(ns, agent, vis))
            for ns in ("a", "b")
            for agent in (None, "alice")
            for vis in ("private", "shared")
        },
    }


def _note(memory_id: str) -> MemoryStored:
    """A plain stored memory of namespace ``a``, for the examples below."""
    start = datetime(2000, 1, 1, tzinfo=UTC)
    return MemoryStored(memory_id=memory_id, namespace="a", memory_type="episodic",
                        t_valid=start, body=MemoryBody(content="x"))  # fmt: skip


def _flag(memory_id: str, other: str, entity: str, other_entity: str, reason: str) -> Event:
    return FactsPossiblyConflicting(memory_id=memory_id, namespace="a", others=(other,),
                                    entity_id=entity, other_entity_id=other_entity,
                                    reason=reason)  # fmt: skip


def _entity(entity_id: str) -> EntityCreated:
    return EntityCreated(entity_id=entity_id, namespace="a", name="Tokio", normalized="tokio")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands=commands)
# A pair flagged again from its other side reads as the later flag in both (one row a pair):
# here the later one is of one subject (merged), so neither side is flagged.
@example(commands=[[_note("m0"), _note("m1"), _flag("m0", "m1", "e0", "e0", "relation")],
                   [_flag("m1", "m0", "e0", "e0", "head word")]])  # fmt: skip
# A flag naming an entity already merged away is of the entity it went into.
@example(commands=[[_entity("e0"), _entity("e1"), _note("m0"), _note("m1")],
                   [EntitiesMerged(entity_id="e0", into="e1", namespace="a"),
                    _flag("m0", "m1", "e0", "e1", "head word")]])  # fmt: skip
def test_the_overlay_answers_what_the_read_model_answers(commands: list[list[Event]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = journaled(root, commands)
        model = ReadModel.open(root / "read.sqlite")
        try:
            model.apply(records)
            overlay = FakeView()  # the Overlay over an empty base
            for command in commands:
                overlay.apply(command)
            assert _answers(overlay) == _answers(ReadModelView(model))
        finally:
            model.close()


def test_the_pure_decisions_load_no_sqlite() -> None:
    """``ferrex.core`` decides over rows (``projections.rows``), never over the read model."""
    families = "ferrex.core.decide.store, ferrex.core.decide.forget, ferrex.core.decide.consolidate"
    probe = f"import sys, {families}, ferrex.core.view; print('apsw' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands=commands)
def test_kept_spellings_follow_every_write_of_either_connection(
    commands: list[list[Event]],
) -> None:
    # ReadModel.spellings keeps each namespace's list until the file's spelling generation
    # moves: records applied one at a time, alternately by two connections (as by two
    # processes), the kept list is always the one read afresh.
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = journaled(root, commands)
        one, two = ReadModel.open(root / "read.sqlite"), ReadModel.open(root / "read.sqlite")
        try:
            for i, record in enumerate(records):
                (one if i % 2 else two).apply([record])
                for model in (one, two):
                    for ns in ("a", "b"):
                        assert model.spellings(ns) == model._read_spellings(ns)
        finally:
            one.close()
            two.close()
