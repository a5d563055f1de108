"""Slot matching: which current facts of a subject a new fact may replace, beyond one predicate.

A slot is a subject and a relation. :mod:`ferrex.rules.predicates` gives each relation one
spelling where it can (synonym groups, typos); what it cannot place, agents still write: the
host of a service is ``runs on``, ``is hosted at``, ``lives on``, ``is deployed on``,
``host``. No list holds every wording, so for a new fact and each current single-valued fact
of the same subject under *another* predicate, :func:`slot_match` weighs evidence that does
not come from a list:

- **the kind of the objects** (:func:`object_kind`): two host names (``k8s-node-07``,
  ``bff-1.fitpulse.net``), two versions (``16.1``, ``v2``), two durations (``30s``,
  ``5 min``), two sizes (``512Mi``, ``2 MB``), two rates, two amounts of money, two
  percentages, two URLs, two people or teams (``@priya.n``, ``Ann Weller``, ``team Nova``),
  two dates. Two *different* known kinds (a version and a duration) are two slots, whatever
  the words say;
- **the predicate's head word** (the same word root, ``host``/``hosted``/``hosting``) with
  prepositions that agree (``on``, ``at``, ``in``, ``to`` all place a thing; ``by``, ``of``,
  ``for``, ``from`` and ``with`` give a direction and must be the same);
- **the phrases' embedding**: the cosine of ``X <predicate> <object>`` for the two facts
  (bundled model). The object in the phrase is what makes it work: bare, ``runs on`` and
  ``is hosted at`` score 0.51; with two host names, 0.83.

And it rules a pair out before any score: the guard of
:func:`ferrex.rules.predicates.may_reword` (an inverse, an agent phrase against another,
a negation on one side, different numbers, a count against its member), and *sibling*
predicates: two predicates sharing a content word where each has one the other lacks
(``max retries`` / ``max connections``, ``memory request`` / ``memory limit``,
``page size on desktop`` / ``page size on mobile web``) name two slots.

Three outcomes, precision first, because a wrong supersede hides a true fact. The
thresholds were chosen on the tuning half of ``golden_set/fact_changes.jsonl`` (its changes
against its hard negatives and 1,000 unrelated facts):

- ``same`` (the store supersedes the old fact): objects of one known kind and a phrase
  cosine of at least :data:`SURE_PHRASE` (:data:`SURE_PARTY_PHRASE` for two people or
  teams), unless the new predicate is a bare value (``is``, ``was``: :func:`bare_value`) or
  adds a word in front (:func:`added_modifier`); the slot's own words beside a word of
  change (``team`` / ``moved to team``: :func:`slot_words`); two values of one shape held
  one at a time under one slot noun in other forms (:func:`reworded_slot`) or beside a
  change naming no slot (``upgraded to``); a move beside a place, a change beside a
  one-value attribute (:func:`single_slot`); two schedules beside a cadence; a new place
  told as news. When more than one current fact looks sure, none is replaced: all flagged;
- ``possible`` (both kept and flagged, ``facts.possible_conflict``, reason ``relation``): a
  phrase cosine of at least :data:`POSSIBLE_PHRASE`; a predicate naming no slot with one
  kind of object or a cosine of at least :data:`POSSIBLE_VALUE_PHRASE`, else the subject's
  closest fact (:func:`value_fallback`); the same head word; two URLs or two schedules;
- ``None``: different slots (also a part of the subject placed beside where it runs,
  ``database on`` / ``runs on``, and a kind of an attribute named by a word in front with
  values that read apart, ``status`` / ``compliance status``).

Two values that name two things are never sure, whatever else agrees
(:mod:`ferrex.rules.value_changes`): versions of two named things (``python version 3.11``
/ ``upgraded to Django 5.0``), counts of two things (``2 GPUs`` / ``64 cores``), a part
placed beside the thing itself (``replicated to`` / ``hosted on``), the dates of two
events (``launched`` / ``deprecated on``). The probes written to find such joins are
``tools/fact_probes.jsonl``.

:func:`plural_fact` says when a fact is one value of many, kept beside the others: a
plural relation (:func:`plural_relation`: ``members``, ``supported regions``, ``member``,
``node``, ``depends on``, ``ships to``, ``maintainer``, ``reviewed by``), a relation of a
range of versions (:func:`range_relation`: ``supports``, ``tests on``, ``compatible
with``), one with others (:func:`reciprocal_relation`: ``works with``), a past event of many
(``had an incident on``), a plural subject placed (``Kafka brokers | run on``), never a
quantity or a kind a thing has one of (a version, a date) outside a range.
:func:`scoped_apart`: two objects each for its own purpose (``PlayFab for economy`` /
``EOS for lobbies``) both hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ferrex.rules.kinds import kinds_clash, object_kind
from ferrex.rules.predicates import (
    FUNCTION_WORDS,
    PLACE_PREPOSITIONS,
    PREPOSITIONS,
    may_reword,
    phrase_words,
    same_count,
)
from ferrex.rules.schedules import schedule_value
from ferrex.rules.subjects_apart import relations_apart
from projections.rows import RELATION as RELATION

#: Phrase cosine (bundled model) at or above which two facts of one object kind fill one slot.
#: Calibrated on the tuning half of ``golden_set/fact_changes.jsonl``: of the pairs of one
#: known kind the guards let through, every change and restatement above 0.60 was one slot,
#: the hard negatives of one kind scored at most 0.55 and 1,000 unrelated facts at most 0.49.
SURE_PHRASE: Final = 0.60
#: The same for two people or teams: one person is many things at once (owner, on call,
#: lead, reviewer), so two parties need phrases closer than two versions or two hosts.
SURE_PARTY_PHRASE: Final = 0.70
#: Phrase cosine at or above which two facts may fill one slot, whatever their objects.
POSSIBLE_PHRASE: Final = 0.60
#: Phrase cosine at or above which a fact whose predicate names no slot (``is``, ``raised to``:
#: :func:`value_predicate`) may fill another's slot: it fills *some* slot, so the bar is lower.
POSSIBLE_VALUE_PHRASE: Final = 0.40


def content_words(predicate: str) -> list[str]:
    """A normalized predicate's words that are neither function words nor prepositions."""
    return [w for w in predicate.split("_") if w and w not in FUNCTION_WORDS | PREPOSITIONS]


def sibling_predicates(left: str, right: str) -> bool:
    """Whether two normalized predicates name two slots of one thing: they share a content
    word and each has a content word the other lacks (``max_retries``/``max_connections``);
    a word of change is none of the slot's (``per_user_limit_raised_to``/``rate_limit``)."""
    a = [w for w in content_words(left) if w not in VALUE_WORDS]
    b = [w for w in content_words(right) if w not in VALUE_WORDS]
    shared = [w for w in a if any(_root(w) == _root(x) for x in b)]
    only_a = [w for w in a if all(_root(w) != _root(x) for x in b)]
    only_b = [w for w in b if all(_root(w) != _root(x) for x in a)]
    return bool(shared and only_a and only_b)


def may_share_slot(left: str, right: str) -> bool:
    """Whether two different normalized predicates may name one relation: the guard of
    :func:`ferrex.rules.predicates.may_reword` (with placing prepositions as one), not
    siblings, not :func:`relations_apart`."""
    if left == right:
        return True
    if sibling_predicates(left, right) or same_count(left, right) or relations_apart(left, right):
        return False
    placed_left, placed_right = _placed(left), _placed(right)
    if placed_left == placed_right:
        return True
    # One head word, a preposition on one side only (``capped_at`` / ``monthly_spend_cap``):
    # no other preposition, so not the guard's "same root, another direction".
    preps = (prepositions_in(left), prepositions_in(right))
    if same_head(left, right) and not all(preps) and any(preps) and "by" not in preps[0] + preps[1]:
        return True
    return may_reword(placed_left, placed_right)


def same_head(left: str, right: str) -> bool:
    """Whether two normalized predicates share a content word's root (``hosted_at``/
    ``host``/``hosting``). What follows ``per`` is the unit a value is counted by, not the
    head: ``worker_threads_per_replica`` shares no head with ``replicas`` (unless both count
    by a unit)."""
    a, b = content_words(left), content_words(right)
    if ("per" in left.split("_")) != ("per" in right.split("_")):
        a, b = content_words(_before_per(left)), content_words(_before_per(right))
    return any(_heads(x) & _heads(y) for x in a for y in b)


def _before_per(predicate: str) -> str:
    """A normalized predicate's words before ``per`` (all of them without one)."""
    words = predicate.split("_")
    return "_".join(words[: words.index("per")]) if "per" in words else predicate


def reworded_slot(left: str, right: str) -> bool:
    """Whether two normalized predicates name one slot in other words: the same content
    words by root, or a word of one in another form of the other's (``concurrency`` /
    ``max_concurrent_jobs``, ``parallelism`` / ``max_parallel_uploads``: a long stem shared,
    the words not the same). A word added in front of the same noun is not enough
    (``version`` / ``python_version``, ``timeout`` / ``idle_timeout``)."""
    a, b = content_words(left), content_words(right)
    if a and {_root(w) for w in a} == {_root(w) for w in b}:
        return True
    return any(x != y and len(x) >= _STEM and len(y) >= _STEM and x[:_STEM] == y[:_STEM]
               for x in a for y in b)  # fmt: skip


def added_modifier(left: str, right: str) -> bool:
    """Whether one normalized predicate is the other with words added (``version`` /
    ``python_version``, ``timeout`` / ``idle_timeout``): maybe another thing's value of one
    kind, never sure (:func:`reworded_slot` aside)."""
    a, b = {_root(w) for w in content_words(left)}, {_root(w) for w in content_words(right)}
    if a == b or not a or not b or not (a < b or b < a) or reworded_slot(left, right):
        return False
    # A word of the value's state (``running version``, ``current owner``) is no thing.
    added = {w for w in content_words(left) + content_words(right) if _root(w) in a ^ b}
    return not all(w.endswith(("ing", "ed")) or w in _STATE_WORDS for w in added)


_STATE_WORDS: Final = frozenset({"current", "latest", "live", "actual", "active", "default"})


def _heads(word: str) -> set[str]:
    """A word's root, for a long word that starts with ``re`` the root of the rest too
    (``relicensed`` / ``license``, ``rehosted`` / ``hosting``: the same act again), and
    for a long word its first :data:`_STEM` letters."""
    roots = {_root(word)}
    if word.startswith("re") and len(word) >= 8:
        roots.add(_root(word[2:]))
    if len(word) >= _STEM:
        # A long stem shared whatever the ending (``concurrent`` / ``concurrency``,
        # ``configured`` / ``configuration``): one word in two forms.
        roots.add("~" + word[:_STEM])
    return roots


#: Letters two long words must share at their start to be one word in two forms.
_STEM: Final = 8


def fact_phrase(predicate: str, obj: str) -> str:
    """The text embedded for a fact in :func:`slot_match`: ``X <predicate words> <object>``."""
    return f"X {predicate.replace('_', ' ')} {obj}"


SlotOutcome = Literal["same", "possible"]


@dataclass(frozen=True, slots=True)
class SlotMatch:
    """How a new fact stands to a current one under another predicate, and why."""

    outcome: SlotOutcome
    why: str
    score: float


def slot_candidate(
    new_predicate: str, new_object: str, old_predicate: str, old_object: str
) -> bool:
    """Whether a current fact may be weighed at all (only those get a phrase cosine)."""
    if not new_predicate or not old_predicate or new_predicate == old_predicate:
        return False
    if kinds_clash(new_object, old_object) or relations_apart(new_predicate, old_predicate):
        return False
    if value_predicate(new_predicate) or value_predicate(old_predicate):
        return True  # it names no slot: the subject and the object say which
    if slot_words(new_predicate) == slot_words(old_predicate):
        return True  # one slot named, a word of change beside it (moved to team / team)
    if telling_kind(new_object, old_object) and not (
        sibling_predicates(new_predicate, old_predicate) or same_count(new_predicate, old_predicate)
    ):
        return True  # two addresses, two versions, two schedules: weighed whatever the words
    if counted_alike(new_predicate, old_predicate) and _NUMBER.match(new_object.strip()):
        return _NUMBER.match(old_object.strip()) is not None  # prefetch 10 / prefetch count 50
    return may_share_slot(new_predicate, old_predicate)


def counted_alike(left: str, right: str) -> bool:
    """Whether one normalized predicate is the other with a word marking a count
    (``prefetch`` / ``prefetch_count``, ``number_of_shards`` / ``shards``): with two bare
    numbers for values, one count."""
    a, b = left.split("_"), right.split("_")
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long in ([*short, "count"], ["num", *short], ["number", "of", *short])


_NUMBER: Final = re.compile(r"^\d+$")


#: Kinds of value two of which under two relations of one subject may be one slot (flagged):
#: URLs with a scheme. Not host names (a node, a region, a repository look alike), people
#: (owner and on call at once) or measures (flash and RAM, cost and price).
TELLING_KINDS: Final[frozenset[str]] = frozenset({"url"})


def telling_kind(left: str, right: str) -> bool:
    """Whether two objects are of one kind of :data:`TELLING_KINDS` (two URLs), or both schedules
    (:func:`schedule_value`: ``quarterly`` / ``monthly``, ``at 01:00 UTC`` / ``0 5 * * *``)."""
    kind = object_kind(left)
    if kind is not None and kind in TELLING_KINDS and kind == object_kind(right):
        return True
    return schedule_value(left) and schedule_value(right)


#: Words of a predicate that states a value without naming the slot it fills: a copula
#: (``is``, ``was``, ``is now``) or a verb of change (``set to``, ``bumped to``,
#: ``moved to``, ``replaced with``). Function words and prepositions aside.
VALUE_WORDS: Final[frozenset[str]] = frozenset(
    {"now", "currently", "current", "value", "set", "changed", "switched", "moved", "raised"}
    | {"reduced", "lowered", "increased", "decreased", "upgraded", "downgraded", "bumped"}
    | {"migrated", "updated", "became", "becomes", "replaced", "rolled", "back", "tuned"}
    # A value done again (a new size, name, licence, place, owner): the act names the change.
    | {"relocated", "resized", "renamed", "rescheduled", "relicensed", "rebranded"}
    | {"reassigned", "repointed", "retargeted", "restored", "promoted"}
    | {"rewritten", "rebuilt", "rehosted", "replatformed", "reverted"}
    # A value passed on or made into another (holder, language, form). Not ``ported``,
    # ``extended``: as often one value more (``ported to Switch``); nor ``scaled``,
    # ``doubled``: an amount of no named slot (``scaled to 3`` beside ``max replicas``).
    | {"handed", "transferred", "converted", "swapped", "transitioned", "shifted"}
)


def slot_words(predicate: str) -> tuple[str, ...]:
    """A normalized predicate's words that name its slot: function words and
    :data:`VALUE_WORDS` dropped, with a preposition that only follows a word of change
    (``moved_to_team`` → ``("team",)``, ``reports_on`` → ``("reports", "on")``); empty for a
    :func:`value_predicate`."""
    kept: list[str] = []
    after_change = False
    for w in (w for w in predicate.split("_") if w):
        if w in VALUE_WORDS or w in FUNCTION_WORDS or (after_change and w in PREPOSITIONS):
            after_change = w in VALUE_WORDS or (after_change and w in PREPOSITIONS)
            continue
        after_change = False
        kept.append(w)
    return tuple(kept) if any(w not in PREPOSITIONS for w in kept) else ()


def value_fallback(predicate: str, scored: Sequence[float]) -> int | None:
    """For a fact whose predicate names no slot (:func:`value_predicate`) and that matched
    none of its subject's current facts: the index of the fact it most likely changes (the
    highest phrase cosine in ``scored``, at least :data:`VALUE_FLOOR`), to be flagged. A
    value stated as ``is``/``set to`` fills *some* slot; the agent is told which it may be."""
    if not scored or not value_predicate(predicate):
        return None
    best = max(range(len(scored)), key=lambda i: scored[i])
    return best if scored[best] >= VALUE_FLOOR else None


#: The least phrase cosine at which :func:`value_fallback` names a fact.
VALUE_FLOOR: Final = 0.20


#: :data:`VALUE_WORDS` that tell of a change (the value it names is the new one).
CHANGE_WORDS: Final[frozenset[str]] = VALUE_WORDS - {"value", "current", "currently"}


def bare_value(predicate: str) -> bool:
    """Whether a normalized predicate states a value with no word of change (``is_a``,
    ``was``, ``value``): it names neither its slot nor that the value is new."""
    return value_predicate(predicate) and not any(w in CHANGE_WORDS for w in predicate.split("_"))


def value_predicate(predicate: str) -> bool:
    """Whether a normalized predicate only states a value (see :data:`VALUE_WORDS`):
    ``is_a``, ``was``, ``now``, ``set_to``, ``bumped_to``, ``rolled_back_to``."""
    words = [w for w in predicate.split("_") if w and w not in PREPOSITIONS]
    return all(w in VALUE_WORDS or w in FUNCTION_WORDS for w in words)


def placed_alike(left: str, right: str) -> bool:
    """Whether two normalized predicates each place the subject on or at something with one
    verb (``runs_on`` / ``deployed_on`` / ``is_hosted_at``, ``stationed_at`` /
    ``located_at``): where a thing runs, lives or is kept is one slot, whatever the verb.
    ``in`` and ``to`` are left out: ``in`` places in time or a language as often as in a
    place (``founded in 2019``, ``written in Go``), ``to`` names a target. Siblings
    (``reads_features_from`` / ``reads_labels_from``) and relations of many values
    (``depends_on``) are not placed. (From the unmerged branch ``h-facts``, without its
    embedding of facts in context.)"""
    a, b = placing_preposition(left), placing_preposition(right)
    if a is None or b is None or sibling_predicates(left, right):
        return False
    return a in _ON_AT and b in _ON_AT


_ON_AT: Final = frozenset({"on", "at", "upon", "onto"})


def placing_preposition(predicate: str) -> str | None:
    """The placing preposition of a predicate made of one verb and that preposition (the
    verb inflected: ``runs``, ``hosted``, ``lives``, ``written``); None otherwise."""
    words = [w for w in predicate.split("_") if w and w not in FUNCTION_WORDS]
    if len(words) != 2 or words[1] not in PLACE_PREPOSITIONS:
        return None
    verb = words[0]
    if verb in PREPOSITIONS or verb in VALUE_WORDS or _root(verb) in _PLURAL_ROOTS:
        return None
    inflected = verb.endswith(("ed", "en", "ing")) or _plain_plural(verb) or verb.endswith("es")
    return words[1] if inflected and not verb.endswith(("ss", "us", "is")) else None


# -- plural relations ----------------------------------------------------------------------

#: Head words of a relation that holds many values at once: a thing has many members, tags,
#: topics; a person speaks many languages. Singular forms; a plural predicate is plural
#: anyway (:func:`plural_relation`).
PLURAL_HEADS: Final[frozenset[str]] = frozenset(
    {
        "speak",
        "include",
        "contain",
        # Relations a thing has with many others at once: what it depends on, emits, calls
        # or is called by, supports, sells, imports, subscribes to or integrates with.
        "depend",
        "emit",
        "call",
        "support",
        "sold",
        "sell",
        "import",
        "subscribe",
        "integrate",
        "consume",
        "produce",
        "publish",
        "expose",
        "connect",
        # Acts done to one thing many times (a PR reviewed by several, a product launched in
        # many markets); plural only inflected (``review status``, ``launch date``: one value).
        "review",
        "approve",
        "launch",
    }
)

#: Nouns of one of many, plural only as the predicate's last word (``member``, ``node``;
#: ``node version`` is a version).
PLURAL_NOUNS: Final[frozenset[str]] = frozenset(
    {"member", "tag", "topic", "label", "keyword", "contributor", "subcommand", "node"}
    | {"feature", "plugin", "extension", "integration", "endpoint", "port", "peer", "shard"}
)

#: Kinds of object a thing has one of at a time, whatever its relation's words: a second
#: version, limit or date is a change.
SINGLE_KINDS: Final[frozenset[str]] = frozenset(
    {"version", "duration", "size", "rate", "money", "percent", "date"}
)


#: Role nouns of which a thing has many, matched as written (``maintainer`` is many, while
#: ``maintained by`` names the one team that owns it).
PLURAL_ROLES: Final[frozenset[str]] = frozenset(
    {"maintainer", "reviewer", "approver", "stakeholder", "collaborator", "participant"}
)


def plural_relation(predicate: str) -> bool:
    """Whether a predicate as written (not normalized: ``owners`` normalizes to ``owned_by``)
    names a relation of many values: its last content word a plural noun (``members``,
    ``regions``, ``maintainers``), or a head word of :data:`PLURAL_HEADS` (``member``,
    ``speaks``). Counts (``replicas count``, ``number of nodes``) are single values."""
    words = phrase_words(predicate)
    content = [w for w in words if w not in FUNCTION_WORDS | PREPOSITIONS]
    if not content or any(w in _MEASURES for w in content):
        return False
    last = content[-1]
    if any((_root(w) in _PLURAL_ROOTS and w not in _BARE_NOUNS) or w in PLURAL_ROLES
           for w in content):  # fmt: skip
        return True
    if _root(last) in _PLURAL_NOUN_ROOTS or last in ("ships", "ship"):
        return True
    if _plural_noun(last) and len(content) <= 2:
        return True
    # A noun in the plural after a modifier or a verb (``supported regions``, ``target
    # markets``, ``emits events``): a verb in the third person rarely follows another word.
    # Not a verb: one followed by a preposition (``now lives on``) or after an adverb.
    return (
        len(content) >= 2
        and words[-1] == last
        and _plain_plural(last)
        and not _plain_plural(content[0])
        and content[-2] not in VALUE_WORDS
        and not content[-2].endswith("ly")
    )


def _plain_plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ys"))


def plural_fact(subject: str, predicate: str, obj: str) -> bool:
    """Whether a fact is one value of many: a plural relation (:func:`plural_relation`,
    :func:`reciprocal_relation`), a relation of a range of versions (:func:`range_relation`),
    one event of many (``had an incident on``) or a plural subject placed
    (:func:`plural_subject`), unless its object is of a kind a thing has one of at a time
    (:data:`SINGLE_KINDS`: ``supported until 2027-01-01``; a schedule of one verb: ``ships
    weekly``, not ``cleanup runs weekly``)."""
    if _QUANTITY.match(obj.strip()):
        return False
    # A version (``iOS 16``, ``Python 3.11``) is one of many a relation of a range holds
    # (``supports``, ``tests on``: :func:`range_relation`).
    if range_relation(predicate) and object_kind(obj) in (None, "version"):
        return True
    # One event of many told in the past with an indefinite article (``had an incident
    # on``, ``had a release on``): another date is one more event, not a new date of it.
    words = phrase_words(predicate)
    if words[:1] == ["had"] and words[1:2] in (["a"], ["an"]) and len(words) > 2:
        return True
    if one_at_a_time(predicate, obj):
        return False
    return (plural_relation(predicate) or reciprocal_relation(predicate)
            or plural_subject(subject, predicate))  # fmt: skip


def one_at_a_time(predicate: str, obj: str) -> bool:
    """Whether a value is of a kind a thing has one of at a time, whatever its relation's
    words (:data:`SINGLE_KINDS`: ``supported until 2027-01-01``), or a schedule told with one
    verb (``runs nightly``, ``ships weekly``: a second schedule is a change of it)."""
    return object_kind(obj) in SINGLE_KINDS or (
        schedule_value(obj) and len(phrase_words(predicate)) == 1
    )


# A number, maybe with a short unit or a multiplier (5, 50, 4k, 1.5x): a quantity, one value.
_QUANTITY = re.compile(r"^[~<>=]*\d[\d.,_]*\s*[a-z%]{0,3}$", re.IGNORECASE)


def scoped_apart(left: str, right: str) -> bool:
    """Whether two objects name two things each for a purpose of its own (``PlayFab for
    economy`` / ``EOS for lobbies``): both hold at once, neither replaces the other. The
    same purpose (``Redis for caching`` / ``Memcached for caching``) is one slot."""
    a, b = _SCOPED.match(left.strip()), _SCOPED.match(right.strip())
    if a is None or b is None:
        return False
    thing_a, for_a = a.group(1).casefold(), a.group(2).casefold()
    thing_b, for_b = b.group(1).casefold(), b.group(2).casefold()
    return thing_a != thing_b and for_a != for_b


_SCOPED = re.compile(r"^(.+?)\s+for\s+(.+)$", re.IGNORECASE)


def versions_of_one(left: str, right: str) -> bool:
    """Whether two objects are one named thing at two versions (``react 18`` / ``react 19``,
    ``PostgreSQL 15`` / ``PostgreSQL 16.2``): a thing uses one version at a time, so a
    second is a change even of a relation of many values."""
    a, b = _NAMED_VERSION.match(left.strip()), _NAMED_VERSION.match(right.strip())
    if a is None or b is None:
        return False
    return a.group(1).casefold() == b.group(1).casefold() and a.group(2) != b.group(2)


def named_version(text: str) -> bool:
    """Whether a value is a named thing at a version (``PostgreSQL 16``, ``react@18``,
    ``Java 21``): a name, then a number alone, the whole value."""
    return _NAMED_VERSION.match(text.strip()) is not None


_NAMED_VERSION = re.compile(
    r"^([A-Za-z][\w.+-]*?(?:\s+[A-Za-z][\w+-]*)*)(?:\s+|@)v?(\d+(?:\.\d+)*)$"
)


def plural_subject(subject: str, predicate: str) -> bool:
    """Whether a fact places a plural subject (``Kafka brokers | run on | kafka-1``): each
    of several things has its own place, so a second value is one more, not a move. The
    subject's last word a plural noun and the predicate holding a placing preposition, and
    no word of change (``flags | now managed in``, ``runners | moved to``: where they all
    are now, a change)."""
    words = phrase_words(subject)
    preds = phrase_words(predicate)
    if any(p in CHANGE_WORDS for p in preds):
        return False
    return bool(words) and _plural_noun(words[-1]) and any(p in PLACE_PREPOSITIONS for p in preds)


def _plural_noun(word: str) -> bool:
    # Verbs in the third person end in s too (runs, hosts, uses): a plural noun is told apart
    # only by endings verbs rarely have.
    return len(word) > 4 and word.endswith(
        ("ers", "ors", "ies", "ions", "ages", "ags", "ics", "ices")
    )


def _root(word: str) -> str:
    for ending in ("ing", "ers", "ors", "ed", "es", "er", "or", "s"):
        if len(word) - len(ending) >= 3 and word.endswith(ending):
            stem = word[: -len(ending)].rstrip("e")
            # A doubled consonant before the ending is one: capped, running, planned.
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                stem = stem[:-1]
            return stem
    return word.rstrip("e") if len(word) > 3 else word


def prepositions_in(predicate: str) -> list[str]:
    return [w for w in predicate.split("_") if w in PREPOSITIONS]


def _placed(predicate: str) -> str:
    return "_".join("at" if w in PLACE_PREPOSITIONS else w for w in predicate.split("_"))


_PLURAL_ROOTS: Final = frozenset(_root(w) for w in PLURAL_HEADS)
# Words making a relation one measure of many things (``max retries``, ``number of nodes``).
_MEASURES: Final = frozenset(
    {"count", "number", "num", "max", "min", "maximum", "minimum", "limit", "total"}
)
_PLURAL_NOUN_ROOTS: Final = frozenset(_root(w) for w in PLURAL_NOUNS)
# Heads that are also nouns of one value as written bare (``support tier``, ``call
# schedule``, ``import path``): plural only inflected (``supports``, ``supported``, ``calls``).
_BARE_NOUNS: Final = frozenset({"support", "call", "import", "review", "approve", "launch"})


#: Nouns of an attribute of one value at a time whatever its shape (``status``, ``license``,
#: ``cadence``; :func:`single_slot`). Not ``region`` or ``language`` (many at once).
SINGLE_SLOT_NOUNS: Final[frozenset[str]] = frozenset(
    {"status", "state", "phase", "stage", "version", "cadence", "frequency", "schedule"}
    | {"interval", "timeout", "ttl", "retention", "size", "limit", "quota", "capacity"}
    | {"threshold", "provider", "vendor", "engine", "license", "url", "location", "runtime"}
    | {"id", "role", "title"}
)


def single_slot(predicate: str) -> bool:
    """Whether a normalized predicate names an attribute of one value at a time: its last
    content word one of :data:`SINGLE_SLOT_NOUNS` as written (``status``, ``review_status``,
    ``request_timeout``; not ``statuses``), with no word of a plural relation before it."""
    words = content_words(predicate)
    return bool(words) and words[-1] in SINGLE_SLOT_NOUNS and not plural_relation(predicate)


# A quantity, or a count of things in one word (``50 nodes``, ``2 approvals``; not an
# ordinal, ``2nd floor``).
COUNT = re.compile(
    r"^[~<>=]*\d[\d.,_]*(?!st\b|nd\b|rd\b|th\b)\s*[a-z%]{0,3}(?:\s+[a-z]+)?$", re.IGNORECASE
)


#: Roots of relations that hold over a range of versions at once: what a thing supports,
#: is compatible with, is tested on or certified for (``supports iOS 16`` and ``iOS 17``).
_RANGE_ROOTS: Final = frozenset({"support", "compatibl", "compatible", "test", "certifi"})


def range_relation(predicate: str) -> bool:
    """Whether a predicate (as written or normalized) names a relation that holds for many
    versions of one thing at once (:data:`_RANGE_ROOTS`: ``supports``, ``compatible with``,
    ``tests on``, ``tested against``): inflected or followed by a preposition, not a noun
    of one value (``support tier``, ``test command``). A name split where its case changes
    (``supports_i_pad_os``, ``supports_mac_os``: iPadOS, macOS) is one of at most three
    content words, its one-letter pieces none."""
    words = phrase_words(predicate)
    content = [w for w in words if w not in FUNCTION_WORDS | PREPOSITIONS and len(w) > 1]
    if not content or len(content) > 3:
        return False
    head = content[0]
    if _root(head) not in _RANGE_ROOTS and head not in _RANGE_ROOTS:
        return False
    return head not in ("support", "test") or any(w in PREPOSITIONS for w in words)


def reciprocal_relation(predicate: str) -> bool:
    """Whether a predicate names a relation a person has with many others at once: a verb
    of working together with ``with`` (``works with``, ``pairs with``, ``collaborates
    with``)."""
    words = phrase_words(predicate)
    content = [w for w in words if w not in FUNCTION_WORDS | PREPOSITIONS]
    return (
        "with" in words
        and len(content) == 1
        and _root(content[0]) in {"work", "pair", "collaborat", "partner", "cooperat"}
    )


def version_name(obj: str) -> str | None:
    """The name of a named version (``Django 5.0`` → ``django``, ``react@18`` → ``react``),
    None for a bare version (``5.0``) or anything else."""
    found = _NAMED_VERSION.match(obj.strip())
    return None if found is None else found.group(1).casefold()
