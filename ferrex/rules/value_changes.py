"""Whether a new value of a relation surely replaces the current one (:func:`replaces_value`),
and how a fact is told as news of a change (:func:`told_as_news`, :func:`note_names`).

The shapes and words these read are :mod:`ferrex.rules.slots`'s: values a thing has one of at a
time (a version, a duration, a time of day, a count), two people or teams, a one-value
attribute (:func:`ferrex.rules.slots.single_slot`), a word of change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from ferrex.rules.dedup import measure_unit
from ferrex.rules.kinds import NAME_WORD, object_kind
from ferrex.rules.predicates import ADDED_WORDS, FUNCTION_WORDS, PLACE_PREPOSITIONS, phrase_words
from ferrex.rules.slots import (
    CHANGE_WORDS,
    COUNT,
    SINGLE_KINDS,
    VALUE_WORDS,
    content_words,
    range_relation,
    same_head,
    single_slot,
    value_predicate,
    version_name,
    versions_of_one,
)


def told_as_news(predicate: str, content: str | None, *, dated: bool) -> bool:
    """Whether a fact is told as news of a change, by the agent's own wording in time: a
    start it gives (``valid_from``: the fact began then, so something else may have ended),
    a word of change in its predicate (``moved to``, ``upgraded to``: :data:`CHANGE_WORDS`)
    or in the note stored with it (``migrated off Vercel this morning``, or a noun of change:
    ``migration finished``, :data:`CHANGE_NOUNS`). Such a fact is
    weighed against the facts of subjects that only *may* be its own
    (:func:`ferrex.rules.subjects.news_alike`) and flagged, never superseding."""
    if dated or any(w in CHANGE_WORDS for w in predicate.split("_")):
        return True
    words = re.findall(r"[a-z]+", (content or "").casefold())
    return any(w in CHANGE_WORDS or w in CHANGE_NOUNS for w in words)


#: Nouns of a change a note may tell it by ("migration finished", "after the cutover",
#: "region move done", "team rename"). Not ``change`` itself: a name as often (Change
#: Healthcare) as a word of one, and "no change" says none.
CHANGE_NOUNS: Final = frozenset(
    {"migration", "cutover", "switchover", "changeover", "move", "switch", "rename", "upgrade"}
    | {"reorg", "handover", "handoff", "replacement", "relocation", "rewrite", "swap"}
)


def told_as_past(predicate: str) -> bool:
    """Whether a normalized predicate says its value no longer holds: ``used_to_use``,
    ``previously_provided_by``, ``formerly_hosted_on``, ``former_owner``, ``ran_postgres``.
    Such a fact is history beside the subject's fact of that slot that began after it."""
    words = predicate.split("_")
    if any(w in PAST_WORDS for w in words) or words[0] in PAST_VERBS:
        return True
    return any(words[i : i + 2] == ["used", "to"] for i in range(len(words) - 1))


def told_as_added(predicate: str) -> bool:
    """Whether a predicate as the agent wrote it tells a value one more beside those the
    relation holds (``also accepts from``, ``is also deployed in``, ``additionally
    supports``): the words of :data:`ferrex.rules.predicates.ADDED_WORDS`, which its
    normalized form drops, and no word stating a value anew (:data:`ferrex.rules.slots.
    VALUE_WORDS`, the words of change among them: ``also moved to`` tells a change). Such a
    value is kept beside the others, never a change of them."""
    words = phrase_words(predicate)
    return (any(w in ADDED_WORDS for w in words) and any(w not in FUNCTION_WORDS for w in words)
            and not any(w in VALUE_WORDS for w in words))  # fmt: skip


#: Words that put a relation in the past (``previously``, ``formerly``, ``originally``).
PAST_WORDS: Final = frozenset(
    {"previously", "formerly", "former", "earlier", "originally", "initially"}
)

#: Verbs whose form says past and nothing else, opening a predicate (``ran_postgres``,
#: ``ran_on``). Not the ``-ed`` forms: ``hosted_on``, ``owned_by`` are states that hold now.
#: Not ``was``/``were``: they state a value, as ``is`` does
#: (:func:`ferrex.rules.slots.value_predicate`).
PAST_VERBS: Final = frozenset({"ran", "had", "lived"})


def replaces_value(predicate: str, obj: str, old: str, content: str | None, *, dated: bool) -> bool:
    """Whether a new value of a subject's relation surely replaces a current one of the same
    relation (single-valued, another object), rather than standing beside it. Sure when the
    relation holds one value at a time by the objects' shape (two values of a kind a thing
    has one of, :data:`SINGLE_KINDS`, or times of day; two quantities or counts, ``30`` /
    ``50 nodes``; one named thing at two versions, :func:`versions_of_one`), between two
    people or teams (a relation of many people is plural by its words: :func:`plural_fact`),
    or when the new fact is told as news of a change (:func:`told_as_news`: a start given,
    a word of change in its predicate or note). Two names (``Leeds`` / ``Lisbon``, two tables, two
    languages, two host names) stated without either are as likely one value more of a
    relation of many (offices, inputs, languages, cluster nodes) as a change: both are kept
    and flagged, and the agent settles which."""
    # Two named things (``react 18.2.0`` / ``vite 5.0.10``), two counts of two things (``2
    # GPUs`` / ``64 cores``) or two versions of a relation of a range (``supports iOS 16``)
    # are no one value at a time.
    two_things = (version_names_differ(obj, old) or counts_of_two(obj, old)
                  or range_relation(predicate) or per_apart(obj, old))  # fmt: skip
    if not two_things and ((_one_at_a_time(obj) and _one_at_a_time(old))
                           or versions_of_one(obj, old)):  # fmt: skip
        return True
    # Two people or teams: sure only where the relation is a role one holds at a time
    # (``owner``, ``led by``, ``manager``, ``on call``); people use, share, attend, build,
    # request or sign off one thing many at a time (``used by``, ``signed off by``).
    if (
        _party(obj)
        and _party(old)
        and "party" in (object_kind(obj), object_kind(old))
        and one_holder(predicate)
    ):
        return True  # the relation's plural roles (members, reviewers) are plural_fact's
    return single_slot(predicate) or told_as_news(predicate, content, dated=dated)


def one_holder(predicate: str) -> bool:
    """Whether a normalized predicate names a role one person or team holds at a time: a
    word of :data:`ONE_HOLDER_WORDS` or starting with one of :data:`ONE_HOLDER_ROOTS`
    (``owner``, ``owned_by``, ``maintained_by``, ``tech_lead``, ``reports_to``,
    ``assigned_to``), ``on call``, or a one-value attribute
    (:func:`ferrex.rules.slots.single_slot`)."""
    words = predicate.split("_")
    if single_slot(predicate) or ("on" in words and "call" in words) or "oncall" in words:
        return True
    return any(w in ONE_HOLDER_WORDS or w.startswith(ONE_HOLDER_ROOTS)
               for w in content_words(predicate))  # fmt: skip


#: Starts of words naming a role one person or team holds at a time (``owner``,
#: ``managed``, ``maintainer`` as written is :data:`ferrex.rules.slots.PLURAL_ROLES`').
ONE_HOLDER_ROOTS: Final = (
    "own", "lead", "manag", "maintain", "responsib", "assign", "captain", "chair",
    "steward", "supervis", "administ", "escalat", "director", "custodian", "belong",
)  # fmt: skip
#: Whole words naming such a role.
ONE_HOLDER_WORDS: Final = frozenset(
    {"led", "head", "headed", "reports", "reporting", "dri", "pm", "em", "vp", "cto", "ceo"}
    | {"team", "admin", "contact", "boss", "handled", "run", "driver", "keeper", "approver"}
)


def per_apart(obj: str, old: str) -> bool:
    """Whether two amounts of money are per two different units (``$10/month`` /
    ``$100/year``): two prices, both may hold."""
    if object_kind(obj) != "money" or object_kind(old) != "money":
        return False
    a, b = _PER.search(obj.casefold()), _PER.search(old.casefold())
    return a is not None and b is not None and a.group(1) != b.group(1)


_PER = re.compile(r"(?:/|\bper\s+|\ba\s+)\s*([a-z]+)\s*$")


def version_names_differ(obj: str, old: str) -> bool:
    """Whether two objects are versions of two named things (``react 18.2.0`` / ``vite
    5.0.10``)."""
    a, b = version_name(obj), version_name(old)
    return a is not None and b is not None and a != b


def _party(obj: str) -> bool:
    """A person or team (:func:`object_kind`), or a bare capitalised name beside one
    (``Nova`` beside ``team Atlas``)."""
    return object_kind(obj) == "party" or bool(NAME_WORD.match(obj.strip()))


def _one_at_a_time(obj: str) -> bool:
    text = obj.strip()
    return object_kind(text) in SINGLE_KINDS or bool(COUNT.match(text) or _CLOCK.match(text))


# A time of day (``02:00 UTC``, ``9:30 pm``): like a date, one at a time.
_CLOCK = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?|[a-z]{2,4})?$", re.IGNORECASE)


def note_names(content: str | None, obj: str, *, besides: Sequence[str] = ()) -> bool:
    """Whether the note stored with a new fact names another fact's object (``reorg: growth
    squad split`` names ``growth squad``; ``dropped redis for sessions`` names ``Redis 6 on
    ElastiCache``): a word of four letters or more of that object, other than the
    ``besides`` words (the subjects' own), is a word of the note, or a name of three
    capitalised words is there by its initials (``FCM quota issues``). A fact whose note names
    the value it replaces is told as news of a change to that fact."""
    words = set(re.findall(r"[a-z][a-z0-9]+", (content or "").casefold()))
    if not words:
        return False
    skip = {w.casefold() for w in besides}
    own = re.findall(r"[a-z][a-z0-9]+", obj.casefold())
    if any(len(w) >= 4 and w in words and w not in skip and w not in FUNCTION_WORDS for w in own):
        return True
    # A name of three capitalised words or more by its initials, in capitals (``FCM`` for
    # ``Firebase Cloud Messaging``).
    names = obj.split()
    if len(names) < 3 or not all(w[:1].isupper() for w in names):
        return False
    initials = "".join(w[0] for w in names)
    found = re.search(rf"\b{initials}\b", content or "")
    return found is not None and initials.casefold() not in skip


_FROM_TO: Final = re.compile(
    r"\bfrom\b(?P<old>.+?)(?:\bto\b|\binto\b|->|\u2192|=>)(?P<new>.+)", re.I
)
_ARROW: Final = re.compile(r"(?P<old>.+?)(?:->|\u2192|=>)(?P<new>.+)")


_LEFT: Final = re.compile(
    r"\b(?:moved off|migrated off|switched off|off of|away from|left|dropped|ditched|retired|"
    r"replaced|sunset|decommissioned)\s+(?:(?:the|our|an?|its|their|old)\s+){0,2}(?P<old>[^\s,;.]+)",
    re.I,
)


def _left(content: str | None, old_object: str) -> bool:
    """Whether the word right after a word of leaving (an article aside) is a word of the
    old value as written: ``dropped Zendesk``, not ``replaced the Redis-based queue``."""
    found = re.findall(r"[\w.+-]+", old_object) + re.findall(r"[\w+-]+", old_object)
    words = {w.casefold() for w in found if len(w) >= 3}  # Moment.js, and Moment
    return any(m.group("old").casefold() in words for m in _LEFT.finditer(content or ""))


def note_tells_change(content: str | None, new_object: str, old_object: str) -> bool:
    """Whether the note stored with a new fact tells the change from another fact's value to
    its own: the old value named between ``from`` and ``to`` (or before an arrow) and the new
    one after it ("moved checkout events from RabbitMQ to Kafka", "RabbitMQ -> Kafka"), each
    named as :func:`note_names` reads a name, or the old value named in the few words after
    a word of leaving it ("moved off Fargate", "we dropped Zendesk", "replaced Airflow with
    Dagster"). A note that names both values in another order ("SQS replaced the
    Redis-based queue") tells no more than that both are in play."""
    if _left(content, old_object):
        return True
    for pattern in (_FROM_TO, _ARROW):
        found = pattern.search(content or "")
        if (
            found is not None
            and note_names(found.group("old"), old_object)
            and note_names(found.group("new"), new_object)
        ):
            return True
    return False


def names_apart(new_predicate: str, new_object: str, old_predicate: str, old_object: str) -> bool:
    """Whether one fact's value names a thing (``Django 5.0``, ``React 18.3.1``) that the
    other fact names nowhere while naming something (``python_version | 3.11``,
    ``node_version | 20.11.0``): the versions of two things, never surely one slot. A
    value naming no thing (``upgraded_to | 8.15.1``) or a fact naming nothing but a change
    (``upgraded_to``) is not apart."""
    sides = ((new_object, old_predicate, old_object), (old_object, new_predicate, new_object))
    for obj, other_predicate, other_object in sides:
        name = version_name(obj)
        if name is None:
            continue
        theirs = {w for w in content_words(other_predicate) if w not in VALUE_WORDS}
        other_name = version_name(other_object)
        if other_name is not None:
            theirs |= set(other_name.split())
        if theirs and not set(name.split()) & theirs:
            return True
    return False


def suffixed_versions(left: str, right: str) -> bool:
    """Whether two values are one name with another version written onto it
    (``payment-gateway-v1`` / ``payment-gateway-v2``, ``api_v2`` / ``api_v3``): the same stem,
    then ``v`` and different numbers. No plain second value: under a plainly plural
    relation (``calls``) it is a change, as ``react 18`` / ``react 19`` is, and replaces the
    old version, the answer saying how to keep both; elsewhere it is not sure enough to
    replace by itself (a service may call two versions while it moves), and is flagged."""
    a, b = _SUFFIXED.match(left.strip()), _SUFFIXED.match(right.strip())
    if a is None or b is None:
        return False
    return a.group(1).casefold() == b.group(1).casefold() and a.group(2) != b.group(2)


_SUFFIXED = re.compile(r"^([A-Za-z][\w.-]*?[A-Za-z])[-_ ]v(\d+(?:\.\d+)*)$", re.IGNORECASE)


def one_of_many_held(predicate: str, obj: str) -> bool:
    """Whether a predicate says the subject holds one of several things of a kind, placed or
    set up (``has depot in``, ``has a PoP in``, ``has extension installed``): ``has`` and a
    noun, then a place preposition or a participle. Another value is one more such thing, not
    a move. Not a thing one has one of (``has HQ in``, ``has its main office in``), nor a
    value of a kind held one at a time (:data:`ferrex.rules.slots.SINGLE_KINDS`: a version)."""
    words = phrase_words(predicate)
    if len(words) < 3 or words[0] not in ("has", "have") or _ONE_HELD & set(words):
        return False
    if object_kind(obj) in SINGLE_KINDS:
        return False
    nouns = [w for w in words[1:-1] if w not in ("a", "an", "some", "several", "many")]
    last = words[-1]
    return 1 <= len(nouns) <= 2 and (last in PLACE_PREPOSITIONS or last.endswith("ed"))


_ONE_HELD: Final = frozenset(
    {"its", "their", "his", "her", "main", "primary", "head", "headquarters", "hq", "home",
     "registered", "only", "default", "current", "one"}
)  # fmt: skip


def counted(obj: str) -> bool:
    """Whether an object is a count of something named (``12 workers``)."""
    return _COUNTED.match(obj.strip()) is not None


def counts_of_two(left: str, right: str) -> bool:
    """Whether two counts count two different things (``2 GPUs`` / ``64 cores``): each a
    number followed by a noun of three letters or more, the nouns of other roots. A bare
    number, a unit (``4k``) or the same noun (``30 nodes`` / ``50 nodes``) is one count,
    and a unit of time or size (``30 minutes`` / ``1800 seconds``) counts no thing at all
    (:func:`ferrex.rules.dedup.measure_unit`)."""
    a, b = _COUNTED.match(left.strip()), _COUNTED.match(right.strip())
    if a is None or b is None or measure_unit(a.group(1)) or measure_unit(b.group(1)):
        return False
    return not same_head(a.group(1).casefold(), b.group(1).casefold())


def count_named_apart(
    new_predicate: str, new_object: str, old_predicate: str, old_object: str
) -> bool:
    """Whether a count told with a predicate naming no slot (``increased_to | 8 workers``)
    counts a thing the other fact's slot does not name (``batch_size | 500``): its noun
    shares no root with the other predicate's words."""
    for predicate, obj, other in ((new_predicate, new_object, old_predicate),
                                  (old_predicate, old_object, new_predicate)):  # fmt: skip
        found = _COUNTED.match(obj.strip())
        if found is None or not value_predicate(predicate):
            continue
        if content_words(other) and not same_head(found.group(1).casefold(), other):
            return True
    return False


_COUNTED = re.compile(r"^[~<>=]*\d[\d.,_]*\s*[a-z%]{0,3}\s+([a-z]{3,})$", re.IGNORECASE)
