"""Consolidation on the pure core: the extractive rule and the decisions (no model, no I/O).

The decisions take read-model rows as they are given; the rows here are built with the one
constructor the projection uses (``Memory.from_event``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.core.decide.consolidate import (
    SESSION_GAP_SECONDS,
    consolidation_groups,
    decide_consolidate,
    decide_refold,
    decide_unfold,
)
from ferrex.core.view import Overlay
from ferrex.errors import Refused, UsageError
from ferrex.rules.consolidation import (
    MIN_BUDGET,
    Source,
    content_words,
    restates,
    sentences,
    statements,
    summarize,
)
from journal import (
    MemoriesConsolidated,
    MemoriesForgotten,
    MemoriesUnfolded,
    MemoryBody,
    MemoryMarked,
    MemoryStored,
)
from journal.events import EpisodeRef
from projections.rows import Memory

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OLD = (NOW - timedelta(days=60)).timestamp()
CUTOFF = (NOW - timedelta(days=30)).timestamp()

TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday. It was really powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: The support group made me feel accepted. I want to study counseling.",
    "Melanie: Counseling suits you. My kids love the pottery class we took in May.",
    "Caroline: Pottery sounds fun. I am researching adoption agencies this month.",
]


def row(
    i: int,
    text: str,
    *,
    source: str | None = "chat-1",
    agent: str | None = "alice",
    visibility: str = "shared",
    created: float = OLD,
    **changes: object,
) -> Memory:
    event = MemoryStored(
        memory_id=f"m{i}",
        namespace="default",
        memory_type="episodic",
        t_valid=datetime(2023, 5, 1, tzinfo=UTC) + timedelta(minutes=i),
        entity_ids=("e0", f"e{1 + i % 2}"),  # every two share e0: one group
        agent_id=agent,
        visibility=visibility,  # type: ignore[arg-type]
        body=MemoryBody(content=text, source=source),
        episode=None if source else EpisodeRef("ep1", i),
    )
    m = Memory.from_event(event, position=i, created_at=created, predicate_normalized=None)
    return replace(m, **changes)  # type: ignore[arg-type]


CHATTY = "Melanie: Wow, that's lovely! How was it?"
"""A turn that states nothing: the one a summary of the chat drops."""


def chat(**kw: object) -> list[Memory]:
    turns = [row(i, t, **kw) for i, t in enumerate(TURNS)]  # type: ignore[arg-type]
    return [*turns, row(len(TURNS), CHATTY, entity_ids=(), **kw)]  # type: ignore[arg-type]


# -- the rule -------------------------------------------------------------------------------


def test_sentences_are_exact_slices() -> None:
    text = "  First one.  Second one!\nThird?  fourth without end "
    found = sentences(text)
    assert found == ["First one.", "Second one!", "Third?", "fourth without end"]
    assert all(s in text for s in found)


@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=300),
        min_size=1,
        max_size=8,
    ),
    st.floats(0.05, 1.0),
)
def test_every_summary_sentence_is_a_sentence_of_its_source(texts: list[str], ratio: float) -> None:
    sources = [Source(f"m{i}", t) for i, t in enumerate(texts)]
    summary = summarize(sources, keep_ratio=ratio)
    by_id = {s.memory_id: s.text for s in sources}
    for memory_id, sentence in summary.sentences():
        assert sentence in sentences(by_id[memory_id])
    # the pieces tile the text, joined by one space, in the sources' order
    assert " ".join(s for _, s in summary.sentences()) == summary.text
    order = [int(m[1:]) for m, _ in summary.sentences()]
    assert order == sorted(order)
    assert summarize(sources, keep_ratio=ratio) == summary  # deterministic


def test_the_budget_holds_and_the_most_covering_sentences_stay() -> None:
    texts = [*TURNS * 3, "Oh, yes! It is."]  # repeats: kept once; no content word: never
    long_chat = [Source(f"m{i}", t) for i, t in enumerate(texts)]
    summary = summarize(long_chat, keep_ratio=0.3)
    assert len(summary.text) <= max(MIN_BUDGET, int(summary.source_chars * 0.3))
    assert len(summarize(long_chat[:2], keep_ratio=1.0).text) <= sum(len(t) for t in texts[:2])
    kept = [s for _, s in summary.sentences()]
    assert len(kept) == len(set(kept))
    assert summary.source_chars == sum(len(t) for t in texts)
    assert "Oh, yes!" not in kept and "It is." not in kept
    everything = summarize(long_chat, keep_ratio=1.0)
    assert "Oh, yes!" not in [s for _, s in everything.sentences()]


def test_a_bad_ratio_is_refused() -> None:
    with pytest.raises(ValueError, match="keep_ratio"):
        summarize([Source("m0", "text")], keep_ratio=0)


# -- the decisions ----------------------------------------------------------------------------


def test_groups_are_per_source_and_agent_and_skip_what_may_not_fold() -> None:
    memories = [
        *chat(),
        row(10, "Bob's own note about pottery.", agent="bob"),
        row(11, "Bob again, about the lake.", agent="bob"),
        row(12, "A lone note with no source.", source=None, episode=None),
        row(13, "Too young to fold.", created=NOW.timestamp()),
        row(14, "Pinned stays.", pinned=True),
        row(15, "Expiring stays.", expires_at=NOW.timestamp() + 60),
        row(16, "Already folded.", t_invalid=OLD, superseded_by="s0"),
        row(17, "Alice's private aside.", visibility="private"),
        row(18, "Another private aside.", visibility="private"),
    ]
    groups = consolidation_groups(memories, created_before=CUTOFF, summaries=frozenset())
    assert [(key, [m.memory_id for m in ms]) for key, ms in groups] == [
        ("source:chat-1", ["m17", "m18"]),  # alice's private ones apart from her shared
        ("source:chat-1", ["m0", "m1", "m2", "m3", "m4"]),
        ("source:chat-1", ["m10", "m11"]),
    ]
    assert [(ms[0].agent_id, ms[0].visibility) for _, ms in groups] == [
        ("alice", "private"), ("alice", "shared"), ("bob", "shared"),
    ]  # fmt: skip


def test_a_summary_carries_entities_importance_and_the_sources() -> None:
    members = chat()
    members[2] = replace(members[2], importance=0.9)
    d = decide_consolidate(
        "source:chat-1",
        members,
        created_before=CUTOFF,
        summaries=frozenset(),
        now=NOW,
        summary_id="s1",
        keep_ratio=0.5,
    )
    stored, marked, folded = d.events
    assert isinstance(stored, MemoryStored) and isinstance(marked, MemoryMarked)
    assert isinstance(folded, MemoriesConsolidated)
    assert stored.memory_type == "episodic" and stored.body is not None
    assert stored.body.source == "chat-1"
    assert stored.entity_ids == ("e0", "e1", "e2")
    assert stored.visibility == "shared" and stored.agent_id == "alice"
    assert stored.t_valid == datetime(2023, 5, 1, tzinfo=UTC)
    assert marked.importance == 0.9
    assert folded.memory_ids == tuple(m.memory_id for m in members)
    assert folded.at == NOW and folded.summary_id == "s1"
    text = stored.body.content or ""
    for piece in folded.folds:
        sentence = text[piece.start : piece.end]
        assert sentence in TURNS[int(piece.memory_id[1:])]
    (result,) = d.result.summaries
    assert result.chars == len(text) < result.source_chars
    assert CHATTY not in text and all(t in text for t in TURNS)


def test_one_private_source_makes_the_summary_private() -> None:
    members = chat()
    members[3] = replace(members[3], visibility="private")
    d = decide_consolidate(
        "source:chat-1",
        members,
        created_before=CUTOFF,
        summaries=frozenset(),
        now=NOW,
        summary_id="s1",
        keep_ratio=0.5,
    )
    stored = d.events[0]
    assert isinstance(stored, MemoryStored) and stored.visibility == "private"


def test_pinned_and_young_memories_are_never_folded() -> None:
    members = chat()
    members[0] = replace(members[0], pinned=True)
    members[1] = replace(members[1], created_at=NOW.timestamp())
    d = decide_consolidate(
        "source:chat-1",
        members,
        created_before=CUTOFF,
        summaries=frozenset(),
        now=NOW,
        summary_id="s1",
        keep_ratio=1.0,
    )
    folded = d.events[-1]
    assert isinstance(folded, MemoriesConsolidated)
    assert folded.memory_ids == ("m2", "m3", "m4", "m5")
    assert {f.memory_id for f in folded.folds} <= {"m2", "m3", "m4", "m5"}
    # fewer than two left: nothing at all
    lone = decide_consolidate(
        "source:chat-1", members[:3], created_before=CUTOFF, summaries=frozenset(), now=NOW,
        summary_id="s1", keep_ratio=1.0,
    )  # fmt: skip
    assert lone.events == () and lone.result.summaries == ()


def test_sources_of_two_agents_are_refused() -> None:
    members = chat()
    members[1] = replace(members[1], agent_id="bob")
    with pytest.raises(Refused, match="one agent"):
        decide_consolidate(
            "source:chat-1", members, created_before=CUTOFF, summaries=frozenset(), now=NOW,
            summary_id="s1", keep_ratio=0.5,
        )  # fmt: skip


class Rows:
    """A committed state of rows, as :class:`~ferrex.core.view.View` reads it (a double:
    the decisions below read only ``memory``)."""

    def __init__(self, memories: list[Memory]) -> None:
        self.rows = {m.memory_id: m for m in memories}

    def memory(self, memory_id: str) -> Memory | None:
        return self.rows.get(memory_id)


def _folded_state() -> tuple[Overlay, list[Memory]]:
    members = chat()
    d = decide_consolidate(
        "source:chat-1",
        members,
        created_before=CUTOFF,
        summaries=frozenset(),
        now=NOW,
        summary_id="s1",
        keep_ratio=0.5,
    )
    view = Overlay(Rows(members))  # type: ignore[arg-type]
    view.apply(d.events)
    return view, members


def test_undo_brings_the_sources_back_and_forgets_the_summary() -> None:
    view, members = _folded_state()
    assert all(view.memory(m.memory_id).superseded_by == "s1" for m in members)  # type: ignore[union-attr]
    d = decide_unfold("s1", view, [m.memory_id for m in members])
    unfolded, forgotten = d.events
    assert isinstance(unfolded, MemoriesUnfolded) and unfolded.memory_ids == tuple(
        m.memory_id for m in members
    )
    assert isinstance(forgotten, MemoriesForgotten) and forgotten.memory_ids == ("s1",)
    view.apply(d.events)
    assert all(view.memory(m.memory_id).t_invalid is None for m in members)  # type: ignore[union-attr]
    assert view.memory("s1") is None


def test_undo_of_what_is_not_a_summary_is_refused() -> None:
    view, _ = _folded_state()
    with pytest.raises(Refused) as refused:
        decide_unfold("m0", view, [])
    assert refused.value.code == "not_found"
    with pytest.raises(Refused):
        decide_unfold("nothing", view, ["m0"])
    with pytest.raises(UsageError):
        decide_unfold("not an id", view, ["m0"])


def test_forgetting_a_source_makes_the_summary_again_without_its_sentences() -> None:
    view, members = _folded_state()
    ids = [m.memory_id for m in members]
    events = decide_refold(
        ["m2"], view, {"s1": ids}, now=NOW, new_id=lambda _: "s2", keep_ratio=1.0
    )
    stored, folded, forgotten = events
    assert isinstance(stored, MemoryStored) and stored.memory_id == "s2"
    assert isinstance(folded, MemoriesConsolidated) and "m2" not in folded.memory_ids
    assert isinstance(forgotten, MemoriesForgotten) and forgotten.memory_ids == ("s1",)
    assert forgotten.reason == "consolidation"
    text = stored.body.content if stored.body else ""
    for sentence in sentences(TURNS[2]):
        assert sentence not in (text or "")


def test_forgetting_every_source_forgets_the_summary() -> None:
    view, members = _folded_state()
    ids = [m.memory_id for m in members]
    events = decide_refold(ids, view, {"s1": ids}, now=NOW, new_id=lambda _: "s2", keep_ratio=1.0)
    assert len(events) == 1 and isinstance(events[0], MemoriesForgotten)


def test_forgetting_a_summary_gives_its_sources_back() -> None:
    view, members = _folded_state()
    ids = [m.memory_id for m in members]
    events = decide_refold(["s1"], view, {"s1": ids}, now=NOW, new_id=lambda _: "s2", keep_ratio=1)
    (unfolded,) = events
    assert isinstance(unfolded, MemoriesUnfolded) and unfolded.memory_ids == tuple(ids)


def test_the_turn_unit_keeps_whole_episodes() -> None:
    chatty = [*TURNS, "Melanie: Wow, that's lovely! How was it?", "Caroline: Thanks, Mel!"]
    sources = [Source(f"m{i}", f"  {t} ") for i, t in enumerate(chatty)]
    summary = summarize(sources, keep_ratio=0.5, unit="turn")
    kept = summary.sentences()
    assert kept and all(text == chatty[int(m[1:])] for m, text in kept)
    assert [text for _, text in kept] == TURNS  # every turn stating something, nothing else
    with pytest.raises(ValueError, match="unit"):
        summarize(sources, unit="paragraph")  # type: ignore[arg-type]


# -- what a turn states ---------------------------------------------------------------------

SPEAKERS = frozenset({"Caroline", "Melanie", "user", "assistant"})


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("user: We run our prod cluster 'orca' on Kubernetes 1.27",
         {"number", "identifier", "name", "first person"}),
        ("user: The lag came from a nightly VACUUM FULL", {"name"}),
        ("user: the config lives in settings_local.py", {"identifier"}),
        ("user: ask about INC-90312 before Friday", {"number", "name"}),
        ("user: the retro moved to next week", {"date"}),
        ("user: we decided to go with postgres", {"first person"}),
        ("user: I prefer tabs over spaces.", {"first person"}),
        ("Caroline: I went to an LGBTQ support group yesterday.",
         {"name", "date", "first person"}),
        # what states nothing: greetings (a speaker's name is no fact), thanks, questions,
        # reactions
        ("Caroline: Hey Mel! Good to see you! How have you been?", set()),
        ("Melanie: Thanks, Caroline! That's really sweet.", set()),
        ("assistant: Great question! Happy to help.", set()),
        ("user: thanks, that fixed it", set()),
        ("Melanie: Wow, love that! Did you paint it yourself?", set()),
        ("user: It's the kids' toys, isn't it", set()),
    ],
)  # fmt: skip
def test_what_a_turn_states_is_read_from_its_structure(text: str, kinds: set[str]) -> None:
    assert set(statements(text, SPEAKERS).kinds) == kinds


def test_a_turn_stating_something_is_kept_past_the_budget() -> None:
    facts = [
        "user: We run our prod cluster 'orca' on Kubernetes 1.27 since the upgrade in March.",
        "assistant: Okay, noted. Anything else about the cluster I should keep in mind?",
        "user: The lag came from a nightly VACUUM FULL on the orders table.",
        "assistant: Thanks for sharing, that explains it!",
        "user: We decided to move the job to Sunday nights.",
    ]
    sources = [Source(f"m{i}", t) for i, t in enumerate(facts)]
    for unit in ("turn", "sentence"):
        summary = summarize(sources, keep_ratio=0.1, unit=unit)  # type: ignore[arg-type]
        for i in (0, 2, 4):
            assert facts[i].split(": ", 1)[1] in summary.text, (unit, i)
        assert "Thanks for sharing" not in summary.text
        assert "Anything else" not in summary.text


def test_a_memory_stored_about_an_entity_states_something() -> None:
    observations = [Source(f"m{i}", f"alice: {t}", ("e-alice",)) for i, t in
                    enumerate(["likes tea", "works nights", "Thanks!"])]  # fmt: skip
    summary = summarize(observations, keep_ratio=0.1, unit="turn")
    assert [m for m, _ in summary.sentences()] == ["m0", "m1", "m2"]
    plain = [Source(s.memory_id, s.text) for s in observations]
    assert statements(plain[0].text).kinds == ()  # the words alone say nothing checkable


def test_a_group_where_every_turn_states_something_is_left_alone() -> None:
    d = decide_consolidate(
        "source:chat-1", chat()[:5], created_before=CUTOFF, summaries=frozenset(), now=NOW,
        summary_id="s1", keep_ratio=0.5,
    )  # fmt: skip
    assert d.events == () and d.result.summaries == ()


def test_a_restatement_may_go_and_what_adds_nothing_stays_out() -> None:
    turns = [
        "user: The backup runs at 02:00 on db-7.",
        "assistant: The backup runs at 02:00 on db-7.",  # the same words: kept once
        "assistant: So the backup on db-7 runs at 02:00.",  # a restatement
        "assistant: Right, the backup.",  # no fact, and repeats as much as it adds
    ]
    summary = summarize([Source(f"m{i}", t) for i, t in enumerate(turns)], unit="turn")
    assert [m for m, _ in summary.sentences()] == ["m0"]
    assert restates(turns[2], content_words(turns[0]), statements(turns[0]).tokens)
    assert not restates(turns[0], set(), set())


def _at(i: int, minutes: float, entities: tuple[str, ...] = ()) -> Memory:
    m = row(i, TURNS[i % len(TURNS)])
    start = datetime(2023, 5, 1, tzinfo=UTC).timestamp()
    return replace(m, t_valid=start + minutes * 60, entity_ids=entities)


def test_a_group_never_spans_a_long_pause_nor_disjoint_entities() -> None:
    gap = SESSION_GAP_SECONDS / 60
    sessions = [_at(0, 0), _at(1, 5), _at(2, 5 + gap + 1), _at(3, 10 + gap)]
    groups = consolidation_groups(sessions, created_before=CUTOFF, summaries=frozenset())
    assert [[m.memory_id for m in ms] for _, ms in groups] == [["m0", "m1"], ["m2", "m3"]]
    # observations of three entities from one memory-server file, and two that name two
    observations = [
        *(_at(i, 0, (e,)) for i, e in enumerate(("alice", "bob", "alice"))),
        _at(3, 0, ("bob", "carol")), _at(4, 0, ("carol",)), _at(5, 0, ("bob",)),
    ]  # fmt: skip
    groups = consolidation_groups(observations, created_before=CUTOFF, summaries=frozenset())
    assert [[m.memory_id for m in ms] for _, ms in groups] == [["m0", "m2"], ["m1", "m3", "m5"]]
    for _, members in groups:
        assert all(set(a.entity_ids) & set(b.entity_ids) for a in members for b in members)
    plain_and_named = [_at(0, 0), _at(1, 1, ("orca",)), _at(2, 2), _at(3, 3, ("orca",))]
    groups = consolidation_groups(plain_and_named, created_before=CUTOFF, summaries=frozenset())
    assert [[m.memory_id for m in ms] for _, ms in groups] == [["m0", "m2"], ["m1", "m3"]]
