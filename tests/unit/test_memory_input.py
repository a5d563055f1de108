"""Store requests: type detection, cleaning, and every way a request is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.errors import UsageError
from ferrex.rules.memory_input import (
    DEFAULT_LIMITS,
    Limits,
    StoreRequest,
    ValidStore,
    detect_type,
    validate,
)
from ferrex.rules.store_fields import parse_time

TRIPLE: dict[str, Any] = {"subject": "api", "predicate": "depends on", "object": "tokio"}
PROCEDURE: dict[str, Any] = {"name": "deploy", "steps": ("build", "ship")}


def refused(req: StoreRequest, limits: Limits = DEFAULT_LIMITS, **kwargs: Any) -> UsageError:
    with pytest.raises(UsageError) as caught:
        validate(req, limits, **kwargs)
    error = caught.value
    assert error.code == "invalid_input"
    assert error.hint
    return error


# --- detect_type ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"content": "deployed"}, "episodic"),
        ({}, "episodic"),
        (TRIPLE, "semantic"),
        ({**TRIPLE, "content": "the API uses tokio"}, "semantic"),
        ({"subject": "api"}, "semantic"),  # partial: so the error names what is missing
        (PROCEDURE, "procedural"),
        ({"conditions": ("on friday",)}, "procedural"),
        ({"name": "deploy"}, "procedural"),
        ({**TRIPLE, "steps": ("a",)}, "semantic"),  # a full triple comes first
        ({"subject": "api", "steps": ("a",)}, "procedural"),
        ({"content": "x", "type": "semantic"}, "semantic"),  # an explicit type wins
        ({**TRIPLE, "type": " Episodic "}, "episodic"),
        ({"content": "x", "type": "fact"}, "episodic"),  # an unknown type is not a type
        ({"steps": []}, "episodic"),  # an empty list is no steps
    ],
)
def test_detect_type(fields: dict[str, Any], expected: str) -> None:
    assert detect_type(StoreRequest(**fields)) == expected


# --- what comes out ---------------------------------------------------------------------------


def test_an_episodic_memory_is_cleaned() -> None:
    valid = validate(
        StoreRequest(
            content="  deployed v2\r\nto prod\t(EU)  ",
            entities=(" Tokio ", "tokio", "Redis", "TOKIO"),
            source=" slack ",
            namespace=" team-a ",
            confidence=1,
            context={"ticket": ("INC-1", 2)},
            supersedes=" m_123 ",
            visibility=" Private ",
            agent_id="agent-7",
        )
    )
    assert valid == ValidStore(
        type="episodic",
        content="deployed v2\nto prod\t(EU)",
        subject=None,
        predicate=None,
        object=None,
        confidence=1.0,
        source="slack",
        entities=("Tokio", "Redis"),
        context={"ticket": ["INC-1", 2]},
        supersedes="m_123",
        namespace="team-a",
        t_valid=None,
        name=None,
        conditions=(),
        steps=(),
        agent_id="agent-7",
        visibility="private",
    )
    assert isinstance(valid.confidence, float)


def test_a_semantic_memory_keeps_its_triple_and_optional_content() -> None:
    valid = validate(StoreRequest(**TRIPLE, content=" the API uses tokio ", confidence=0.5))
    assert (valid.type, valid.subject, valid.predicate, valid.object) == (
        "semantic",
        "api",
        "depends on",
        "tokio",
    )
    assert valid.content == "the API uses tokio"
    assert valid.confidence == 0.5


def test_a_procedural_memory_keeps_its_steps_in_order() -> None:
    valid = validate(
        StoreRequest(name=" deploy ", steps=(" build ", "test", "ship"), conditions=("on main",))
    )
    assert valid.type == "procedural"
    assert valid.name == "deploy"
    assert valid.steps == ("build", "test", "ship")
    assert valid.conditions == ("on main",)


def test_the_context_is_a_copy() -> None:
    context: dict[str, Any] = {"a": {"b": [1]}}
    valid = validate(StoreRequest(content="x", context=context))
    assert valid.context == context
    assert valid.context is not context
    assert valid.context is not None
    assert valid.context["a"] is not context["a"]


@pytest.mark.parametrize(
    ("valid_from", "expected"),
    [
        ("2024-05-01T09:00:00Z", datetime(2024, 5, 1, 9, tzinfo=UTC)),
        (" 2024-05-01T11:00:00+02:00 ", datetime(2024, 5, 1, 9, tzinfo=UTC)),
        ("2024-05-01T09:00:00.250+00:00", datetime(2024, 5, 1, 9, 0, 0, 250000, tzinfo=UTC)),
        (
            datetime(2024, 5, 1, 4, tzinfo=timezone(timedelta(hours=-5))),
            datetime(2024, 5, 1, 9, tzinfo=UTC),
        ),
        (None, None),
    ],
)
def test_valid_from_becomes_utc(valid_from: datetime | str | None, expected: datetime) -> None:
    t_valid = validate(StoreRequest(content="x", valid_from=valid_from)).t_valid
    assert t_valid == expected
    if t_valid is not None:
        assert t_valid.tzinfo is UTC


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        # the type
        ({"content": "x", "type": "fact"}, "type 'fact' is not a memory type"),
        ({"content": "x", "type": 3}, "type 3 is not a memory type"),
        # what the type needs
        ({}, "an episodic memory needs content; missing: content"),
        (
            {"subject": "api"},
            "a semantic memory needs subject, predicate and object; missing: predicate and object",
        ),
        (
            {"subject": "api", "object": "tokio"},
            "a semantic memory needs subject, predicate and object; missing: predicate",
        ),
        (
            {"type": "semantic", "content": "x"},
            "a semantic memory needs subject, predicate and object; "
            "missing: subject, predicate and object",
        ),
        (
            {"name": "deploy"},
            "a procedural memory needs a name and at least one step; missing: steps",
        ),
        (
            {"steps": ("build",)},
            "a procedural memory needs a name and at least one step; missing: name",
        ),
        (
            {"type": "procedural", "content": "x"},
            "a procedural memory needs a name and at least one step; missing: name and steps",
        ),
        # fields of another type
        (
            {**TRIPLE, "steps": ("a",)},
            "steps is only for procedural memories, but this is a semantic memory",
        ),
        (
            {"type": "episodic", "content": "x", "subject": "a", "predicate": "b"},
            "subject and predicate are only for semantic memories, but this is an episodic memory",
        ),
        (
            {**PROCEDURE, "subject": "api"},
            "subject is only for semantic memories, but this is a procedural memory",
        ),
        # empty text
        ({"content": "   "}, "content is empty"),
        ({"content": "\u200b\u200b\u200b"}, "content is empty: it holds only invisible"),
        ({"content": "x", "entities": ("tokio", "\u2060\ufeff ")}, "entities[1] is empty"),
        ({**TRIPLE, "subject": "\u200e\u200d"}, "subject is empty: it holds only invisible"),
        ({"content": "x", "source": ""}, "source is empty"),
        ({**TRIPLE, "predicate": " \n "}, "predicate is empty"),
        ({"content": "x", "entities": ("tokio", " ")}, "entities[1] is empty"),
        ({"name": "deploy", "steps": ("build", "")}, "steps[1] is empty"),
        ({"content": "x", "namespace": ""}, "namespace is empty"),
        # wrong shapes
        ({"content": 42}, "content must be a string, got int"),
        ({"content": "x", "entities": "tokio"}, "entities must be a list of strings, got str"),
        ({"name": "deploy", "steps": "build"}, "steps must be a list of strings, got str"),
        ({"content": "x", "entities": (1,)}, "entities[0] must be a string, got int"),
        # control characters
        ({"content": "bell\x07"}, "content contains the control character U+0007 at character 4"),
        ({"content": "nul\x00here"}, "content contains the control character U+0000"),
        ({"content": "x", "source": "a\x1bb"}, "source contains the control character U+001B"),
        ({**TRIPLE, "predicate": "depends\non"}, "predicate contains the control character U+000A"),
        ({"content": "x", "entities": ("to\tkio",)}, "entities[0] contains the control character"),
        ({"content": "x", "namespace": "a\nb"}, "namespace contains the control character U+000A"),
        ({"content": "x", "agent_id": "a\tb"}, "agent_id contains the control character U+0009"),
        ({"content": "x\ud800"}, "content is not valid Unicode"),
        # predicate with nothing to normalize
        ({**TRIPLE, "predicate": "--"}, "predicate '--' has no letters or digits"),
        # confidence
        (
            {"content": "x", "confidence": 1.01},
            "confidence 1.01 is not a finite number from 0 to 1",
        ),
        ({"content": "x", "confidence": -0.0001}, "confidence -0.0001 is not a finite number"),
        ({"content": "x", "confidence": float("nan")}, "confidence nan is not a finite number"),
        ({"content": "x", "confidence": float("inf")}, "confidence inf is not a finite number"),
        ({"content": "x", "confidence": True}, "confidence must be a number, got bool"),
        ({"content": "x", "confidence": "0.5"}, "confidence must be a number, got str"),
        # context
        ({"content": "x", "context": ["a"]}, "context must be a JSON object, got list"),
        ({"content": "x", "context": "{}"}, "context must be a JSON object, got str"),
        ({"content": "x", "context": {1: "a"}}, "context has a key 1 that is not a string"),
        ({"content": "x", "context": {"a": {2: 1}}}, "context.a has a key 2 that is not a string"),
        ({"content": "x", "context": {"a": {1, 2}}}, "context.a is a set, which is not JSON"),
        ({"content": "x", "context": {"a": [float("nan")]}}, "context.a[0] is nan"),
        ({"content": "x", "context": {"a": object()}}, "context.a is a object, which is not JSON"),
        ({"content": "x", "context": {"a": "\udc00"}}, "context.a is not valid Unicode"),
        ({"content": "x", "context": {"n": 2**64}}, "context.n is an integer too large to store"),
        ({"content": "x", "context": {10**5000: 1}}, "context has a key (a int too large to show)"),
        ({"content": "x", "confidence": 10**5000}, "confidence (a int too large to show) is not"),
        ({"content": "x", "type": "x" * 1000}, "type 'xxxxxxxx"),
        # time
        ({"content": "x", "valid_from": "yesterday"}, "valid_from 'yesterday' is not an ISO 8601"),
        ({"content": "x", "valid_from": ""}, "valid_from '' is not an ISO 8601 time"),
        ({"content": "x", "valid_from": "2024-05-01T09:00:00"}, "has no timezone"),
        ({"content": "x", "valid_from": "2024-05-01T09:00"}, "2024-05-01T09:00 has no timezone"),
        ({"content": "x", "valid_from": "2024-13-01"}, "valid_from '2024-13-01' is not an ISO"),
        ({"content": "x", "valid_from": "20240501"}, "valid_from 20240501 has no timezone"),
        ({"content": "x", "valid_from": datetime(2024, 5, 1)}, "has no timezone"),
        ({"content": "x", "valid_from": 1714554000}, "valid_from must be an ISO 8601 time, got"),
        ({"content": "x", "valid_from": "0001-01-01T00:00:00+01:00"}, "is out of range"),
        # visibility
        ({"content": "x", "visibility": "public"}, "visibility 'public' is not private or shared"),
        ({"content": "x", "visibility": 1}, "visibility 1 is not private or shared"),
        # supersedes
        ({"content": "x", "supersedes": " "}, "supersedes is empty"),
        ({"content": "x", "supersedes": "a" * 65}, "supersedes is 65 characters, longer than"),
        ({"content": "x", "supersedes": "m 1"}, "supersedes 'm 1' is not a memory id"),
        ({"content": "x", "supersedes": "m\x001"}, "is not a memory id"),
        ({"content": "x", "supersedes": 12}, "supersedes must be a memory id, got int"),
    ],
)
def test_refusals(fields: dict[str, Any], message: str) -> None:
    assert message in refused(StoreRequest(**fields)).message


def test_bad_input_is_quoted_briefly() -> None:
    error = refused(StoreRequest(content="x", visibility="p" * 10_000))
    assert len(error.message) < 200
    assert "ppp..." in error.message


def test_context_integers_at_the_64_bit_edges_are_allowed() -> None:
    context = {"low": -(2**63), "high": 2**64 - 1}
    assert validate(StoreRequest(content="x", context=context)).context == context


def test_a_refusal_carries_a_hint_that_helps() -> None:
    error = refused(StoreRequest(**TRIPLE, steps=("a",)))
    assert error.hint == "leave steps out, or store it with type procedural"
    error = refused(StoreRequest(content="x", valid_from="2024-05-01T09:00:00"))
    assert error.hint is not None and "2024-05-01T09:00:00Z" in error.hint


SMALL = Limits(
    content_chars=10,
    field_chars=5,
    step_chars=7,
    max_steps=2,
    max_conditions=1,
    max_entities=2,
    max_context_bytes=12,
    source_chars=6,
    namespace_chars=4,
    agent_id_chars=3,
)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": "x" * 11}, "content is 11 characters, longer than the limit of 10"),
        ({**TRIPLE, "subject": "abcdef"}, "subject is 6 characters, longer than the limit of 5"),
        (
            {"subject": "a", "predicate": "uses", "object": "abcdefg"},
            "object is 7 characters, longer than the limit of 5",
        ),
        ({"name": "abcdef", "steps": ("a",)}, "name is 6 characters"),
        ({"name": "d", "steps": ("a", "abcdefgh")}, "steps[1] is 8 characters, longer than"),
        ({"name": "d", "steps": ("a", "b", "c")}, "steps has 3 items, more than the limit of 2"),
        ({"name": "d", "steps": ("a",), "conditions": ("x", "y")}, "conditions has 2 items"),
        ({"name": "d", "steps": ("a",), "conditions": ("abcdef",)}, "conditions[0] is 6"),
        ({"content": "x", "entities": ("abcdef",)}, "entities[0] is 6 characters"),
        ({"content": "x", "entities": ("a", "b", "c")}, "entities has 3 distinct names"),
        ({"content": "x", "source": "abcdefg"}, "source is 7 characters"),
        ({"content": "x", "namespace": "abcde"}, "namespace is 5 characters"),
        ({"content": "x", "agent_id": "abcd"}, "agent_id is 4 characters"),
        ({"content": "x", "context": {"k": "123456"}}, "context is 14 bytes as JSON"),
        ({"content": "x", "context": {"k": "\u00e9\u00e9\u00e9"}}, "context is 14 bytes"),
    ],
)
def test_limits_are_enforced_and_reported(fields: dict[str, Any], message: str) -> None:
    assert message in refused(StoreRequest(**fields), SMALL).message


@pytest.mark.parametrize(
    "fields",
    [
        {"content": "x" * 10},
        {**TRIPLE, "subject": "abcde", "predicate": "uses", "object": "abcde"},
        {"name": "abcde", "steps": ("abcdefg", "b"), "conditions": ("abcde",)},
        {"content": "x", "entities": ("a", "b", "A", "B"), "source": "abcdef"},
        {"content": "x", "namespace": "abcd", "agent_id": "abc"},
        {"content": "x", "context": {"k": "1234"}},  # {"k":"1234"}: exactly 12 bytes
        {"content": "x", "confidence": 0.0},
        {"content": "x", "confidence": 1.0},
        {"content": "x", "supersedes": "a" * 64},
    ],
)
def test_exactly_at_the_limit_is_allowed(fields: dict[str, Any]) -> None:
    validate(StoreRequest(**fields), SMALL)


def test_nested_context_has_a_depth_limit() -> None:
    context: dict[str, Any] = {}
    inner = context
    for _ in range(40):
        inner["a"] = {}
        inner = inner["a"]
    assert (
        "nested deeper than 32 levels"
        in refused(StoreRequest(content="x", context=context)).message
    )


# --- the model's window -----------------------------------------------------------------------


def words(text: str) -> int:
    return len(text.split())


def test_an_episodic_memory_longer_than_the_window_is_refused() -> None:
    error = refused(StoreRequest(content="one two three four"), count_tokens=words, window=3)
    assert error.message == (
        "content is 4 tokens, longer than the model's window of 3; break it into separate events"
    )
    assert error.hint is not None and "split it into several memories" in error.hint


def test_an_episodic_memory_exactly_the_window_is_allowed() -> None:
    validate(StoreRequest(content="one two three"), count_tokens=words, window=3)


def test_an_unknown_token_count_is_not_checked() -> None:
    validate(StoreRequest(content="one two three four"), count_tokens=lambda _: None, window=3)
    validate(StoreRequest(content="one two three four"), count_tokens=words)
    validate(StoreRequest(content="one two three four"), window=3)


def test_semantic_content_and_procedural_steps_are_not_window_checked() -> None:
    long = "one two three four"
    validate(StoreRequest(**TRIPLE, content=long), count_tokens=words, window=3)
    validate(StoreRequest(name="deploy", steps=(long,), content=long), count_tokens=words, window=3)


# --- properties -------------------------------------------------------------------------------

_anything = (
    st.none()
    | st.text(max_size=30)
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.lists(st.text(max_size=5), max_size=3)
)
_texts = st.none() | st.text(max_size=30)
_lists = st.lists(st.text(max_size=10), max_size=4).map(tuple)


@given(
    st.builds(
        StoreRequest,
        type=st.none() | st.sampled_from(["episodic", "semantic", "procedural", "x"]),
        content=_texts,
        subject=_texts,
        predicate=_texts,
        object=_texts,
        confidence=st.floats() | st.integers(-2, 2),
        source=_texts,
        entities=_lists,
        context=st.none() | st.dictionaries(st.text(max_size=5), _anything, max_size=3),
        supersedes=_texts,
        namespace=_texts,
        valid_from=_texts,
        name=_texts,
        conditions=_lists,
        steps=_lists,
        agent_id=_texts,
        visibility=_texts,
    )
)
def test_validate_raises_nothing_but_usage_errors(req: StoreRequest) -> None:
    try:
        valid = validate(req, count_tokens=len, window=20)
    except UsageError as error:
        assert error.code == "invalid_input"
        assert error.message
        assert error.hint
        return
    assert valid.type in ("episodic", "semantic", "procedural")
    assert 0.0 <= valid.confidence <= 1.0
    assert len({e.casefold() for e in valid.entities}) == len(valid.entities)
    for text in (valid.content, valid.subject, valid.predicate, valid.object, valid.name):
        assert text is None or (text == text.strip() and text)


@pytest.mark.parametrize("name", ["valid_from", "after", "before", "as_of"])
def test_a_date_alone_is_that_day_at_midnight_utc(name: str) -> None:
    assert parse_time("2026-11-20", name) == datetime(2026, 11, 20, tzinfo=UTC)
    assert parse_time(" 2026-11-20 ", name) == datetime(2026, 11, 20, tzinfo=UTC)
    with pytest.raises(UsageError, match=f"{name} 2026-11-20T00:00:00 has no timezone"):
        parse_time("2026-11-20T00:00:00", name)


def test_a_stored_date_is_its_event_time() -> None:
    t_valid = validate(StoreRequest(content="x", valid_from="2026-11-20")).t_valid
    assert t_valid == datetime(2026, 11, 20, tzinfo=UTC)
