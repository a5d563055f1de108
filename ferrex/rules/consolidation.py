"""Consolidation's extractive summary: which turns (or sentences) of a group of episodes to keep.

Pure and deterministic: the same sources always give the same summary, and the summary only
*selects* pieces that are there, character for character; it never rewrites, reorders
within a piece, or adds a word. The rule:

1. cut the sources into pieces: whole turns (``unit="turn"``, the default a consolidation
   uses) or sentences (after ``.``, ``!`` or ``?`` followed by space, and at line breaks),
   each an exact slice of its source, surrounding space trimmed;
2. **a piece that states something is always kept** (:func:`statements`, by structure: a
   number, an identifier or a quoted term, a capitalised name that is not a speaker's, a
   date, or a statement in the first person — what someone did, has, decided or prefers;
   and any piece of a memory stored about an entity, such as a memory-server observation),
   unless it only restates a kept piece (every content word and every stated token of it
   already in that one piece, :func:`restates`); a piece repeated word for word (after case
   and space) is kept once. What may go carries no fact: greetings, thanks, questions,
   reactions, restatements;
3. then what is left of the budget (``keep_ratio`` of the group's text, at least
   ``MIN_BUDGET`` characters) takes, greedily, the piece without a fact that covers the most
   weight of content words no kept piece covers yet (a content word: lower-cased, three
   letters or more, not a function word; its weight: how many pieces of the group hold it)
   per character to the power ``LENGTH_DAMPING``, the earliest on a tie, and only when more
   than ``FILL_NEW_SHARE`` of its content words are new (it adds twice what it repeats); a
   piece that would pass the budget is skipped. The facts may pass the budget: a summary is
   longer than ``keep_ratio`` only by what states something;
4. write the kept pieces in their original order, joined by a space, and say which
   source each came from (:class:`Piece`: offsets into the summary).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Literal

MIN_BUDGET = 200
"""The fewest characters a summary may use, whatever ``keep_ratio`` says."""
LENGTH_DAMPING = 0.5
DEFAULT_KEEP_RATIO = 0.8
FILL_NEW_SHARE = 2 / 3
"""A piece that states nothing fills the budget only when more than this share of its
content words are new to the summary: it adds at least twice as much as it repeats."""
Unit = Literal["sentence", "turn"]
UNITS: tuple[Unit, ...] = ("sentence", "turn")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_FUNCTION_TEXT = """
the and for are but not you all any can had her was one our out has him his how its
let may who did get got she they them then than that this with have from what when
where which will would could should there their these those your yours also just very
been being into onto over under about after before again because while some such only
own same too more most other each both few nor off once here why whom does doing were
am is it an as at be by do if in me my no of on or so to up us we he i a oh yeah yes
okay ok really like thing things lot well much even still yet ever it's i'm i've
that's don't didn't can't you're we're they're
"""
_FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())

KINDS = ("number", "identifier", "name", "date", "first person", "entity")
"""What a piece may state (:func:`statements`, in the order they are looked for; "entity":
its source was stored about an entity, :class:`Source`)."""

_LABEL = re.compile(r"\s*([^\W\d_][\w'.-]*(?: [\w'.-]+){0,2}): (?=\S)")
"""A speaker's label opening a turn ("Caroline: ", "Dr. Lee: "), as recall reads one."""
_NAME_WORD = re.compile(r"[^\W\d_][\w'\u2019]*")
_I_FORMS = frozenset(f"I{q}{t}" for q in ("'", "\u2019") for t in ("m", "ve", "ll", "d")) | {"I"}
_SENTENCE_OPENS = re.compile(r"(?:^|[.!?;:]|\n)[\s\"'\u201c\u2018(\[*-]*$")
_QUOTES = "`'\"\u2018\u2019\u201c\u201d"
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_IDENTIFIER = re.compile(
    r"[^\W_]*\w(?:(?:_|::|[./@#])\w+)+|\w+_\w*"  # snake_case, dotted.names, a/b, user@host
    r"|`[^`\n]+`"  # `code`
    r"|(?<![\w'\u2019])['\"\u201c\u2018](?=[^\s'\"\u201d\u2019])"  # 'a quoted term'
    r"[^'\"\u201c\u201d\u2018\u2019\n]{1,60}(?<=\S)['\"\u201d\u2019](?!\w)"
)
_RELATIVE_DATE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|(?:a|\d+|one|two|three|few|couple of) (?:days?|"
    r"weeks?|months?|years?) (?:ago|from now)|(?:last|next|this|past) (?:night|morning|week|"
    r"weekend|month|year|spring|summer|autumn|fall|winter|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday))\b",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(
    r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves|let's|let\u2019s)\b"
    r"|\b(?:i|we)['\u2019](?:m|ve|ll|d|re)\b",
    re.IGNORECASE,
)
_PHATIC = re.compile(
    r"\W*(?:thanks|thank you|thx|hey|hi|hello|bye|goodbye|good night|congrats|"
    r"congratulations|good luck|take care|see you|talk soon|talk to you|cheers)\b",
    re.IGNORECASE,
)
"""A sentence that opens with a greeting, thanks or a farewell says nothing of its own in
the first person ("Thanks, I appreciate it!")."""
_FORMULAS = re.compile(
    r"\b(?:let(?:ting)?|keep(?:ing)?) me (?:know|posted)\b|\bbear with me\b|"
    r"\b(?:excuse|pardon) me\b|\b(?:thank you|thanks) (?:for|so much)\b",
    re.IGNORECASE,
)
"""Set phrases of courtesy whose pronoun states nothing ("let me know", "bear with me")."""


def summary_of(summary_id: str, folded: int) -> str:
    """What a recall result says of a consolidation summary: how many memories it stands
    for, and where to see them."""
    return (
        f"{folded} memories (ferrex://memory/{summary_id} or "
        f"ferrex consolidate --show {summary_id})"
    )


@dataclass(frozen=True, slots=True)
class Statement:
    """What a piece states: the kinds found (empty: it states nothing) and the tokens that
    state it (numbers, identifiers, names, dates; lower-cased), which a restatement repeats."""

    kinds: tuple[str, ...]
    tokens: frozenset[str]


def speaker(text: str) -> str | None:
    """The speaker's label a turn opens with ("Caroline" of "Caroline: I went"), if any."""
    m = _LABEL.match(text)
    return m.group(1) if m else None


def _is_speaker(word: str, speakers: Set[str]) -> bool:
    """A word that names one of the conversation's speakers, whole or shortened ("Mel" of
    "Melanie"): addressing the other side is not a fact."""
    low = word.lower()
    for name in speakers:
        first = name.split()[0].lower()
        if low == first or (len(low) >= 3 and first.startswith(low)):
            return True
    return False


def _names(sentence: str, speakers: Set[str]) -> list[str]:
    found: list[str] = []
    for m in _NAME_WORD.finditer(sentence):
        word = m.group(0)
        inner_capital = any(c.isupper() for c in word[1:])
        if word in _I_FORMS or not (word[0].isupper() or inner_capital):
            continue
        if (len(word) >= 2 and word.isupper()) or (inner_capital and not word.isupper()):
            found.append(word)  # an acronym (LGBTQ, VACUUM), a camel-cased name (PostgreSQL)
            continue
        if _SENTENCE_OPENS.search(sentence, 0, m.start()) or _is_speaker(word, speakers):
            continue  # any sentence opens with a capital; a speaker is not a fact
        found.append(word)
    return [w for w in found if not _is_speaker(w, speakers)]


def statements(text: str, speakers: Set[str] = frozenset()) -> Statement:
    """What a turn or sentence states, by its structure alone: a number (a count, a version,
    an amount, a time), an identifier (``snake_case``, ``dotted.names``, ``a/b``, `` `code` ``
    or a quoted term), a capitalised name that is not at a sentence's start nor a speaker's
    (``speakers``: the labels of the group's turns), an acronym, a date (``yesterday``,
    ``last week``, ``3 days ago``; month and weekday names are names), or a statement in the
    first person that is not a question nor a greeting or thanks (what the speaker did, has,
    decided or prefers). A speaker's label opening the text is not part of what it states."""
    label = _LABEL.match(text)
    body = text[label.end() :] if label else text
    kinds: list[str] = []
    tokens: set[str] = set()
    numbers = _NUMBER.findall(body)
    identifiers = [i for i in _IDENTIFIER.findall(body) if not i.isdigit()]
    names = [n for sentence in sentences(body) for n in _names(sentence, speakers)]
    dates = _RELATIVE_DATE.findall(body)
    for kind, found in (("number", numbers), ("identifier", identifiers), ("name", names),
                        ("date", dates)):  # fmt: skip
        if found:
            kinds.append(kind)
            tokens.update(f.lower().strip(_QUOTES) for f in found)
    if any(
        _FIRST_PERSON.search(_FORMULAS.sub(" ", s)) and not s.endswith("?") and not _PHATIC.match(s)
        for s in sentences(body)
    ):
        kinds.append("first person")
    return Statement(tuple(kinds), frozenset(tokens))


@dataclass(frozen=True, slots=True)
class Source:
    """One episode to fold: its id, its text, and the entities it was stored about (a memory
    linked to an entity states something of it, whatever its words)."""

    memory_id: str
    text: str
    entities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Piece:
    """One kept sentence: the source it came from and where it sits in the summary."""

    memory_id: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    pieces: tuple[Piece, ...]
    source_chars: int
    """How many characters the sources held (the summary's ``len(text)`` beside it is the
    shrink)."""

    def sentences(self) -> list[tuple[str, str]]:
        """(source id, sentence) for each kept sentence, in order."""
        return [(p.memory_id, self.text[p.start : p.end]) for p in self.pieces]


@dataclass(frozen=True, slots=True)
class _Piece:
    order: int
    memory_id: str
    text: str
    words: frozenset[str]
    stated: Statement


def _damped(s: _Piece) -> float:
    return math.pow(max(len(s.text), 1), LENGTH_DAMPING)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, each an exact slice of it with outer space trimmed."""
    found: list[str] = []
    start = 0
    for cut in _SENTENCE_END.finditer(text):
        piece = text[start : cut.start()].strip()
        if piece:
            found.append(piece)
        start = cut.end()
    tail = text[start:].strip()
    if tail:
        found.append(tail)
    return found


def content_words(text: str) -> frozenset[str]:
    label = _LABEL.match(text)
    body = text[label.end() :] if label else text
    return frozenset(
        w
        for w in (m.group(0).lower() for m in _WORD.finditer(body))
        if len(w) >= 3 and w not in _FUNCTION_WORDS
    )


def restates(piece: str, said_words: Set[str], said_tokens: Set[str],
             speakers: Set[str] = frozenset()) -> bool:  # fmt: skip
    """Whether ``piece`` only says again what one kept piece said (``said_words``, its
    content words; ``said_tokens``, the tokens it states): it has content words, and every
    one of them and every token it states (:func:`statements`) are among those."""
    words = content_words(piece)
    stated = statements(piece, speakers)
    return bool(words) and words <= said_words and stated.tokens <= said_tokens


def summarize(
    sources: Sequence[Source], *, keep_ratio: float = DEFAULT_KEEP_RATIO, unit: Unit = "sentence"
) -> Summary:
    """The extractive summary of ``sources`` (in the order given: the episodes' order).

    ``unit="turn"``: the pieces are whole sources (each one's text, outer space trimmed)
    rather than their sentences, so a kept episode is kept whole. Every piece that states
    something is kept (see the module's rule); ``keep_ratio`` bounds only what is kept
    beside them."""
    if not 0 < keep_ratio <= 1:
        raise ValueError("keep_ratio must be in (0, 1]")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}")
    speakers = {name for s in sources if (name := speaker(s.text)) is not None}
    pool: list[_Piece] = []
    seen: set[str] = set()
    total = 0
    for source in sources:
        total += len(source.text)
        chunks = sentences(source.text) if unit == "sentence" else [source.text.strip()]
        for text in (c for c in chunks if c):
            key = " ".join(text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            stated = statements(text, speakers)
            if source.entities:
                stated = Statement((*stated.kinds, "entity"), stated.tokens | set(source.entities))
            pool.append(_Piece(len(pool), source.memory_id, text, content_words(text), stated))
    budget = min(total, max(MIN_BUDGET, int(total * keep_ratio)))
    kept: list[_Piece] = []
    said_words: set[str] = set()
    said_tokens: set[str] = set()
    used = 0

    def keep(p: _Piece) -> None:
        nonlocal used
        used += len(p.text) + (1 if kept else 0)
        kept.append(p)
        said_words.update(p.words)
        said_tokens.update(p.stated.tokens)

    left: list[_Piece] = []
    for p in pool:  # what states something, unless it says again what one kept piece said
        if not p.stated.kinds:
            left.append(p)
        elif not p.words or not any(
            p.words <= k.words and p.stated.tokens <= k.stated.tokens for k in kept
        ):
            keep(p)
    weight = Counter(w for p in pool for w in p.words)
    while left:  # then what covers the group's words best, while it adds more than it repeats
        best: _Piece | None = None
        best_score = 0.0
        for p in left:
            new = p.words - said_words
            if len(new) <= FILL_NEW_SHARE * len(p.words):
                continue
            score = sum(weight[w] for w in new) / _damped(p)
            if score > best_score:  # strict: the earliest wins a tie
                best, best_score = p, score
        if best is None:
            break
        left.remove(best)
        if not kept or used + len(best.text) + 1 <= budget:
            keep(best)
    if not kept and pool:
        keep(pool[0])  # nothing to say at all: the first piece stands for the group
    kept.sort(key=lambda p: p.order)
    parts: list[str] = []
    pieces: list[Piece] = []
    at = 0
    for p in kept:
        if parts:
            at += 1
        pieces.append(Piece(p.memory_id, at, at + len(p.text)))
        parts.append(p.text)
        at += len(p.text)
    return Summary(" ".join(parts), tuple(pieces), total)
