"""The outcome of a new fact against a current one under another predicate of its subject
(:func:`slot_match`): ``same`` (the store supersedes it), ``possible`` (both kept, flagged) or
None; the evidence and its order are :mod:`ferrex.rules.slots`'s module docstring.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Final

from ferrex.rules.kinds import kinds_clash, object_kind, one_kind
from ferrex.rules.predicates import FUNCTION_WORDS, PLACE_PREPOSITIONS, PREPOSITIONS
from ferrex.rules.schedules import same_timing, schedule_value
from ferrex.rules.short_forms import initials_formed
from ferrex.rules.slots import (
    CHANGE_WORDS,
    COUNT,
    POSSIBLE_PHRASE,
    POSSIBLE_VALUE_PHRASE,
    SINGLE_KINDS,
    SURE_PARTY_PHRASE,
    SURE_PHRASE,
    VALUE_WORDS,
    SlotMatch,
    added_modifier,
    bare_value,
    content_words,
    placed_alike,
    placing_preposition,
    prepositions_in,
    reworded_slot,
    same_head,
    single_slot,
    slot_words,
    telling_kind,
    value_predicate,
)
from ferrex.rules.value_changes import count_named_apart, counts_of_two, names_apart


def slot_match(
    new_predicate: str,
    new_object: str,
    old_predicate: str,
    old_object: str,
    phrase_cosine: float,
    *,
    news: bool = False,
) -> SlotMatch | None:
    """The outcome for a pair :func:`slot_candidate` allowed, given the cosine of their
    :func:`fact_phrase` (see the module docstring); a new fact told as ``news`` of a change
    placing the subject anew is sure of a place (``deployed on`` / ``runs on``).

    Two values that name two things are never sure of one slot, only possible: versions of
    two named things (``python version 3.11`` / ``upgraded to Django 5.0``:
    :func:`ferrex.rules.value_changes.names_apart`) or counts of two things (``2 GPUs`` / ``64
    cores``: :func:`ferrex.rules.value_changes.counts_of_two`)."""
    match = _slot_match(new_predicate, new_object, old_predicate, old_object, phrase_cosine,
                        news=news)  # fmt: skip
    if match is None or match.outcome != "same":
        return match
    if (
        names_apart(new_predicate, new_object, old_predicate, old_object)
        or counts_of_two(new_object, old_object)
        or count_named_apart(new_predicate, new_object, old_predicate, old_object)
    ):
        return SlotMatch("possible", f"{match.why}; the values name two things", match.score)
    return match


def _slot_match(
    new_predicate: str,
    new_object: str,
    old_predicate: str,
    old_object: str,
    phrase_cosine: float,
    *,
    news: bool,
) -> SlotMatch | None:
    kind = object_kind(new_object)
    alike = one_kind(new_object, old_object)
    # A change word beside the slot's own noun names that slot (``team`` / ``moved to team``,
    # ``owner`` / ``changed owner to``).
    core = slot_words(new_predicate)
    if core and core == slot_words(old_predicate) and not kinds_clash(new_object, old_object):
        return SlotMatch("same", "one slot named, with a word of change", 1.0)
    if changed_in_other_form(new_predicate, old_predicate) and not kinds_clash(
        new_object, old_object
    ):
        return SlotMatch("same", "one slot in another form, with a word of change", 1.0)
    # One slot named once by its initials (``idp`` / ``identity_provider``): sure only told
    # as news, as a start or a word of change (initials may meet another phrase by chance).
    if by_initials(new_predicate, old_predicate) and not kinds_clash(new_object, old_object):
        return SlotMatch("same" if news else "possible", "one slot, once by its initials", 1.0)
    # The slot and the one who provides it (``search`` / ``search_provider``): one slot.
    if by_provider(new_predicate, old_predicate) and not kinds_clash(new_object, old_object):
        return SlotMatch("same" if news else "possible", "one slot, once by its provider", 1.0)
    # A predicate that names no slot (``is``, ``set to``) says which by its value and the
    # subject's other facts: flagged against them.
    vague = value_predicate(new_predicate) or value_predicate(old_predicate)
    sure_at = SURE_PARTY_PHRASE if kind == "party" else SURE_PHRASE
    # A bare value (``is``, ``was``) is never sure of its slot (``was 0.72.10`` may be
    # history); one told as a change (``upgraded to``, ``set to``, ``now``) may be.
    # Two attributes named by two nouns of no shared root (``timeout`` / ``duration``) may
    # hold values of one kind at once: read alike, they are possible, not sure.
    # A verb placing something of the subject (``replicated to``, ``cached at``) beside one
    # placing the subject itself names another thing's place (:func:`placed_apart`), and so
    # does a part named and placed (``replica on``: :func:`part_placed`); two dates under
    # verbs of no shared head (``launched`` / ``deprecated on``) date two events, and two
    # verbs of no shared head with ``by`` (``owned by`` / ``used by``) name two acts.
    if (
        alike
        and phrase_cosine >= sure_at
        and not bare_value(new_predicate)
        and not added_modifier(new_predicate, old_predicate)
        and not two_attributes(new_predicate, old_predicate)
        and not placed_apart(new_predicate, old_predicate)
        and not part_placed(new_predicate, old_predicate)
        and not part_placed(old_predicate, new_predicate)
        and not (kind == "date" and not same_head(new_predicate, old_predicate))
        and not two_acts_by(new_predicate, old_predicate)
    ):
        return SlotMatch("same", f"two {kind} values, phrases alike", phrase_cosine)
    # Two values of one shape a thing holds one of at a time, under one slot noun in other
    # forms (``concurrency`` / ``max concurrent jobs``) or told as a change naming no slot
    # (``upgraded to 1.29`` beside ``Kubernetes version 1.27``): one slot.
    if (
        not bare_value(new_predicate)
        and one_value_kind(new_object, old_object)
        and (reworded_slot(new_predicate, old_predicate) or value_predicate(new_predicate))
    ):
        return SlotMatch("same", "one value at a time, one head word or a change", 1.0)
    # Two schedules, one of a one-value attribute (``happens`` / ``cadence``): one slot.
    # The other must say only when the subject happens, not name an event of its own
    # (``code freeze every Thursday`` beside ``cadence weekly`` is another schedule).
    if (
        not bare_value(new_predicate)
        and schedule_value(new_object)
        and schedule_value(old_object)
        and same_timing(new_object, old_object)
        and (single_slot(new_predicate) or single_slot(old_predicate))
        and (
            (timing_predicate(new_predicate) and timing_predicate(old_predicate))
            or event_of(new_predicate, old_predicate)
            or event_of(old_predicate, new_predicate)
        )
    ):
        return SlotMatch("same", "two schedules, one a one-value attribute", 1.0)
    if told_change(new_predicate) and object_kind(new_object) == object_kind(old_object):
        # A change naming no slot beside the one it can change: a move beside a place
        # (``moved to`` / ``runs on``), a one-value attribute (``migrated to`` / ``provider``),
        # a value stated without a slot (``is now`` / ``is``).
        # ``moved``/``relocated`` tell of a place; ``migrated`` as often of a tool or a
        # language (``migrated to Docusaurus`` beside ``hosted on Netlify``): a migration
        # only to a place of one known kind, or told in phrases not far apart.
        if (
            moved(new_predicate)
            and placing_preposition(old_predicate) is not None
            and (
                "migrated" not in new_predicate.split("_")
                or alike
                or phrase_cosine >= POSSIBLE_VALUE_PHRASE
            )
        ):
            return SlotMatch("same", "a move beside where it is placed", 1.0)
        # The two phrases not far apart: a change that names no slot must read as this one
        # (``migrated to Entra ID`` / ``provider Okta``, not ``status beta``).
        one_value = single_slot(old_predicate) or (value_predicate(old_predicate) and alike)
        if one_value and phrase_cosine >= POSSIBLE_VALUE_PHRASE:
            return SlotMatch("same", "a change beside a one-value slot", phrase_cosine)
        # Neither names a slot and the values are of one kind: ``now`` beside ``is`` says
        # the one value the subject has changed, however unlike the two values read.
        if value_predicate(new_predicate) and value_predicate(old_predicate) and alike:
            return SlotMatch("same", "a change of a value no slot names", 1.0)
    # A part of the subject named and placed (``database on``, ``logs in``) beside where the
    # subject itself is placed (``runs on``): two things' places, however alike the phrases.
    if part_placed(new_predicate, old_predicate) or part_placed(old_predicate, new_predicate):
        return None
    if phrase_cosine >= POSSIBLE_PHRASE:
        return SlotMatch("possible", "phrases alike", phrase_cosine)
    if vague and (alike or phrase_cosine >= POSSIBLE_VALUE_PHRASE):
        return SlotMatch("possible", "a value of no named slot", phrase_cosine)
    if value_predicate(new_predicate) and value_predicate(old_predicate):
        return SlotMatch("possible", "two values of no named slot", phrase_cosine)
    # One head word with other prepositions (reports to / reports on) is left to the score;
    # a preposition on one side only is no other one (capped at / spend cap).
    preps = (prepositions_in(new_predicate), prepositions_in(old_predicate))
    # A word put in front of the other's noun names a kind of it (``status`` / ``compliance
    # status``): the same head only where the values read alike too.
    if (
        same_head(new_predicate, old_predicate)
        and (preps[0] == preps[1] or not all(preps))
        and not (
            added_modifier(new_predicate, old_predicate)
            and two_nouns(new_predicate, old_predicate)
            and not alike
            and phrase_cosine < POSSIBLE_VALUE_PHRASE
        )
    ):
        return SlotMatch("possible", "the same head word", phrase_cosine)
    if placed_alike(new_predicate, old_predicate):
        # Sure only told as news, and each verb one that places the thing itself (``runs
        # on``, ``deployed on``); ``caches on S3`` places its cache, not what ``runs on
        # GitHub Actions`` says.
        sure = news and places_itself(new_predicate) and places_itself(old_predicate)
        return SlotMatch("same" if sure else "possible", "both place the subject", phrase_cosine)
    if placed_to(new_predicate, old_predicate):
        return SlotMatch("possible", "both place the subject, one by where it went", phrase_cosine)
    if (
        placed_by_attribute(new_predicate, old_predicate)
        or placed_by_attribute(old_predicate, new_predicate)
    ) and cloud_regions(new_object, old_object):
        return SlotMatch("possible", "a region named beside a verb placing", phrase_cosine)
    if telling_kind(new_object, old_object):
        return SlotMatch("possible", "two values of one plain kind", phrase_cosine)
    return None


_REGION: Final = re.compile(
    r"\b[a-z]{2,}-(?:[a-z]+-)?(?:north|south|east|west|central|northeast|northwest|southeast"
    r"|southwest)\d*(?:-\d+)?\b",
    re.IGNORECASE,
)


def cloud_regions(left: str, right: str) -> bool:
    """Whether both values name a cloud region (``us-east-1``, ``europe-west4``,
    ``ap-southeast-2``): an area, a compass word, a number. A host or a cluster in it
    (``k8s-node-07``, ``ecs cluster shipping-prod``) is another slot than its region."""
    return bool(_REGION.search(left)) and bool(_REGION.search(right))


def two_acts_by(new_predicate: str, old_predicate: str) -> bool:
    """Whether both normalized predicates name who does something (``owned_by``,
    ``used_by``: a verb and ``by``) with verbs of no shared head: two acts, two people or
    teams at once (the owner and a user, the author and the reviewer), however alike they
    read."""
    new, old = new_predicate.split("_"), old_predicate.split("_")
    return new[-1:] == ["by"] == old[-1:] and not same_head(new_predicate, old_predicate)


#: Nouns of an attribute that says where a thing is (``region``, ``data residency region``).
PLACE_NOUNS: Final[frozenset[str]] = frozenset({"region", "zone", "location", "datacenter"})


def placed_by_attribute(attribute: str, verb: str) -> bool:
    """Whether a normalized predicate names where its subject is as an attribute (its last
    content word one of :data:`PLACE_NOUNS`: ``region``, ``bucket_region``) and the other
    places the subject with a verb (``deployed_in``, ``stored_in``, ``lives_in``:
    :func:`ferrex.rules.slots.placing_preposition`): with two regions for values
    (:func:`cloud_regions`), maybe one slot, whatever their phrases' cosine (``region |
    us-east-1`` beside ``deployed in | us-east-2`` reads 0.50)."""
    return _place_noun(attribute) and placing_preposition(verb) is not None


def _place_noun(predicate: str) -> bool:
    """Whether a normalized predicate's last content word is one of :data:`PLACE_NOUNS`."""
    words = content_words(predicate)
    return bool(words) and words[-1] in PLACE_NOUNS


def by_initials(new_predicate: str, old_predicate: str) -> bool:
    """Whether one normalized predicate is a single word formed of the other's starts
    (:func:`ferrex.rules.short_forms.initials_formed`: ``ttl`` / ``time_to_live``), or
    letters split where the agent wrote capitals (``IdP`` normalized ``id_p``)."""
    a, b = new_predicate.split("_"), old_predicate.split("_")
    for short, long in ((a, b), (b, a)):
        token = "".join(short) if len(short) == 1 or all(len(w) <= 2 for w in short) else ""
        if token and initials_formed(token, long):
            return True
    return False


def by_provider(new_predicate: str, old_predicate: str) -> bool:
    """Whether one normalized predicate is the other with ``provider`` after it
    (``search`` / ``search_provider``, ``email_providers`` / ``email``)."""
    a, b = new_predicate.split("_"), old_predicate.split("_")
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return long in ([*short, "provider"], [*short, "providers"])


def changed_in_other_form(new_predicate: str, old_predicate: str) -> bool:
    """Whether a predicate is a word of change beside the other's slot in another form of its
    words (``moved_hosting_to`` / ``hosted_on``, ``changed_owner_to`` / ``owned_by``): the
    words left once the words of change go are the other's by root
    (:func:`ferrex.rules.slots.reworded_slot`), none added in front (``moved_backup_host_to``
    names a backup's host, not ``host``)."""
    words = new_predicate.split("_")
    if not any(w in VALUE_WORDS for w in words):
        return False
    bare = "_".join(w for w in words if w not in VALUE_WORDS)
    return (
        bool(content_words(bare))
        and reworded_slot(bare, old_predicate)
        and not added_modifier(bare, old_predicate)
    )


def event_of(verb: str, attribute: str) -> bool:
    """Whether a predicate of one word names the event a one-value attribute times
    (``retrained`` / ``retraining_cadence``, ``runs`` / ``run_schedule``): the verb's
    root is a word of the attribute's."""
    words = content_words(verb)
    return (
        len(words) == 1
        and single_slot(attribute)
        and not single_slot(verb)
        and same_head(verb, attribute)
    )


def timing_predicate(predicate: str) -> bool:
    """Whether a normalized predicate says no more than when or how often its subject
    happens: a one-value attribute (``cadence``, ``schedule``), a value alone (``is``,
    ``now``), or a verb of happening alone (:data:`HAPPENING_VERBS`: ``runs``, ``happens``,
    ``scheduled``, ``runs_at``). ``code_freeze``, ``standup`` or ``deploys`` name an event or
    an activity of their own, with a schedule of its own."""
    if single_slot(predicate) or value_predicate(predicate):
        return True
    words = content_words(predicate)
    return len(words) == 1 and words[0] in HAPPENING_VERBS


#: Verbs that say only that the subject happens (when is the object): ``runs``, ``happens``.
HAPPENING_VERBS: Final[frozenset[str]] = frozenset(
    {"runs", "run", "happens", "occurs", "recurs", "repeats", "scheduled", "fires", "held"}
    | {"meets", "executes", "executed", "triggered", "starts", "kicks"}
)


#: Verbs that say where a thing itself is: where it runs, is deployed, hosted, served,
#: installed, lives or sits (in their inflected forms, as :func:`placing_preposition` reads
#: them).
PLACING_VERBS: Final[frozenset[str]] = frozenset(
    {"runs", "running", "deployed", "hosted", "served", "installed", "lives", "living"}
    | {"located", "stationed", "based", "sits", "resides", "kept", "housed", "situated"}
    | {"positioned", "colocated", "homed", "parked", "placed", "operating", "operates"}
    | {"run", "live", "sit", "reside", "deploy", "host"}
)


def places_itself(predicate: str) -> bool:
    """Whether a normalized predicate of one verb and a placing preposition says where its
    subject itself is (:data:`PLACING_VERBS`: ``runs_on``, ``is_hosted_at``), not where
    something of it goes (``caches_on``, ``logs_to``)."""
    return placing_preposition(predicate) is not None and any(
        w in PLACING_VERBS for w in predicate.split("_")
    )


def placed_to(new_predicate: str, old_predicate: str) -> bool:
    """Whether two normalized predicates each place the subject itself
    (:func:`places_itself`), one of them by where it went (``deployed to Vercel`` beside
    ``hosted on Netlify``): maybe one slot, never surely (``to`` names a region or a cluster
    as often as a host, which :func:`ferrex.rules.slots.placed_alike` leaves out)."""
    found = {placing_preposition(new_predicate), placing_preposition(old_predicate)}
    return (
        "to" in found
        and found <= {"to", "on", "at", "upon", "onto"}
        and places_itself(new_predicate)
        and places_itself(old_predicate)
    )


def places_part(predicate: str) -> bool:
    """Whether a normalized predicate of one verb and a placing preposition places something
    of its subject, not the subject itself (``replicated_to``, ``cached_at``, ``writes_to``:
    :func:`places_itself` fails)."""
    return placing_preposition(predicate) is not None and not places_itself(predicate)


def part_placed(predicate: str, other: str) -> bool:
    """Whether a normalized predicate is a noun naming a part of its subject and a placing
    preposition (``database_on``, ``storage_in``, ``read_replica_on``: a singular noun for
    its head, not a verb form, and no word of change) while the other places the subject
    itself (``runs_on``: :func:`places_itself`)."""
    words = [w for w in predicate.split("_") if w and w not in FUNCTION_WORDS]
    if len(words) < 2 or words[-1] not in PLACE_PREPOSITIONS or not places_itself(other):
        return False
    if same_head(predicate, other):  # ``run_on`` / ``runs_on``: one verb in two forms
        return False
    noun = words[-2]
    # A word in ``s`` may be a verb of the subject's own (``caches on``): singular nouns only.
    verb_form = noun.endswith(("ed", "en", "ing", "s")) or noun in PLACING_VERBS
    return not verb_form and not any(w in VALUE_WORDS or w in PREPOSITIONS for w in words[:-1])


def placed_apart(new_predicate: str, old_predicate: str) -> bool:
    """Whether one predicate places the subject itself (``hosted_on``) and the other
    something of it (``replicated_to``, ``cached_at``: :func:`places_part`), or both are
    verbs of other acts placed (``stored_in`` / ``processed_in``: two heads, not both
    placing the subject itself), or something of it is placed beside an attribute naming
    where the subject is (``replicated_to`` / ``region``). A value held at a level
    (``throttled_at``) beside a noun (``rate_limit``) is neither."""
    if (places_itself(new_predicate) and places_part(old_predicate)) or (
        places_itself(old_predicate) and places_part(new_predicate)
    ):
        return True
    # Something of the subject placed beside where the subject is (``replicated_to`` /
    # ``region``): a replica's region is not the service's.
    if (places_part(new_predicate) and _place_noun(old_predicate)) or (
        places_part(old_predicate) and _place_noun(new_predicate)
    ):
        return True
    return (
        places_part(new_predicate)
        and places_part(old_predicate)
        and not same_head(new_predicate, old_predicate)
    )


def two_nouns(new_predicate: str, old_predicate: str) -> bool:
    """Whether two normalized predicates are both attribute nouns: neither a verb form
    (``capped_at``, ``deployed``), a preposition nor a value alone."""
    return not (
        _participle(new_predicate)
        or _participle(old_predicate)
        or value_predicate(new_predicate)
        or value_predicate(old_predicate)
        or prepositions_in(new_predicate)
        or prepositions_in(old_predicate)
    )


def two_attributes(new_predicate: str, old_predicate: str) -> bool:
    """Whether two normalized predicates are two attribute nouns that share no root
    (``timeout`` / ``duration``, ``retention`` / ``batch_size``, ``raised_cache_size_to`` /
    ``memory_limit``: the words of a change dropped first): neither places the
    subject (a preposition: ``runs_on``), tells a change (``deployed``, ``upgraded_to``)
    or states a value alone."""
    new, old = _attribute(new_predicate), _attribute(old_predicate)
    return two_nouns(new, old) and not same_head(new, old)


def _attribute(predicate: str) -> str:
    """A normalized predicate's attribute noun with the words of a change around it dropped,
    when what is left names a one-value attribute (``raised_cache_size_to`` →
    ``cache_size``: :func:`ferrex.rules.slots.single_slot`); else the predicate itself
    (``minor_upgraded_to``, ``now_runs_on``)."""
    parts = [w for w in predicate.split("_") if w]
    if not any(w in VALUE_WORDS for w in parts):
        return predicate
    words = [w for w in parts if w not in VALUE_WORDS]
    while words and words[-1] in PREPOSITIONS:
        words.pop()
    while words and words[0] in PREPOSITIONS:
        words.pop(0)
    noun = "_".join(words)
    return noun if noun and single_slot(noun) else predicate


def _participle(predicate: str) -> bool:
    words = content_words(predicate)
    return bool(words) and words[-1].endswith("ed") and not words[-1].endswith("eed")


def told_change(predicate: str) -> bool:
    """Whether a normalized predicate only tells of a change to a value (``moved_to``,
    ``migrated_to``, ``is_now``, ``switched_to``): :func:`value_predicate` with a word of
    :data:`CHANGE_WORDS`."""
    return value_predicate(predicate) and not bare_value(predicate)


#: Words of a change of place: ``moved to``, ``migrated to``, ``relocated to``.
MOVE_WORDS: Final[frozenset[str]] = frozenset({"moved", "migrated", "relocated"})


def moved(predicate: str) -> bool:
    """Whether a normalized predicate tells of a move to a new place (``moved_to``,
    ``migrated_to``, ``now_moved_to``)."""
    words = predicate.split("_")
    return told_change(predicate) and "to" in words and any(w in MOVE_WORDS for w in words)


def one_value_kind(left: str, right: str) -> bool:
    """Whether two objects are values of one shape a thing holds one of at a time: one kind
    of :data:`SINGLE_KINDS` (two versions, two durations), or two bare quantities (``20`` /
    ``40``, ``50 nodes``)."""
    kind = object_kind(left)
    if kind is not None:
        return kind in SINGLE_KINDS and kind == object_kind(right)
    return object_kind(right) is None and bool(COUNT.match(left.strip()) and
                                               COUNT.match(right.strip()))  # fmt: skip


#: Words that tie a named thing to the subject without naming it (``its sdk``, ``our logs``).
POSSESSIVES: Final[frozenset[str]] = frozenset({"its", "their", "our", "his", "her", "my"})


def news_apart(new_predicate: str, old_predicate: str) -> bool:
    """Whether a fact told as news of a change, matched to no slot of its subject, is still
    surely not news of the other fact's slot: both predicates name attributes of their own
    (:func:`two_nouns`: ``retry delay`` / ``timeout``, ``product owner`` / ``tech lead``), one
    places something of the subject and the other the subject itself (:func:`placed_apart`),
    or the change names a thing of the subject (:func:`changed_part`) that the other does not
    (``logs moved to``, ``upgraded its sdk to`` beside ``runs on``, ``version``)."""
    if two_nouns(new_predicate, old_predicate) or placed_apart(new_predicate, old_predicate):
        return True
    named = changed_part(new_predicate)
    theirs = content_words(old_predicate)
    return bool(named) and not any(w[:4] == t[:4] for w in named for t in theirs)


def changed_part(predicate: str) -> list[str]:
    """The words naming what a change told in a normalized predicate changed, when that is
    a thing of its subject rather than the subject: the words in front of its first word of
    change (``logs_moved_to``, ``go_toolchain_upgraded_to``) and a word after a possessive
    (``upgraded_its_sdk_to``). None for a change of the subject itself (``switched_over_to``,
    ``now_triggered_from``, ``migrated_to``)."""
    words = content_words(predicate)
    first = next((i for i, w in enumerate(words) if w in CHANGE_WORDS), None)
    if first is None:
        return []
    named = [w for w in words[:first] if w not in VALUE_WORDS]
    named += [w for prior, w in pairwise(words) if prior in POSSESSIVES]
    return named
