"""Recall on real parts: hybrid legs, staleness over time, as-of, visibility, replay."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ferrex.errors import UsageError
from ferrex.models import Embedder
from ferrex.models.rerank import RerankStage, choose_reranker
from ferrex.read.access import AccessLog
from ferrex.read.candidate import Candidate
from ferrex.read.recall import Reader
from ferrex.read.request import RecallRequest
from ferrex.rules.dates import Period
from ferrex.rules.fusion import NOTE_CONTEXT_SHARE
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreSettings, Writer
from journal import Journal
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


@dataclass
class World:
    writer: Writer
    reader: Reader
    clock: Clock
    journal: Journal

    def ids(self, query: str, **kw: object) -> list[str]:
        # The ranking, untrimmed (a default recall leaves out results judged irrelevant;
        # the tests of ranking below pass min_relevance 0 for the same reason).
        kw.setdefault("min_relevance", 0.0)
        result = self.reader.recall(RecallRequest(query=query, **kw))  # type: ignore[arg-type]
        return [r["id"] for r in result.results]


@pytest.fixture
def world(tmp_path: Path, encoders: Encoders, shared_embedder: Embedder) -> Iterator[World]:
    clock = Clock()  # one clock for the journal, the store and recall
    journal = Journal.open(tmp_path / "journal", clock=clock)
    backend = EdgeBackend(tmp_path / "qdrant")
    projections = Projections.open(tmp_path, journal, backend, encoders)
    writer = Writer(journal, projections, shared_embedder, StoreSettings(), clock=clock)
    off = RerankStage(choose_reranker("none", {}))
    reader = Reader(projections, shared_embedder, off, access=AccessLog(), clock=clock)
    yield World(writer, reader, clock, journal)
    projections.close()
    backend.close()
    journal.close()


def note(text: str, **kw: object) -> StoreRequest:
    return StoreRequest(content=text, **kw)  # type: ignore[arg-type]


def test_identifier_and_paraphrase_both_come_back(world: World) -> None:
    exact = world.writer.store(note("Ticket INC-90312 tracks the flaky login redirect"))
    meaning = world.writer.store(note("The staging database ran out of disk space overnight"))
    for i in range(8):
        world.writer.store(note(f"Weekly sync {i}: discussed roadmap item number {i * 7}"))
    # The identifier only BM25 can match; the paraphrase only the dense vector can (no
    # word of it, nor a spelling of one: "db" would be "database" to the keyword leg).
    ids = world.ids("INC-90312 and the storage on the test box filling up", limit=3)
    assert exact.id in ids and meaning.id in ids
    result = world.reader.recall(
        RecallRequest(
            min_relevance=0.0,
            query="INC-90312 storage filling up on test box",
            limit=5,
            explain=True,
        )
    )
    explained = {r["id"]: r["explain"] for r in result.results}
    assert explained[exact.id]["sparse_rank"] == 1
    assert explained[meaning.id]["sparse_rank"] is None
    assert explained[meaning.id]["dense_rank"] is not None


def test_staleness_moves_fresh_aging_stale_and_stale_is_hidden(world: World) -> None:
    old = world.writer.store(note("We pinned numpy below 2.0 for the ingest job"))
    assert world.ids("numpy pin for ingest") == [old.id]
    labels = []
    # Episodic: aging from 30 days, stale from 90 (later here: each recall is an access).
    for days in (20, 45, 200):
        world.clock.now = START + timedelta(days=days)
        result = world.reader.recall(RecallRequest(query="numpy pin", include_stale=True))
        labels.append(result.results[0]["freshness"]["label"])
    assert labels == ["fresh", "aging", "stale"]
    hidden = world.reader.recall(RecallRequest(query="numpy pin"))
    assert hidden.results == [] and hidden.hidden == {"stale": 1}


def test_as_of_returns_the_fact_valid_then(world: World) -> None:
    first = world.writer.store(
        StoreRequest(
            subject="api", predicate="uses", object="tokio 1.36", valid_from="2026-01-01T00:00:00Z"
        )
    )
    second = world.writer.store(
        StoreRequest(
            subject="api", predicate="uses", object="tokio 1.38", valid_from="2026-02-01T00:00:00Z"
        )
    )
    assert world.ids("which tokio does api use") == [second.id]
    assert world.ids("which tokio does api use", as_of="2026-01-15T00:00:00Z") == [first.id]
    both = world.ids("which tokio does api use", include_invalidated=True)
    assert set(both) == {first.id, second.id}


def test_filters_types_entities_time_and_namespace(world: World) -> None:
    fact = world.writer.store(
        StoreRequest(subject="web", predicate="uses", object="react", entities=("React",))
    )
    event = world.writer.store(
        note(
            "Upgraded the React router in the web app",
            entities=("react",),
            valid_from="2026-02-20T00:00:00Z",
        )
    )
    world.writer.store(note("Upgraded the React router in another team", namespace="other"))
    assert world.ids("react", types=("semantic",)) == [fact.id]
    assert set(world.ids("react", entities=("REACT",))) == {fact.id, event.id}
    assert world.ids(
        "react router", before="2026-02-21T00:00:00Z", after="2026-02-19T00:00:00Z"
    ) == [event.id]
    other = world.reader.recall(RecallRequest(query="react router", namespace="other"))
    assert len(other.results) == 1 and other.results[0]["id"] not in {fact.id, event.id}
    unknown = world.reader.recall(RecallRequest(query="react", entities=("angular",)))
    assert unknown.results == [] and unknown.unknown_entities == ["angular"]


def test_private_memories_are_invisible_to_other_agents(world: World) -> None:
    mine = world.writer.store(note("My scratch idea about caching tokens", agent_id="agent-a"))
    shared = world.writer.store(
        note("Team decision about caching tokens", agent_id="agent-a", visibility="shared")
    )
    assert set(world.ids("caching tokens", agent_id="agent-a")) == {mine.id, shared.id}
    assert world.ids("caching tokens", agent_id="agent-b") == [shared.id]
    assert set(world.ids("caching tokens")) == {mine.id, shared.id}  # the operator's view


def test_access_is_journaled_and_replay_reproduces_staleness(world: World) -> None:
    memory = world.writer.store(note("The on-call rota lives in the ops wiki"))
    for _ in range(3):
        world.ids("where is the on-call rota")
    assert world.reader.access.flush(world.writer.journal_accesses) == 1
    world.writer.projections.catch_up()
    row = world.writer.projections.read_model.get(memory.id)
    assert row is not None and row.access_count == 3 and row.last_validated is None
    world.clock.now = START + timedelta(days=20)
    before = world.reader.recall(RecallRequest(query="on-call rota", include_stale=True))
    world.writer.projections.rebuild()
    after = world.reader.recall(RecallRequest(query="on-call rota", include_stale=True))
    # The hits of these two recalls are still in the access log, not yet journaled.
    assert before.results[0]["freshness"] == after.results[0]["freshness"]
    assert after.results[0]["freshness"]["access_count"] == 3


@pytest.mark.parametrize(
    "request_",
    [
        RecallRequest(query=""),
        RecallRequest(query="x" * 3000),
        RecallRequest(query="ok", limit=0),
        RecallRequest(query="ok", limit=101),
        RecallRequest(query="ok", types=("opinion",)),
        RecallRequest(query="ok", as_of="last tuesday"),
        RecallRequest(query="ok", after="2026-01-01T00:00:00"),
        RecallRequest(query="bell \x07"),
    ],
)
def test_bad_queries_are_clear_errors(world: World, request_: RecallRequest) -> None:
    with pytest.raises(UsageError):
        world.reader.recall(request_)


def test_a_storage_budget_evicts_stale_episodes_never_facts(world: World) -> None:
    from journal import MemoriesForgotten

    fact = world.writer.store(StoreRequest(subject="db", predicate="runs on", object="port 5432"))
    old = [
        world.writer.store(note(f"Standup {i}: nothing blocked, reviewed ticket {1000 + i}"))
        for i in range(4)
    ]
    world.clock.now = START + timedelta(days=120)  # the standups are stale by now
    budget = sum(len(f"Standup {i}: nothing blocked, reviewed ticket {1000 + i}") for i in range(2))
    world.writer.settings = replace(world.writer.settings, budget_bytes=budget + 60)
    fresh = world.writer.store(note("Deploy freeze starts on Friday for the audit"))
    rm = world.writer.projections.read_model
    assert rm.get(fact.id) is not None and rm.get(fresh.id) is not None
    gone = [m.id for m in old if rm.get(m.id) is None]
    assert gone, "over budget: some stale standups are evicted"
    events = [e for r in world.journal.read() for e in r.events if isinstance(e, MemoriesForgotten)]
    assert [e.reason for e in events] == ["eviction"]
    assert set(events[0].memory_ids) == set(gone)
    assert set(events[0].details) <= {"stale_unreferenced_episodic", "stale_episodic"}


def test_each_leg_alone_finds_what_only_it_can(world: World) -> None:
    exact = world.writer.store(note("Ticket INC-90312 tracks the flaky login redirect"))
    meaning = world.writer.store(note("The staging database ran out of disk space overnight"))
    query = "INC-90312 storage filling up on the test box"
    # Stored back to back, the two notes are one derived episode: context off, legs alone.
    world.reader.settings = replace(
        world.reader.settings, context_share=0.0, note_context_share=0.0
    )
    bm25 = world.reader.recall(RecallRequest(query=query, legs="bm25", explain=True))
    assert [r["id"] for r in bm25.results] == [exact.id]  # no shared word with the other
    assert bm25.results[0]["explain"]["legs"] == "bm25"
    assert bm25.results[0]["explain"]["dense_rank"] is None
    dense = world.ids(query, legs="dense")
    assert meaning.id in dense
    assert set(world.ids(query)) == {exact.id, meaning.id}


def test_bad_legs_are_a_clear_error(world: World) -> None:
    with pytest.raises(UsageError, match="legs"):
        world.reader.recall(RecallRequest(query="ok", legs="both"))  # type: ignore[arg-type]


def turn(text: str, at: str, source: str | None = "chat/1", **kw: object) -> StoreRequest:
    return StoreRequest(content=text, valid_from=at, source=source, **kw)  # type: ignore[arg-type]


def test_an_episode_lends_its_neighbours_part_of_its_score(world: World) -> None:
    asked = world.writer.store(
        turn("Joanna: Could you send me that lasagna recipe of yours?", "2025-05-01T10:00:00Z")
    )
    answer = world.writer.store(
        turn("Nate: Sure thing, I can give it to you tomorrow!", "2025-05-01T10:01:00Z")
    )
    later = world.writer.store(
        turn("Nate: Happy to share anything that helps you.", "2025-05-01T13:00:00Z")
    )
    for i in range(6):
        world.writer.store(
            turn(f"Ops: rotated log bucket {i} again", f"2025-05-0{i + 2}T10:00:00Z")
        )
    result = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="lasagna recipe", limit=10, explain=True)
    )
    explained = {r["id"]: r["explain"] for r in result.results}
    assert result.results[0]["id"] == asked.id
    assert explained[answer.id]["context"]["from"] == asked.id
    assert [r["id"] for r in result.results].index(answer.id) == 1
    # Three hours after: not the same episode, whatever its source.
    assert later.id not in explained or explained[later.id]["context"] is None
    # Turned off, the answer is no longer pulled up by its neighbour.
    world.reader.settings = replace(world.reader.settings, context_share=0.0)
    plain = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="lasagna recipe", limit=10, explain=True)
    )
    assert all(r["explain"]["context"] is None for r in plain.results)


def test_episodes_without_a_source_lend_through_their_derived_episode(world: World) -> None:
    asked = world.writer.store(turn("Joanna: Could you send me that lasagna recipe?", None, None))
    hidden = world.writer.store(turn("Nate: Only for me.", None, None, agent_id="agent-n"))
    answer = world.writer.store(turn("Nate: Sure thing, tomorrow!", None, None))
    fact = world.writer.store(StoreRequest(subject="Nate", predicate="likes", object="pasta"))
    result = world.reader.recall(
        RecallRequest(
            min_relevance=0.0, query="lasagna recipe", limit=10, explain=True, agent_id="agent-j"
        )
    )
    explained = {r["id"]: r["explain"] for r in result.results}
    assert result.results[0]["id"] == asked.id
    assert explained[answer.id]["context"]["from"] == asked.id  # shares no word with it
    assert hidden.id not in explained  # another agent's private store: not even a step
    assert fact.id not in explained or explained[fact.id]["context"] is None


def test_an_imports_lines_are_neighbours_in_file_order(world: World) -> None:
    lines = [
        "Ops: rotated the log bucket",
        "Mia: Did anyone book the venue for the offsite?",
        "Leo: Done, the barn near the lake, for Friday.",
        "Kim: The printer on floor two is jammed.",
        "Raj: Payroll closes on the 25th this month.",
        "Ana: My cat knocked the monitor off the desk.",
    ]
    stored = world.writer.store_many([turn(text, None, None) for text in lines])
    ids = [s.id for s in stored]  # type: ignore[union-attr]
    rm = world.writer.projections.read_model
    rows = {m.memory_id: m for m in rm.memories(memory_ids=ids)}
    assert len({rows[i].episode for i in ids}) == 1
    assert [rows[i].episode_index for i in ids] == sorted(rows[i].episode_index for i in ids)
    result = world.reader.recall(RecallRequest(query="book the venue offsite", limit=3,
                                               explain=True, min_relevance=0.0))  # fmt: skip
    explained = {r["id"]: r["explain"] for r in result.results}
    assert result.results[0]["id"] == ids[1]
    assert explained[ids[2]]["context"]["from"] == ids[1]


def test_notes_without_a_speaker_lend_their_neighbours_nothing_unlike_dialogue(
    world: World,
) -> None:
    lines = ["Did anyone book the venue for the offsite?", "Done, the barn near the lake.",
             "The printer on floor two is jammed."]  # fmt: skip
    ids: dict[str, list[str]] = {}
    for namespace, labels in (("dialogue", ("Mia: ", "Leo: ", "Kim: ")), ("notes", ("",) * 3)):
        said = [label + text for label, text in zip(labels, lines, strict=True)]
        stored = world.writer.store_many([turn(t, None, None, namespace=namespace) for t in said])
        ids[namespace] = [s.id for s in stored]  # type: ignore[union-attr]

    def loan(namespace: str) -> tuple[dict[str, Any] | None, float]:
        result = world.reader.recall(RecallRequest(query="book the venue offsite", limit=3,
                                                   namespace=namespace, explain=True,
                                                   min_relevance=0.0))  # fmt: skip
        explained = {r["id"]: r["explain"] for r in result.results}
        first, second = ids[namespace][:2]
        assert result.results[0]["id"] == first
        lent = explained[first]["context"]
        own = explained[first]["fused"] - (lent["lent"] if lent else 0.0)
        return (explained[second]["context"] if second in explained else None), own

    given, own = loan("dialogue")  # the reply to a question comes back with it
    assert given is not None and given["from"] == ids["dialogue"][0]
    assert given["lent"] == pytest.approx(0.5 * own, abs=1e-5)
    assert NOTE_CONTEXT_SHARE == 0.0
    assert loan("notes")[0] is None  # a note next to a hit is no likelier to be an answer
    world.reader.settings = replace(world.reader.settings, note_context_share=0.2)
    given, own = loan("notes")
    assert given is not None and given["lent"] == pytest.approx(0.2 * own, abs=1e-5)


def test_episodes_hidden_by_the_filter_lend_nothing(world: World) -> None:
    private_asked = world.writer.store(
        turn("Joanna: And the tiramisu recipe?", "2025-05-01T11:00:00Z", "chat/2")
    )
    private_answer = world.writer.store(
        turn("Nate: Mine only.", "2025-05-01T11:01:00Z", "chat/2", agent_id="agent-n")
    )
    result = world.reader.recall(
        RecallRequest(query="tiramisu recipe", limit=10, explain=True, agent_id="agent-j")
    )
    explained = {r["id"]: r["explain"] for r in result.results}
    assert private_asked.id in explained
    assert private_answer.id not in explained  # another agent's private memory


def test_a_long_text_is_one_memory_embedded_in_parts(world: World) -> None:
    filler = [
        f"Paragraph {i} describes the quarterly budget review for department {i} in detail."
        for i in range(40)
    ]
    text = " ".join([*filler, "At dawn the lighthouse keeper fed the seagulls on the pier."])
    with pytest.raises(UsageError, match="window"):
        world.writer.store(note(text))
    long = world.writer.store(note(text, split_long=True))
    for i in range(5):
        world.writer.store(note(f"The quarterly budget of team {i} was approved"))
    projections = world.writer.projections
    backend, name = projections.backend, projections.live.memories
    points = [pid for pid, p in backend.scroll(name) if p["memory_id"] == long.id]
    assert len(points) > 1
    stored = backend.retrieve(name, points)
    sparse_sizes = sorted(len(sparse.indices) for _, sparse, _ in stored.values())
    assert sparse_sizes[:-1] == [0] * (len(points) - 1) and sparse_sizes[-1] > 20
    # The last sentence is far beyond the first window: only its own part can match it.
    assert world.ids("lighthouse keeper feeding seagulls", legs="dense")[0] == long.id
    assert world.ids("lighthouse keeper feeding seagulls", legs="bm25")[0] == long.id


def test_strategies_reweigh_without_switching_a_leg_off(world: World) -> None:
    exact = world.writer.store(note("Ticket INC-90312 tracks the flaky login redirect"))
    meaning = world.writer.store(note("The staging database ran out of disk space overnight"))
    query = "INC-90312 storage filling up on the test box"
    for strategy in ("balanced", "semantic", "lexical", "recent", "relational"):
        result = world.reader.recall(RecallRequest(query=query, strategy=strategy, explain=True))
        assert {r["id"] for r in result.results} == {exact.id, meaning.id}, strategy
        assert result.results[0]["explain"]["strategy"] == strategy
    semantic = world.reader.recall(RecallRequest(query=query, strategy="semantic", explain=True))
    lexical = world.reader.recall(RecallRequest(query=query, strategy="lexical", explain=True))
    fused = {s: {r["id"]: r["explain"]["fused"] for r in res.results}
             for s, res in (("semantic", semantic), ("lexical", lexical))}  # fmt: skip
    # The dense-only match weighs more under semantic than under lexical.
    assert fused["semantic"][meaning.id] > fused["lexical"][meaning.id]
    with pytest.raises(UsageError, match="strategy"):
        world.reader.recall(RecallRequest(query="ok", strategy="fast"))  # type: ignore[arg-type]


def test_recent_strongly_prefers_newer_events(world: World) -> None:
    old = world.writer.store(turn("The deploy window moved to Friday", "2020-01-01T10:00:00Z"))
    new = world.writer.store(turn("Deploy window: Friday, again", None, None))
    found = world.reader.recall(RecallRequest(query="deploy window", strategy="recent"))
    ids = [r["id"] for r in found.results]
    assert ids.index(new.id) < ids.index(old.id)


def test_relational_lifts_memories_naming_the_querys_entities(world: World) -> None:
    named = world.writer.store(note("the cache layer was rewritten", entities=["Grafana"]))
    other = world.writer.store(note("the cache layer was rewritten twice over the summer"))
    private = world.writer.store(
        note("Kafka note: the cache layer", entities=["Kafka"], agent_id="agent-a")
    )
    result = world.reader.recall(
        RecallRequest(query="what about Grafana and Kafka? the cache layer", limit=10,
                      strategy="relational", explain=True, agent_id="agent-b")
    )  # fmt: skip
    explained = {r["id"]: r["explain"] for r in result.results}
    assert explained[named.id]["entities"] == ["Grafana"]
    assert explained[other.id]["entities"] is None
    assert private.id not in explained  # and its spelling lifts nothing for agent-b
    assert result.results[0]["id"] == named.id


def test_a_date_in_the_question_boosts_memories_of_that_period(world: World) -> None:
    may = world.writer.store(turn("Sam went hiking with friends", "2023-05-07T15:00:00Z"))
    june = world.writer.store(turn("Sam hiking trip up the ridge in rain", "2023-06-20T15:00:00Z"))
    result = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="What did Sam do on May 7, 2023?", explain=True,
                      as_of="2023-07-01T00:00:00Z", include_invalidated=True)
    )  # fmt: skip
    explained = {r["id"]: r["explain"] for r in result.results}
    assert result.results[0]["id"] == may.id
    assert explained[may.id]["date"]["phrase"] == "May 7, 2023"
    assert explained[may.id]["date"]["within"] is True
    assert explained[june.id]["date"]["within"] is False
    # Relative to as_of: "last month" asked on July 1st is June.
    relative = world.reader.recall(
        RecallRequest(
            min_relevance=0.0,
            query="Sam hiking last month",
            explain=True,
            as_of="2023-07-01T00:00:00Z",
        )
    )
    assert relative.results[0]["id"] == june.id
    assert relative.results[0]["explain"]["date"]["phrase"] == "last month"


def test_the_graph_leg_finds_memories_naming_the_querys_entity_without_its_words(
    world: World,
) -> None:
    for i in range(6):
        world.writer.store(note(f"Grafana dashboards review number {i} went fine"))
    named = world.writer.store(note("the nightly job failed twice", entities=["Grafana"]))
    both = world.writer.store(note("alerts moved", entities=["Grafana", "Prometheus"]))
    hop = world.writer.store(note("retention set to ninety days", entities=["Prometheus"]))
    query = "Grafana?"
    # The graph leg's order (not the labels' order within the first five).
    world.reader.settings = replace(world.reader.settings, label_order=False)
    result = world.reader.recall(
        RecallRequest(min_relevance=0.0, query=query, limit=10, strategy="relational", explain=True)
    )
    explained = {r["id"]: r["explain"] for r in result.results}
    assert explained[named.id]["graph"] == {"score": 1.0, "via": ["Grafana"]}
    assert explained[named.id]["bm25"] is None  # no word in common with the query
    assert explained[both.id]["graph"]["via"] == ["Grafana"]
    assert explained[hop.id]["graph"] == {"score": 0.5, "via": ["Grafana", "co-mention"]}
    ids = [r["id"] for r in result.results]
    assert ids.index(named.id) < ids.index(hop.id) and ids.index(both.id) < ids.index(hop.id)
    assert set(ids[:2]) == {named.id, both.id}


def test_the_graph_leg_learns_nothing_from_another_agents_private_memories(
    world: World,
) -> None:
    world.writer.store(note("Grafana alerting rules", entities=["Grafana"]))
    zoo = world.writer.store(note("quorum of five nodes", entities=["Zookeeper"]))
    # Only agent-a's private memory links Grafana to Zookeeper, and names Kafka at all.
    world.writer.store(
        note("ops notes", entities=["Grafana", "Zookeeper", "Kafka"], agent_id="agent-a")
    )
    shared_kafka = world.writer.store(note("the broker count is three"))
    for agent, sees_hop in (("agent-b", False), ("agent-a", True)):
        result = world.reader.recall(
            RecallRequest(query="Grafana and Kafka", limit=10, strategy="relational",
                          explain=True, agent_id=agent, min_relevance=0.0)
        )  # fmt: skip
        graph = {r["id"]: r["explain"]["graph"] for r in result.results}
        assert (graph.get(zoo.id) is not None) is sees_hop, agent
        assert graph.get(shared_kafka.id) is None


def test_the_top_guard_keeps_the_lexical_best_first(world: World) -> None:
    asked = world.writer.store(note("Sam: what time is the standup tomorrow?", source="chat"))
    answer = world.writer.store(note("Ana: standup at ten as usual, notes in the wiki",
                                     source="chat"))  # fmt: skip
    for i in range(6):
        world.writer.store(note(f"Weekly sync {i}: discussed roadmap item number {i * 7}"))
    # A neighbour that receives its lender's whole score outranks the lender once fused.
    # The fused order and the guard alone (not the labels' order within the first five).
    world.reader.settings = replace(world.reader.settings, context_share=1.0, top_guard=False,
                                    label_order=False)  # fmt: skip
    ask = RecallRequest(query="what time is the standup", limit=3, explain=True)
    unguarded = world.reader.recall(ask).results
    assert [r["id"] for r in unguarded[:2]] == [answer.id, asked.id]
    assert unguarded[1]["explain"]["sparse_rank"] == 1
    assert unguarded[1]["relevance"] > unguarded[0]["relevance"]
    # The guard gives the first place back to BM25's best, which is also the more relevant.
    world.reader.settings = replace(world.reader.settings, top_guard=True)
    guarded = world.reader.recall(ask).results
    assert [r["id"] for r in guarded[:2]] == [asked.id, answer.id]
    assert guarded[0]["explain"]["top_guard"] is True
    assert "top_guard" not in guarded[1]["explain"]
    # Only balanced and lexical keep it; recent leaves the first place to what it lifts.
    assert world.reader.recall(replace(ask, strategy="recent")).results[0]["id"] == answer.id


def test_the_top_guard_leaves_a_more_relevant_paraphrase_first(world: World) -> None:
    lexical = world.writer.store(note("France exports a lot of cheese and wine"))
    meaning = world.writer.store(note("Paris is the capital city, seat of the French government"))
    for i in range(6):
        world.writer.store(note(f"Weekly sync {i}: discussed roadmap item number {i * 7}"))
    result = world.reader.recall(
        RecallRequest(query="what is the capital of France", limit=2, explain=True)
    ).results
    assert [r["id"] for r in result] == [meaning.id, lexical.id]
    assert result[1]["explain"]["sparse_rank"] == 1 and "top_guard" not in result[0]["explain"]


def test_weekdays_in_a_question_count_in_the_callers_zone(world: World) -> None:
    # Tuesday 2023-05-09 23:30 in Tokyo is still Tuesday 14:30 UTC.
    tuesday = world.writer.store(turn("We decided to freeze the schema", "2023-05-09T14:30:00Z"))
    monday = world.writer.store(turn("We decided to keep the schema open", "2023-05-08T12:00:00Z"))
    result = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="what did we decide last Tuesday?", explain=True,
                      as_of="2023-05-12T10:00:00+09:00", include_invalidated=True)
    )  # fmt: skip
    explained = {r["id"]: r["explain"] for r in result.results}
    assert explained[tuesday.id]["date"]["phrase"] == "last Tuesday"
    assert explained[tuesday.id]["date"]["from"] == "2023-05-08T15:00:00Z"  # Tokyo's midnight
    assert explained[tuesday.id]["date"]["within"] is True
    assert explained[monday.id]["date"]["within"] is False
    assert result.results[0]["id"] == tuesday.id


def test_a_question_that_names_only_a_period_finds_that_periods_memories(world: World) -> None:
    march = world.writer.store(
        turn("Migrated the billing database to Postgres 16", "2026-03-18T10:00:00Z")
    )
    april = world.writer.store(
        turn("What happened with the billing database: nothing new", "2026-04-02T10:00:00Z")
    )
    result = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="what happened in March 2026?", explain=True,
                      as_of="2026-11-01T00:00:00Z", include_invalidated=True)
    )  # fmt: skip
    assert result.results[0]["id"] == march.id
    assert result.results[0]["relevance_label"] == "strong"
    assert not result.nothing_relevant
    assert {r["id"]: r["relevance_label"] for r in result.results}[april.id] == "none"
    # a date beside words of its own: the words still count, the period is one term more
    worded = world.reader.recall(
        RecallRequest(min_relevance=0.0, query="billing database in March 2026", explain=True,
                      as_of="2026-11-01T00:00:00Z", include_invalidated=True)
    )  # fmt: skip
    labels = {r["id"]: r["relevance"] for r in worded.results}
    assert labels[march.id] > labels[april.id]


def test_the_explain_document_is_rendered_only_when_asked(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(6):
        world.writer.store(note(f"Weekly sync {i}: discussed roadmap item number {i * 7}"))
    rendered: list[str] = []
    render = Candidate.explain

    def counted(self: Candidate, legs: str, strategy: str, period: Period | None) -> Any:
        rendered.append(self.memory_id)
        return render(self, legs, strategy, period)

    monkeypatch.setattr(Candidate, "explain", counted)
    ask = RecallRequest(query="roadmap item 14", limit=3, min_relevance=0.0)
    plain = world.reader.recall(ask).results
    assert rendered == [] and plain and all("explain" not in r for r in plain)
    explained = world.reader.recall(replace(ask, explain=True)).results
    # One document per result returned, none for the candidates left behind.
    assert rendered == [r["id"] for r in explained] == [r["id"] for r in plain]
    assert [r["score"] for r in explained] == [r["score"] for r in plain]
    assert explained[0]["explain"]["legs"] == "hybrid"


def test_the_keyword_leg_asks_for_other_spellings_of_the_questions_words(world: World) -> None:
    short = world.writer.store(note("cart-svc p99 latency went up to 900 ms after the upgrade"))
    world.writer.store(note("The checkout service latency is 240 ms on a normal day"))
    world.writer.store(note("The cart page shows a banner when the shop is closed"))
    long = world.writer.store(note("The payment service retries a declined card twice"))
    world.writer.store(note("payment-api answers 402 for a declined card"))
    assert world.ids("cart service latency", legs="bm25")[0] == short.id
    assert world.ids("payment svc retries", legs="bm25")[0] == long.id
    # Off (0): the question's own tokens alone, and the other service's note wins.
    world.reader.settings = replace(world.reader.settings, spelling_weight=0.0)
    assert world.ids("cart service latency", legs="bm25")[0] != short.id


@pytest.mark.parametrize(
    ("after", "before"),
    [("2026-12-04", "2026-12-03"), ("2026-12-03T10:00:00Z", "2026-12-03T10:00:00Z")],
)
def test_an_empty_time_window_is_a_clear_error(world: World, after: str, before: str) -> None:
    """``after`` at or past ``before`` can hold nothing: said, not answered with no memories."""
    request_ = RecallRequest(query="what changed", after=after, before=before)
    with pytest.raises(UsageError, match="window is empty") as refused:
        world.reader.recall(request_)
    assert refused.value.hint and "before" in refused.value.hint
