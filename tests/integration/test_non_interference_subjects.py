"""Non-interference for subject resolution: another agent's private subject spelling
changes nothing the other agent sees.

A fact's subject is an entity; a private fact's subject spelling (a new entity, or an alias
of a shared one: ``billing-svc`` of ``billing service``) carries alice's scope. Bob must not
resolve through it, supersede by it, be flagged by it (contradictions, possible conflicts),
count or list it. The machinery is :mod:`tests.integration.test_non_interference`'s (two real
homes, one where alice acted, bob's answers compared); this file adds the generators that
make alice and bob spell subjects the ways agents do, and the surfaces that show subjects.
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
    "auth gateway", "auth-gw", "authentication gateway",
]  # fmt: skip
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
    "stats": st.just(("stats", {"detailed": True})),
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
