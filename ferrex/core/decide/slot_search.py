"""Which of a subject's current facts a new fact may fill (step 3 of a store, beside
:mod:`ferrex.core.decide.facts` and :mod:`ferrex.core.decide.weighing`): the rule of
:func:`ferrex.rules.slot_outcomes.slot_match` asked of each fact the guards allow, with the
phrase cosines in one batch, and what is weighed when no slot matched: a fact told as past
beside the current fact it came before, a change told in words beside the fact it most
likely changed, the one fact whose value the note names or tells the change from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ferrex.rules.kinds import kinds_clash, object_kind, shapes_agree
from ferrex.rules.predicates import PREPOSITIONS
from ferrex.rules.slot_outcomes import news_apart, slot_match
from ferrex.rules.slots import (
    VALUE_FLOOR,
    SlotMatch,
    fact_phrase,
    slot_candidate,
    slot_words,
    value_fallback,
)
from ferrex.rules.subjects_apart import relations_apart
from ferrex.rules.value_changes import note_names, note_tells_change, told_as_past
from projections.rows import Memory

from .shared import Measures, cosines_with


def slot_matches(
    obj: str,
    predicate: str,
    others: Sequence[Memory],
    measures: Measures,
    *,
    news: bool = False,
    worded: bool = False,
    note: str | None = None,
    besides: Sequence[str] = (),
) -> list[tuple[Memory, SlotMatch]]:
    """:func:`ferrex.rules.slot_outcomes.slot_match` of a fact (``news``: told as news of a change;
    ``worded``: in its words, not by a start alone) against each of ``others``; the phrase
    cosines asked in one batch, only for the pairs the guards allow. A fact told in words as a
    change that matched no slot is flagged against the fact it most likely changed
    (:func:`_changed_slot`). A ``note`` that tells the change from a value to this one
    ("moved the events from RabbitMQ to Kafka", "CloudFront -> Fastly":
    :func:`ferrex.rules.value_changes.note_tells_change`) makes the one fact holding the old
    value the slot, sure."""
    allowed = [
        m
        for m in others
        if m.object is not None
        and slot_candidate(predicate, obj, str(m.predicate_normalized), m.object)
    ]
    mine = fact_phrase(predicate, obj)
    theirs = [fact_phrase(str(m.predicate_normalized), str(m.object)) for m in allowed]
    found: list[tuple[Memory, SlotMatch]] = []
    scores = cosines_with(measures, mine, theirs)
    for m, score in zip(allowed, scores, strict=True):
        match = slot_match(predicate, obj, str(m.predicate_normalized), str(m.object), score,
                           news=news)  # fmt: skip
        if match is not None:
            found.append((m, match))
    best = None if found else value_fallback(predicate, scores)
    if best is not None:
        found.append((allowed[best], SlotMatch("possible", "the closest slot to a bare value",
                                               scores[best])))  # fmt: skip
    elif not found and told_as_past(predicate):
        found += _past_slot(obj, predicate, mine, others, measures)
    elif not found and worded:
        found += _changed_slot(obj, predicate, mine, others, measures, note, besides)
    elif not found and note:
        found += _named_slot(obj, predicate, mine, others, measures, note, besides)
    if not note:
        return found
    # The one fact whose value the note tells the change from is the slot, matched or not.
    told = [m for m in others if m.object is not None and not kinds_clash(obj, m.object)
            and note_tells_change(note, obj, str(m.object))]  # fmt: skip
    if len(told) != 1:
        return found
    return [*((m, f) for m, f in found if m is not told[0]),
            (told[0], SlotMatch("same", NOTE_FROM_TO, 1.0))]  # fmt: skip


#: Why a fact told as past (:func:`ferrex.rules.value_changes.told_as_past`) was matched.
TOLD_AS_PAST: Final = "told as past, beside the closest current fact"

#: Why a fact is the slot by the note that tells the change from its value
#: (:func:`ferrex.rules.value_changes.note_tells_change`).
NOTE_FROM_TO: Final = "the note tells the change from its value"

#: Why a fact told in words as a change was matched (:func:`_changed_slot`).
TOLD_AS_NEWS: Final = "told as a change, beside the closest current fact"

#: The least phrase cosine at which :func:`_changed_slot` names a fact: above
#: :data:`VALUE_FLOOR`, since a predicate of words of its own says more than ``is``. Not
#: fitted: on the fact sets' tuning halves 0.20, 0.30 and 0.40 flag the same pairs.
NEWS_FLOOR: Final = 0.30

#: The least phrase cosine at which :func:`_changed_slot` names a fact when neither value is
#: of a known kind (two names: ``Celery`` / ``Rust``, ``EST`` / ``Toronto``): two names say
#: less of one slot than two versions do. Told so of slots no other fact holds (``tools.
#: eval_fact_changes --unrelated 1000 --worded-share 0.3``) it cut false flags from 3.3
#: stores in 100 to 1.5 (1.8 once a name at a version agrees with a name,
#: :func:`ferrex.rules.kinds.shapes_agree`); no fact set's tuning or held-out figure moved
#: (the tuning halves' changes it matches score 0.51 and 0.54). Not for a predicate of
#: words of change alone (``switched over to``: :func:`_names_no_slot`), nor for the fact
#: whose value the note names.
NAMES_NEWS_FLOOR: Final = 0.45


def _past_slot(
    obj: str, predicate: str, phrase: str, others: Sequence[Memory], measures: Measures
) -> list[tuple[Memory, SlotMatch]]:
    """For a fact told as past that matched no slot of its subject: the current fact it most
    likely came before (:func:`_closest_slot`, at least :data:`VALUE_FLOOR`), as a possible
    match."""
    return _closest_slot(obj, predicate, phrase, others, measures, VALUE_FLOOR, TOLD_AS_PAST)


def _changed_slot(
    obj: str,
    predicate: str,
    phrase: str,
    others: Sequence[Memory],
    measures: Measures,
    note: str | None = None,
    besides: Sequence[str] = (),
) -> list[tuple[Memory, SlotMatch]]:
    """For a fact told in words as a change (``migrated to``, ``now uses``, ``switched to``, or
    a note saying so: :func:`ferrex.rules.value_changes.told_as_news` without its start) that
    matched no slot of its subject: the current fact it most likely changed
    (:func:`_closest_slot`, at least :data:`NEWS_FLOOR`), of those the change does not surely
    leave alone (:func:`ferrex.rules.slot_outcomes.news_apart`) and whose value has the new
    one's shape (:func:`ferrex.rules.kinds.shapes_agree`), as a possible match. Told so of
    slots no other fact holds (``--worded-share 0.3``), the shapes cut false flags from 8.8
    stores in 100 to 3.3, and no fact set's tuning or held-out figure moved. A change
    said in words changed something; which, the agent settles. A start alone
    (``valid_from``) is no such word: it says when a fact began, and with some facts dated
    among undated ones it flagged 7.4 unrelated stores in 100 (``tools.eval_fact_changes
    --unrelated 1000 --dated-share 0.3``), against 0.4 without. The one fact whose value
    the words name (``note``: "we migrated it off Netlify"; not by a word of ``besides``, the
    new fact's own subject and value) is that fact, however close."""
    by_note = _named_slot(obj, predicate, phrase, others, measures, note, besides)
    if by_note:
        return by_note
    kept = [m for m in others if not news_apart(predicate, str(m.predicate_normalized))
            and m.object is not None and shapes_agree(obj, str(m.object))]  # fmt: skip
    found = _closest_slot(obj, predicate, phrase, kept, measures, NEWS_FLOOR, TOLD_AS_NEWS)
    names = object_kind(obj) is None and all(object_kind(str(m.object)) is None for m, _ in found)
    return [(m, f) for m, f in found
            if not names or _names_no_slot(predicate) or f.score >= NAMES_NEWS_FLOOR]  # fmt: skip


def _named_slot(
    obj: str,
    predicate: str,
    phrase: str,
    others: Sequence[Memory],
    measures: Measures,
    note: str | None,
    besides: Sequence[str],
) -> list[tuple[Memory, SlotMatch]]:
    """The one fact of ``others`` (a relation not apart from the new one's, a value of no
    other known kind) whose value the words name (:func:`ferrex.rules.value_changes.
    note_names`, not by a word of ``besides``): ``push provider | OneSignal`` with a note "FCM quota
    issues" beside ``sends push via | Firebase Cloud Messaging``, as a possible match; none
    when they name several."""
    named = [m for m in others if m.object is not None
             and not relations_apart(predicate, str(m.predicate_normalized))
             and not kinds_clash(obj, str(m.object))
             and note_names(note, str(m.object), besides=besides)]  # fmt: skip
    if len(named) != 1:
        return []
    m = named[0]
    texts = [fact_phrase(str(m.predicate_normalized), str(m.object))]
    return [(m, SlotMatch("possible", NOTE_NAMES, cosines_with(measures, phrase, texts)[0]))]


#: Why a fact whose value the new fact's words name was matched (:func:`_named_slot`).
NOTE_NAMES: Final = "the words name its value"


#: Particles of a phrasal verb of change (``switched over to``, ``moved off``): no slot named.
_PARTICLES: Final = frozenset({"over", "off", "up", "out", "away"})


def _names_no_slot(predicate: str) -> bool:
    """Whether a normalized predicate is words of change alone (``moved_to``,
    ``switched_over_to``, ``rewritten_in``): it says a value changed, not which slot it
    holds, so the closest fact is the slot it changed whatever the two values are."""
    return all(w in PREPOSITIONS or w in _PARTICLES for w in slot_words(predicate))


def _closest_slot(
    obj: str,
    predicate: str,
    phrase: str,
    others: Sequence[Memory],
    measures: Measures,
    floor: float,
    why: str,
) -> list[tuple[Memory, SlotMatch]]:
    """The fact of ``others`` under another predicate, with a value that does not clash with
    the new one and a relation not apart from it, whose phrase is closest to ``phrase`` (a
    cosine of at least ``floor``), as a possible match for ``why``; none when there is no such
    fact."""
    pool = [m for m in others if m.object is not None
            and str(m.predicate_normalized) != predicate and not kinds_clash(obj, str(m.object))
            and not relations_apart(predicate, str(m.predicate_normalized))]  # fmt: skip
    if not pool:
        return []
    texts = [fact_phrase(str(m.predicate_normalized), str(m.object)) for m in pool]
    scores = cosines_with(measures, phrase, texts)
    best = max(range(len(pool)), key=lambda i: scores[i])
    if scores[best] < floor:
        return []
    return [(pool[best], SlotMatch("possible", why, scores[best]))]
