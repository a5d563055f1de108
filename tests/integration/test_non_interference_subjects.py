"""Non-interference for subject resolution: another agent's private subject spelling
changes nothing the other agent sees.

A fact's subject is an entity; a private fact's subject spelling (a new entity, or an alias
of a shared one: ``billing-svc`` of ``billing service``) carries alice's scope. Bob must not
resolve through it, supersede by it, be flagged by it (contradictions, possible conflicts),
count or list it. The machinery is :mod:`tests.integration.test_non_interference`'s (two real
homes, one where alice acted, bob's answers compared); this file adds the generators that
make alice and bob spell subjects the ways agents do (with notes that tell of a change), and
the surfaces that show subjects.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.integration.test_non_interference import Canon, Home, homes  # noqa: F401

#: Spellings of a few subjects: the same (abbreviations, numeronyms, hyphens), possibly the
#: same (a head word dropped) and siblings.
SUBJECTS = [
    "billing service", "billing-svc", "billing svc", "billing", "billing database",
    "staging database", "staging db", "production db", "k8s cluster", "kubernetes cluster",
    "auth gateway", "auth-gw", "authentication gateway", "billing page", "Billing UI",
]  # fmt: skip
#: Notes that tell of a change (a word of change, the old value named): news under a new name
#: is flagged against a subject sharing a modifier (``billing page`` / ``Billing UI``).
NOTES = [None, "moved off team Nova last week", "reorg: Atlas split up"]
#: Wordings of one relation (where it runs) that only the slot rules put together.
PREDICATES = ["owner", "is owned by", "hosted on", "version", "runs on", "lives on", "host"]
OBJECTS = ["team Atlas", "Nova", "team Nova", "pg-stage-02", "pg-stage-03", "1.29", "1.30",
           "k8s-node-07", "k8s-node-12"]  # fmt: skip


@st.composite
def _fact(draw: st.DrawFn, visibility: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {
        "subject": draw(st.sampled_from(SUBJECTS)),
        "predicate": draw(st.sampled_from(PREDICATES)),
        "object": draw(st.sampled_from(OBJECTS)),
    }
    note = draw(st.sampled_from(NOTES))
    if note is not None:
        args["content"] = note
    if visibility is not None:
        args["visibility"] = visibility
    return args


ALICE_CALLS: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    "store a fact with her spelling": _fact("private").map(lambda a: ("store", a)),
    # Her private fact and one of bob's both hold (a facts.differ she may make).
    "say her fact differs": st.builds(
        lambda k, j: ("confirm", {"ids": [f"@alice:{k}"], "differs_from": f"@bob:{j}"}),
        st.integers(0, 5),
        st.integers(0, 5),
    ),
    # Two of her private facts both hold: a facts.differ between private facts only.
    "say two of hers differ": st.builds(
        lambda k, j: ("confirm", {"ids": [f"@alice:{k}"], "differs_from": f"@alice:{j}"}),
        st.integers(0, 5),
        st.integers(0, 5),
    ),
    # Settling by replacement: her private fact replaces her own (a supersede bob cannot
    # see), or tries to replace bob's (refused: a private fact never ends a shared one).
    "settle by replacing": st.builds(
        lambda k, who, j: ("confirm", {"ids": [f"@alice:{k}"], "supersedes": f"@{who}:{j}"}),
        st.integers(0, 5),
        st.sampled_from(["alice", "bob"]),
        st.integers(0, 5),
    ),
}

BOB_CALLS: dict[str, st.SearchStrategy[tuple[str, dict[str, Any]]]] = {
    "store a fact": st.one_of(_fact(None), _fact("shared")).map(lambda a: ("store", a)),
    "recall a subject": st.builds(
        lambda subject, entities: (
            "recall",
            {
                "query": f"who owns {subject}",
                "limit": 100,
                **({"entities": [subject]} if entities else {}),
            },
        ),
        st.sampled_from(SUBJECTS),
        st.booleans(),
    ),
    "resource entity": st.sampled_from(SUBJECTS).map(
        lambda name: ("resource", {"uri": f"ferrex://entity/{name}"})
    ),
    "dashboard entity": st.sampled_from(SUBJECTS).map(
        lambda name: ("dashboard", {"view": "entity", "name": name, "offset": 0})
    ),
    "dashboard entities": st.just(("dashboard", {"view": "entities", "prefix": ""})),
    "reflect": st.just(("reflect", {"limit": 100})),
    "stats": st.booleans().map(lambda d: ("stats", {"detailed": d})),
    "resource stats": st.just(("resource", {"uri": "ferrex://stats"})),
    # A merge re-examines both subjects' facts he sees (new possible conflicts, never a pair
    # said to both hold); alice's private spellings and facts must change none of it.
    "merge two subjects": st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(SUBJECTS)).map(
        lambda ab: ("entity", {"action": "merge", "first": ab[0], "second": ab[1]})
    ),
    # His settling: two of his facts both hold, or one of his names alice's (unknown to him).
    "say his facts differ": st.builds(
        lambda k, who, j: ("confirm", {"ids": [f"@bob:{k}"], "differs_from": f"@{who}:{j}"}),
        st.integers(0, 5),
        st.sampled_from(["bob", "bob", "alice"]),
        st.integers(0, 5),
    ),
    "settle his by replacing": st.builds(
        lambda k, j: ("confirm", {"ids": [f"@bob:{k}"], "supersedes": f"@bob:{j}"}),
        st.integers(0, 5),
        st.integers(0, 5),
    ),
}

_examples = itertools.count()

step = st.one_of(
    *(s.map(lambda c: ("alice", *c)) for s in ALICE_CALLS.values()),
    *(s.map(lambda c: ("bob", *c)) for s in BOB_CALLS.values()),
)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])  # fmt: skip
@given(steps=st.lists(step, min_size=2, max_size=12))
# Alice's private alias of a shared subject: bob's next fact under that spelling must
# neither supersede the shared one nor resolve to it.
@example(
    steps=[
        ("bob", "store", {"subject": "billing service", "predicate": "owner",
                          "object": "team Atlas", "visibility": "shared"}),
        ("alice", "store", {"subject": "billing-svc", "predicate": "owner", "object": "Nova",
                            "visibility": "private"}),
        ("bob", "store", {"subject": "billing-svc", "predicate": "owner", "object": "team Zed",
                          "visibility": "shared"}),
        ("bob", "recall", {"query": "who owns billing-svc", "limit": 100}),
        ("bob", "resource", {"uri": "ferrex://entity/billing-svc"}),
        ("bob", "reflect", {"limit": 100}),
    ]
)  # fmt: skip
# Alice's private host in other words than bob's: flagged for her only, and her saying
# that it differs clears nothing bob sees.
@example(
    steps=[
        ("bob", "store", {"subject": "auth gateway", "predicate": "runs on",
                          "object": "k8s-node-07"}),
        ("alice", "store", {"subject": "auth-gw", "predicate": "lives on",
                            "object": "k8s-node-12", "visibility": "private"}),
        ("bob", "store", {"subject": "auth gateway", "predicate": "host",
                          "object": "k8s-node-12"}),
        ("alice", "confirm", {"ids": ["@alice:0"], "differs_from": "@bob:0"}),
        ("bob", "recall", {"query": "where does auth gateway run", "limit": 100}),
        ("bob", "reflect", {"limit": 100}),
    ]
)  # fmt: skip
# A possible conflict only alice's private fact would raise.
@example(
    steps=[
        ("bob", "store", {"subject": "billing service", "predicate": "owner",
                          "object": "team Atlas"}),
        ("alice", "store", {"subject": "billing", "predicate": "owner", "object": "Nova",
                            "visibility": "private"}),
        ("bob", "store", {"subject": "billing", "predicate": "owner", "object": "Nova"}),
        ("bob", "recall", {"query": "who owns billing", "limit": 100}),
        ("bob", "stats", {"detailed": True}),
    ]
)  # fmt: skip
# Bob merges two subjects: the merge puts his two hosts in one slot (flagged in both homes),
# and alice's private host on one of them, which she stored under his spelling, must neither
# be flagged against his nor change his flags.
@example(
    steps=[
        ("bob", "store", {"subject": "billing service", "predicate": "runs on",
                          "object": "k8s-node-07", "visibility": "shared"}),
        ("bob", "store", {"subject": "billing database", "predicate": "lives on",
                          "object": "k8s-node-03", "visibility": "shared"}),
        ("alice", "store", {"subject": "billing database", "predicate": "hosted on",
                            "object": "k8s-node-12", "visibility": "private"}),
        ("alice", "store", {"subject": "billing service", "predicate": "host",
                            "object": "k8s-node-12", "visibility": "private"}),
        ("bob", "entity", {"action": "merge", "first": "billing service",
                           "second": "billing database"}),
        ("bob", "recall", {"query": "who owns billing service", "limit": 100}),
        ("bob", "reflect", {"limit": 100}),
        ("bob", "stats", {"detailed": False}),
    ]
)  # fmt: skip
# Bob says two of his facts both hold, then merges their subjects: no flag for that pair,
# whatever alice stored privately under either spelling or said of his facts.
@example(
    steps=[
        ("bob", "store", {"subject": "billing service", "predicate": "runs on",
                          "object": "k8s-node-07", "visibility": "shared"}),
        ("bob", "store", {"subject": "billing", "predicate": "lives on",
                          "object": "k8s-node-12", "visibility": "shared"}),
        ("bob", "confirm", {"ids": ["@bob:1"], "differs_from": "@bob:0"}),
        ("alice", "store", {"subject": "billing", "predicate": "host", "object": "k8s-node-07",
                            "visibility": "private"}),
        ("alice", "confirm", {"ids": ["@alice:0"], "differs_from": "@bob:0"}),
        ("bob", "entity", {"action": "merge", "first": "billing service", "second": "billing"}),
        ("bob", "recall", {"query": "who owns billing service", "limit": 100}),
        ("bob", "reflect", {"limit": 100}),
    ]
)  # fmt: skip
def test_bob_cannot_tell_alice_spelt_a_subject_privately(
    homes: tuple[Home, Home],  # noqa: F811
    steps: list[tuple[str, str, dict[str, Any]]],
) -> None:
    acted, control = homes
    acted.fresh()
    control.fresh()
    namespace = f"nis-{next(_examples)}"
    seen_with, seen_without = Canon(), Canon()
    for who, tool, args in steps:
        if who == "alice":
            acted.call("alice", tool, args, namespace, acted.stored["alice"])
            continue
        alice_ids = acted.stored["alice"]
        with_alice = acted.call("bob", tool, args, namespace, alice_ids)
        without = control.call("bob", tool, args, namespace, alice_ids)
        assert seen_with(with_alice) == seen_without(without), (tool, args)
