"""BM25 sparse vectors for Qdrant: pure, deterministic, and kind to identifiers.

ferrex computes the sparse side of hybrid search itself and sends plain ``(indices, values)``
vectors to every Qdrant backend, whose IDF modifier supplies the inverse document frequency;
so the embedded engine and a remote server rank alike. The recipe is Qdrant's own BM25
(DESIGN.md section 6), plus one addition for identifiers.

Tokens of a text, in this order:

1. **Word tokens** (exactly Qdrant's ``Bm25`` recipe): lowercase the text with
   ``str.lower``; take every maximal run of ``[^\\W_]+`` (Unicode letters and digits, so ``_``
   and all punctuation split); drop the English stop words of :data:`ENGLISH_STOP_WORDS`
   (matched before stemming); stem what is left with the Snowball English stemmer.
2. **Identifier tokens** (ferrex's addition): every maximal run of letters and digits joined
   by the joiners ``- . / \\ _ : # @`` (a joiner run may be longer than one character, as in
   ``https://``), optionally led by a ``#``, that contains at least one joiner, is also emitted
   whole: lowercased, never stemmed, never dropped as a stop word. ``INC-90312``,
   ``v2.3.1``, ``src/app/main.py``, ``#260`` (from ``PR #260``) and ``snake_case`` are such
   tokens; a trailing joiner is not part of one (``v2.3.1.`` at the end of a sentence gives
   ``v2.3.1``). An identifier with a path separator (``/`` or ``\\``) also emits each of its
   segments that is itself an identifier, so ``src/app/main.py`` emits ``main.py`` too and a
   query for the file name alone matches. Single runs such as ``E1234`` need nothing extra:
   the word token already keeps them whole.

Word tokens alone would make ``INC-90312`` and ``INC-90313`` share the token ``inc`` and
differ only in their number tokens; the identifier token makes an exact identifier query
match its own document on one more, rarer token, and never the neighbouring identifier.

A token's index is ``abs(murmur3_32(token, seed=0))`` of its UTF-8 bytes (the signed 32-bit
MurmurHash3, as Qdrant computes it). Tokens whose indices collide are one term.

Weights. A document token gets ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``,
where ``tf`` counts the token in the document, ``|d|`` counts all its tokens (word and
identifier tokens, after stop-word removal), ``k1 = 1.2`` and ``b = 0.75``. A query gets
weight 1.0 per distinct token. Indices are sorted ascending and unique. An empty text (or one
of stop words only) gives an empty vector.

``avgdl`` defaults to :data:`DEFAULT_AVG_DOC_LEN` = 32, not Qdrant's 256: ferrex stores
memories (a fact, an event, a step, mostly one to three sentences), and with 256 every memory
would look short and the length normalisation would barely act. The weights are written into
the vector index, so ``avgdl`` is part of :attr:`Bm25Encoder.identity`; changing it means a
replay of the Qdrant projection, never a mix of old and new weights.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol, cast

import mmh3
import py_rust_stemmers  # type: ignore[import-untyped]

K1: Final = 1.2
SPELLING_WEIGHT: Final = 0.5
"""A query token that only another spelling of the question's words gives weighs this much
(:meth:`Bm25Encoder.encode_query`): a memory that writes ``cart-svc`` matches ``cart service``
on ``cart`` and half of each of ``svc`` and ``cart-svc``, about what the same words score."""
B: Final = 0.75
DEFAULT_AVG_DOC_LEN: Final = 32.0

#: Bumped whenever a tokenisation rule changes, so projections notice and rebuild.
RECIPE_VERSION: Final = 1

# English stop words. The tokenizer splits on apostrophes, so contractions appear only as
# their pieces ("don", "t", "ll"). Checked against Qdrant Edge's ``Bm25`` by a unit test.
_STOP_WORDS_TEXT: Final = """
    i me my myself we our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself
    they them their theirs themselves what which who whom this that these those
    am is are was were be been being have has had having do does did doing
    a an the and but if or because as until while of at by for with about against
    between into through during before after above below to from up down in out on off
    over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very
    s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn
    hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn
"""
ENGLISH_STOP_WORDS: Final[frozenset[str]] = frozenset(_STOP_WORDS_TEXT.split())

_WORD = re.compile(r"[^\W_]+")
_IDENTIFIER = re.compile(r"#?[^\W_]+(?:[-./\\_:#@]+[^\W_]+)*")
_PATH_SEPARATOR = re.compile(r"[/\\]+")
_JOINERS: Final = frozenset("-./\\_:#@")


class _Stemmer(Protocol):
    def stem_word(self, word: str) -> str: ...


# py_rust_stemmers ships no type information; the one method used is typed by _Stemmer.
_STEMMER = cast(_Stemmer, py_rust_stemmers.SnowballStemmer("english"))


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector as Qdrant takes it: ascending unique ``indices`` and their ``values``."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.indices)

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.indices, self.values, strict=True))


def word_tokens(text: str) -> list[str]:
    """Qdrant's BM25 word tokens of ``text``: split, stop words dropped, stemmed."""
    stem = _STEMMER.stem_word
    return [stem(word) for word in _WORD.findall(text.lower()) if word not in ENGLISH_STOP_WORDS]


def identifier_tokens(text: str) -> list[str]:
    """The whole-identifier tokens of ``text`` (see the module docstring), in text order."""
    return _identifiers(text.lower())


def _identifiers(lowered: str) -> list[str]:
    # A run of the identifier pattern holds a joiner exactly when it is not all letters and
    # digits: ``[^\W_]`` is what ``str.isalnum`` accepts, checked in C.
    tokens: list[str] = []
    for candidate in _IDENTIFIER.findall(lowered):
        if candidate.isalnum():
            continue
        tokens.append(candidate)
        if "/" in candidate or "\\" in candidate:
            segments = _PATH_SEPARATOR.split(candidate)
            tokens.extend(s for s in segments if _has_joiner(s) and _IDENTIFIER.fullmatch(s))
    return tokens


def tokens(text: str) -> list[str]:
    """All tokens of ``text``: word tokens, then identifier tokens."""
    return word_tokens(text) + identifier_tokens(text)


def token_index(token: str) -> int:
    """The sparse index of ``token``: ``abs`` of its signed 32-bit MurmurHash3, seed 0."""
    return abs(mmh3.hash(token, 0, signed=True))


def _has_joiner(token: str) -> bool:
    return any(char in _JOINERS for char in token)


class Bm25Encoder:
    """Encodes documents and queries into BM25 sparse vectors with fixed parameters."""

    def __init__(
        self, *, avg_doc_len: float = DEFAULT_AVG_DOC_LEN, k1: float = K1, b: float = B
    ) -> None:
        if avg_doc_len <= 0:
            raise ValueError(f"avg_doc_len must be positive, got {avg_doc_len}")
        if k1 < 0:
            raise ValueError(f"k1 must not be negative, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b must be within [0, 1], got {b}")
        self.avg_doc_len = avg_doc_len
        self.k1 = k1
        self.b = b

    @property
    def identity(self) -> str:
        """Everything that shapes the stored weights; a projection rebuilds when it changes."""
        return f"bm25-v{RECIPE_VERSION};k1={self.k1:g};b={self.b:g};avgdl={self.avg_doc_len:g}"

    def encode_document(self, text: str) -> SparseVector:
        """The document-side vector of ``text``: saturated, length-normalised term weights."""
        # Counted by index, not by string: two tokens that collide are one term to Qdrant.
        term_counts = Counter(_TERMS.indices(text))
        doc_len = sum(term_counts.values())
        norm = self.k1 * (1.0 - self.b + self.b * doc_len / self.avg_doc_len)
        top = self.k1 + 1.0
        ordered = sorted(term_counts.items())
        return SparseVector(
            indices=tuple(index for index, _ in ordered),
            values=tuple(tf * top / (tf + norm) for _, tf in ordered),
        )

    def encode_query(
        self, text: str, spellings: Sequence[str] = (), weight: float = SPELLING_WEIGHT
    ) -> SparseVector:
        """The query-side vector of ``text``: weight 1.0 for each distinct token; and
        ``weight`` for each token of the other ``spellings`` of its words that ``text``
        lacks (``cart service`` with ``cart-svc``: the tokens ``svc`` and ``cart-svc``)."""
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"a spelling's weight must be within [0, 1], got {weight}")
        weights = dict.fromkeys(_TERMS.indices(text), 1.0)
        for spelling in spellings if weight > 0 else ():
            for index in _TERMS.indices(spelling):
                weights.setdefault(index, weight)
        ordered = sorted(weights.items())
        return SparseVector(tuple(i for i, _ in ordered), tuple(w for _, w in ordered))


class _TermIndices:
    """The sparse indices of a text's tokens (:func:`tokens`, then :func:`token_index`), fast.

    A word's index (its stem's hash, or none for a stop word) is remembered, so the common
    words of a long replay are looked up in a dict instead of stemmed and hashed again; the
    result is the same as hashing :func:`tokens` one by one. At most ``limit`` words are
    remembered (about 100 bytes each); words beyond are computed every time.
    """

    def __init__(self, limit: int = 65_536) -> None:
        self.limit = limit
        self._of_word: dict[str, int | None] = {}

    def indices(self, text: str) -> list[int]:
        lowered = text.lower()
        of_word = self._of_word
        found: list[int] = []
        for word in _WORD.findall(lowered):
            index = of_word.get(word, -1)
            if index == -1:
                index = (
                    None if word in ENGLISH_STOP_WORDS else token_index(_STEMMER.stem_word(word))
                )
                if len(of_word) < self.limit:
                    of_word[word] = index
            if index is not None:
                found.append(index)
        found.extend(token_index(token) for token in _identifiers(lowered))
        return found


_TERMS: Final = _TermIndices()


_DEFAULT_ENCODER: Final = Bm25Encoder()


def encode_document(text: str) -> SparseVector:
    """:meth:`Bm25Encoder.encode_document` with the default parameters."""
    return _DEFAULT_ENCODER.encode_document(text)


def encode_query(text: str) -> SparseVector:
    """:meth:`Bm25Encoder.encode_query` with the default parameters."""
    return _DEFAULT_ENCODER.encode_query(text)
