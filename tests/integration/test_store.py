"""The store pipeline on real parts: journal, read model, Qdrant Edge and the real model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ferrex.errors import Refused, UsageError
from ferrex.models import Embedder
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal, MemorySuperseded, verify
from projections.qdrant_edge import EdgeBackend
from projections.reconcile import reconcile
from projections.replay import Projections
from projections.vector_sink import Encoders
from tests.integration.test_projections import snapshot

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def writer(tmp_path: Path, encoders: Encoders, shared_embedder: Embedder) -> Iterator[Writer]:
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    yield Writer(journal, projections, shared_embedder, StoreSettings(), clock=Clock())
    projections.close()
    backend.close()
    journal.close()


def fact(s: str, p: str, o: str, **kw: object) -> StoreRequest:
    return StoreRequest(subject=s, predicate=p, object=o, **kw)  # type: ignore[arg-type]


def note(text: str, **kw: object) -> StoreRequest:
    return StoreRequest(content=text, **kw)  # type: ignore[arg-type]


def replay_matches(writer: Writer) -> None:
    """A rebuild from the journal reproduces exactly the incrementally built state."""
    before = snapshot(writer.projections)
    writer.projections.rebuild()
    assert snapshot(writer.projections) == before
    assert reconcile(writer.projections).clean
    assert verify(writer.journal.directory).ok


def test_a_changed_dependency_supersedes_the_old_fact(writer: Writer) -> None:
    first = writer.store(fact("api-server", "uses", "tokio 1.36", entities=("Tokio",)))
    second = writer.store(
        fact("api-server", "depends-on", "tokio 1.38", entities=("tokio runtime",))
    )
    assert first.status == second.status == "stored" and second.superseded == (first.id,)
    rm = writer.projections.read_model
    old, new = rm.get(first.id), rm.get(second.id)
    assert old is not None and new is not None
    assert old.superseded_by == second.id and old.t_invalid == new.t_valid
    assert old.predicate_normalized == new.predicate_normalized == "depends_on"
    # "Tokio" and "tokio runtime" are one entity; the alias records how it matched. (The
    # first entity is the fact's subject, api-server, the same entity both times.)
    assert [e.name for e in first.entities] == ["api-server", "Tokio"]
    assert second.entities[0].entity_id == first.entities[0].entity_id
    assert second.entities[1].entity_id == first.entities[1].entity_id
    assert second.entities[1].match in ("fuzzy", "embedding")
    assert new.entity_ids == old.entity_ids
    match, alias = rm.db.execute(
        "SELECT match, alias FROM aliases WHERE normalized='tokio runtime'"
    ).get  # type: ignore[misc]
    assert alias == "tokio runtime" and match in ("fuzzy", "embedding")
    replay_matches(writer)


def test_a_back_dated_fact_older_than_the_current_one_is_kept_as_history(
    writer: Writer,
) -> None:
    newer = writer.store(
        fact("ledger-api", "tokio version", "1.38.1", valid_from="2026-05-14T09:00:00Z")
    )
    older = writer.store(
        fact("ledger-api", "tokio version", "1.36.0", valid_from="2025-09-10T09:00:00Z")
    )
    assert older.status == "stored_as_history" and older.superseded == ()
    assert older.superseded_by == newer.id and newer.id in (older.history_reason or "")
    rm = writer.projections.read_model
    current, history = rm.get(newer.id), rm.get(older.id)
    assert current is not None and history is not None
    assert current.t_invalid is None  # the newer fact stays the current one
    assert history.t_invalid == current.t_valid and history.superseded_by == newer.id
    assert history.t_valid < history.t_invalid
    # a fact newer than both still supersedes the current one, as usual
    newest = writer.store(fact("ledger-api", "tokio version", "1.41.0"))
    assert newest.superseded == (newer.id,)
    replay_matches(writer)


def test_a_change_dated_before_an_undated_fact_was_learned_replaces_it_at_that_date(
    writer: Writer,
) -> None:
    """orbit-db 15.4 stored without a date, then 16.1 valid from before that store: 15.4's
    start is unknown, so the change learned later is current, and ends 15.4 at its date."""
    old = writer.store(fact("orbit-db", "version", "15.4"))
    rm = writer.projections.read_model
    learned = rm.get(old.id)
    assert learned is not None and not learned.valid_from_given
    morning = datetime.fromtimestamp(learned.t_valid, UTC) - timedelta(hours=4)
    new = writer.store(fact("orbit-db", "version", "16.1", valid_from=morning.isoformat()))
    assert new.status == "stored" and new.superseded == (old.id,) and new.superseded_by is None
    current, ended = rm.get(new.id), rm.get(old.id)
    assert current is not None and ended is not None
    assert current.valid_from_given and current.t_invalid is None
    assert ended.t_invalid == morning.timestamp() and ended.superseded_by == new.id
    replay_matches(writer)


def test_another_agents_private_memories_do_not_steer_a_store(writer: Writer) -> None:
    """Bob's store is neither refused as a copy of Alice's private memory (which would show
    him its id) nor allowed to supersede her private fact."""
    alice = writer.store(note("The staging database password rotates every Friday",
                              agent_id="alice"))  # fmt: skip
    bob = writer.store(note("The staging database password rotates every Friday",
                            agent_id="bob"))  # fmt: skip
    assert bob.status == "stored" and bob.id != alice.id
    her_fact = writer.store(fact("staging-db", "runs on", "pg 15", agent_id="alice"))
    his_fact = writer.store(fact("staging-db", "runs on", "pg 16", agent_id="bob"))
    assert his_fact.superseded == ()
    memory = writer.projections.read_model.get(her_fact.id)
    assert memory is not None and memory.t_invalid is None
    # a shared memory still counts for everyone
    writer.store(note("The release freeze starts on 2026-12-18", visibility="shared",
                      agent_id="alice"))  # fmt: skip
    with pytest.raises(Refused) as refused:
        writer.store(note("The release freeze starts on 2026-12-18", agent_id="bob"))
    assert refused.value.code == "duplicate"


def test_the_same_fact_again_is_revalidated_not_stored(writer: Writer) -> None:
    first = writer.store(fact("alice", "prefers", "tabs"))
    again = writer.store(fact("Alice", "likes", "Tabs"))
    assert again.status == "duplicate" and again.id == first.id
    memory = writer.projections.read_model.get(first.id)
    assert memory is not None and memory.last_validated is not None
    assert writer.projections.read_model.db.execute("SELECT count(*) FROM memories").get == 1
    replay_matches(writer)


def test_a_near_identical_rewording_is_refused_with_the_original_id(writer: Writer) -> None:
    first = writer.store(note("Alice prefers tabs over spaces in Python code"))
    head = writer.journal.head.position
    with pytest.raises(Refused) as caught:
        writer.store(note("Alice prefers tabs instead of spaces in Python code"))
    assert caught.value.code == "duplicate" and caught.value.details["ids"] == [first.id]
    assert caught.value.details["similarity"] >= 0.95 and "supersedes=" in str(caught.value.hint)
    assert writer.journal.refresh().position == head, "a refused store writes nothing"
    # supersedes bypasses dedup
    newer = writer.store(
        note("Alice prefers tabs instead of spaces in Python code", supersedes=first.id)
    )
    assert newer.superseded == (first.id,) and newer.validated == (newer.id,)


def test_different_identifiers_are_different_facts(
    writer: Writer, shared_embedder: Embedder
) -> None:
    a = "Deployed api-server v1.36 to production after the canary passed"
    b = "Deployed api-server v1.38 to production after the canary passed"
    vectors = shared_embedder.embed_many([a, b])
    assert float(np.dot(vectors[0], vectors[1])) >= 0.95, "the guard must be what keeps both"
    writer.store(note(a))
    writer.store(note(b))
    writer.store(note("Merged PR #260 into main"))
    writer.store(note("Merged PR #480 into main"))
    assert writer.projections.read_model.db.execute("SELECT count(*) FROM memories").get == 4


def test_an_ambiguous_object_is_stored_beside_the_old_one_and_flagged(writer: Writer) -> None:
    # Thresholds from the configuration: everything short of identical is ambiguous here.
    writer.settings = replace(writer.settings, conflict_duplicate=0.9999, conflict_different=0.0)
    first = writer.store(fact("billing", "owned by", "the payments team"))
    second = writer.store(fact("billing", "owned by", "the platform team"))
    # Nothing the agent said is lost, nothing replaced: both stand, flagged, and the answer
    # names the other with the line that settles it.
    assert second.status == "stored" and second.superseded == ()
    assert second.possible_conflict == (first.id,)
    assert f"supersedes={first.id}" in second.as_dict()["possible_conflict_note"]
    rm = writer.projections.read_model
    assert rm.get(first.id).t_invalid is None  # type: ignore[union-attr]
    assert rm.get(second.id).t_invalid is None  # type: ignore[union-attr]
    # The same value in other words is no doubt: the new wording replaces the old one.
    version = writer.store(fact("billing", "version", "v2.4.0"))
    again = writer.store(fact("billing", "version", "2.4.0"))
    assert again.superseded == (version.id,) and again.possible_conflict == ()


def test_unrelated_predicates_do_not_conflict(writer: Writer) -> None:
    writer.store(fact("api-server", "uses", "tokio"))
    other = writer.store(fact("api-server", "owned by", "platform team"))
    assert other.superseded == ()


def test_supersedes_errors(writer: Writer) -> None:
    with pytest.raises(Refused) as caught:
        writer.store(note("a replacement", supersedes="mem_NOPE"))
    assert caught.value.code == "not_found"
    first = writer.store(note("the staging database runs on port 5433"))
    second = writer.store(note("the staging database now runs on port 6543", supersedes=first.id))
    with pytest.raises(Refused) as caught:
        writer.store(note("it runs on port 7000", supersedes=first.id))
    assert caught.value.code == "already_superseded"
    assert caught.value.details["superseded_by"] == second.id


def test_procedures_get_versions_and_keep_history(writer: Writer) -> None:
    v1 = writer.store(StoreRequest(name="deploy api-server", steps=("build", "migrate", "roll")))
    v2 = writer.store(
        StoreRequest(name="deploy api-server", steps=("build", "migrate", "canary", "roll"))
    )
    assert (v1.type, v1.version, v2.version) == ("procedural", 1, 2)
    assert v2.superseded == (v1.id,)
    records = list(writer.journal.read())
    reasons = [e.reason for r in records for e in r.events if isinstance(e, MemorySuperseded)]
    assert reasons == ["version"]
    old = writer.projections.read_model.get(v1.id)
    assert old is not None and old.steps == ("build", "migrate", "roll")
    replay_matches(writer)


def test_citing_a_memory_validates_it(writer: Writer) -> None:
    cited = writer.store(note("the cache TTL is 300 seconds"))
    writer.store(note("raised the cache TTL alarms threshold", source=f"memory:{cited.id}"))
    memory = writer.projections.read_model.get(cited.id)
    assert memory is not None and memory.last_validated is not None


def test_forget(writer: Writer) -> None:
    kept = writer.store(note("the release train leaves on Thursdays", entities=("release",)))
    gone = writer.store(note("Bob owns the flaky test quarantine", entities=("Bob",)))
    head = writer.journal.head.position
    with pytest.raises(UsageError):
        writer.forget(["has space"])
    with pytest.raises(UsageError):
        writer.forget([])
    assert writer.journal.refresh().position == head
    result = writer.forget([gone.id, "mem_UNKNOWN"], cascade=True)
    assert result.forgotten == (gone.id,) and result.not_found == ("mem_UNKNOWN",)
    assert result.dropped_entities == (gone.entities[0].entity_id,)
    rm = writer.projections.read_model
    assert rm.get(gone.id) is None and rm.get(kept.id) is not None
    assert writer.forget([gone.id]).not_found == (gone.id,)
    replay_matches(writer)


@pytest.mark.parametrize(
    "request_",
    [
        StoreRequest(),
        StoreRequest(type="semantic", subject="x", predicate="is"),
        StoreRequest(content="x" * 9000),
        StoreRequest(content="ok", confidence=1.5),
        StoreRequest(content="bell \x07 here"),
        StoreRequest(content="word " * 400),
        StoreRequest(content="ok", visibility="public"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(writer: Writer, request_: StoreRequest) -> None:
    head = writer.journal.head.position
    with pytest.raises(UsageError) as caught:
        writer.store(request_)
    assert caught.value.code == "invalid_input" and caught.value.message
    assert writer.journal.refresh().position == head


def test_a_batch_sees_its_own_earlier_requests(writer: Writer) -> None:
    outcomes = writer.store_many(
        [
            fact("api-server", "uses", "tokio 1.36", entities=("Tokio",)),
            fact("api-server", "depends on", "tokio 1.38", entities=("tokio runtime",)),
            note("Alice prefers tabs over spaces in Python code"),
            note("Alice prefers tabs instead of spaces in Python code"),
            StoreRequest(name="deploy", steps=("build", "ship")),
            StoreRequest(name="deploy", steps=("build", "test", "ship")),
            StoreRequest(content=""),
        ]
    )
    first, second, tabs, tabs_again, v1, v2, bad = outcomes
    assert not isinstance(first, Exception) and not isinstance(second, Exception)
    assert second.superseded == (first.id,)
    assert second.entities[0].entity_id == first.entities[0].entity_id
    assert not isinstance(tabs, Exception)
    assert isinstance(tabs_again, Refused) and tabs_again.details["ids"] == [tabs.id]
    assert not isinstance(v1, Exception) and not isinstance(v2, Exception)
    assert (v1.version, v2.version, v2.superseded) == (1, 2, (v1.id,))
    assert isinstance(bad, UsageError)
    positions = [o.position for o in outcomes if not isinstance(o, Exception)]
    assert positions == sorted(positions) and len(set(positions)) == 5
    replay_matches(writer)


def test_validate_shown_confirms_only_what_a_recall_showed(writer: Writer) -> None:
    shown = writer.store(note("The release train leaves on Thursdays"))
    hidden = writer.store(note("The staging cluster runs on spot instances"))
    head = writer.journal.head.position
    with pytest.raises(UsageError, match="not returned: " + hidden.id):
        writer.validate_shown([shown.id, hidden.id], [shown.id])
    assert writer.journal.head.position == head  # refused: nothing written
    done = writer.validate_shown([shown.id], [shown.id, "mem_other"])
    assert done.validated == (shown.id,)
    assert writer.journal.head.position == head + 1


class CountingTokenizer:
    """The real tokenizer, noting each text it encodes."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.encoded: list[str] = []

    def encode(self, text: str) -> Any:
        self.encoded.append(text)
        return self.tokenizer.encode(text)


def test_a_short_memory_is_tokenised_once_and_a_long_one_still_refused(writer: Writer) -> None:
    """The window check tokenises only a text that may not fit, and once however often the
    store asks (the vector projection asks again); the model tokenises every text it embeds,
    so a short ASCII memory is tokenised once, not twice."""
    counter = writer.embedder.counter()
    counter.count_tokens("")  # loaded
    spy = CountingTokenizer(counter._tokenizer)
    counter._tokenizer = spy  # type: ignore[assignment]
    try:
        writer.store(note("The billing service deploys on Thursdays after the freeze"))
        assert spy.encoded == []
        unicode = "Le déploiement du service de facturation est prévu jeudi à Zürich"
        writer.store(note(unicode))
        assert spy.encoded == [unicode]  # not surely short: counted, once
        head = writer.journal.head.position
        too_long = "!" * counter.window  # a token a character, and [CLS] and [SEP]
        window = f"longer than the model's window of {counter.window}"
        with pytest.raises(UsageError, match=window):
            writer.store(note(too_long))
        assert spy.encoded[-1] == too_long
        assert writer.journal.head.position == head  # refused: nothing written
    finally:
        counter._tokenizer = spy.tokenizer


def test_a_store_catches_up_what_another_writer_of_the_journal_wrote(
    tmp_path: Path, writer: Writer, encoders: Encoders, shared_embedder: Embedder
) -> None:
    # A second writer on the same journal files with projections of its own, as another
    # process would be: each store must see the other's memories before it decides, while a
    # store after one of its own (nothing new in the journal) skips the catch-up.
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "other" / "qdrant")
    (tmp_path / "other").mkdir(exist_ok=True)
    projections = Projections.open(tmp_path / "other", journal, backend, encoders)
    other = Writer(journal, projections, shared_embedder, StoreSettings(), clock=Clock())
    try:
        text = "The billing worker drains its queue every night at 02:00"
        first = writer.store(note(text))
        assert not writer.projections.behind(writer.journal.refresh().position)
        assert _refused_as_copy_of(other, text) == first.id
        later = other.store(note("The search index is rebuilt on Sundays from the archive"))
        assert writer.projections.behind(writer.journal.refresh().position)
        assert later.status == "stored"
        assert (
            _refused_as_copy_of(writer, "The search index is rebuilt on Sundays from the archive")
            == later.id
        )
        own = writer.store(note("Release notes are published after each deploy to prod"))
        assert own.status == "stored"
        assert not writer.projections.behind(writer.journal.refresh().position)
        assert (
            _refused_as_copy_of(other, "Release notes are published after each deploy to prod")
            == own.id
        )
    finally:
        projections.close()
        backend.close()
        journal.close()
    replay_matches(writer)


def _refused_as_copy_of(writer: Writer, text: str) -> str:
    """The id of the memory the store of ``text`` was refused as a copy of."""
    with pytest.raises(Refused) as refused:
        writer.store(note(text))
    assert refused.value.code == "duplicate"
    ids: list[str] = refused.value.details["ids"]
    return ids[0]


def test_a_store_runs_the_model_before_the_writer_lock_not_under_it(
    writer: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a store will embed once it holds the lock is embedded with its text before it: a
    # new subject's or entity's name (its spelling's point), the objects a restated fact is
    # weighed against. So no store here runs the model while other writers wait.
    run = f"{uuid.uuid4().hex[:8]}"
    held = [False]
    exclusive = writer.journal.exclusive

    @contextmanager
    def tracked() -> Iterator[Any]:
        with exclusive() as head:
            held[0] = True
            try:
                yield head
            finally:
                held[0] = False

    model = writer.embedder.model()
    embed = model.run
    runs: list[tuple[list[str], bool]] = []

    def counted(texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        runs.append((list(texts), held[0]))
        return embed(texts, *args, **kwargs)

    monkeypatch.setattr(writer.journal, "exclusive", tracked)
    monkeypatch.setattr(model, "run", counted)
    subject = f"billing-{run}"
    first = writer.store(fact(subject, "runs on", f"host 3 of run {run}"))
    assert first.status == "stored"
    assert [under for _, under in runs] == [False] and subject in runs[0][0]
    runs.clear()
    second = writer.store(fact(subject, "runs on", f"host 9 of run {run}",
                               valid_from="2026-01-01T00:00:00Z"))  # fmt: skip
    assert second.status == "stored" and second.superseded == (first.id,)
    assert [under for _, under in runs] == [False]
    assert {f"host 9 of run {run}", f"host 3 of run {run}"} <= set(runs[0][0])
    runs.clear()
    note_ = writer.store(
        note(f"The {run} ledger moved to the Kestrel cluster", entities=(f"Kestrel {run}",))
    )
    assert note_.status == "stored"
    assert [under for _, under in runs] == [False] and f"Kestrel {run}" in runs[0][0]
    # A subject's other relation is not weighed: its object is not embedded ahead.
    runs.clear()
    writer.store(fact(subject, "is owned by", f"team {run}"))
    assert runs and f"team {run}" not in runs[0][0]
