"""What the secret shapes read: a text with the disguises a secret can wear undone.

An agent may paste a secret in fullwidth letters, with zero-width characters inside, with
Cyrillic or Greek look-alikes of Latin letters, ``%XX``-escaped, or split by a newline.
:func:`fold_disguises` undoes those, :func:`join_broken_tokens` joins a token a newline
split, and :meth:`Scanned.source_span` places what :mod:`ferrex.rules.secrets` finds in the
folded text back in the text as sent, disguise included, so redaction removes all of it.
The text stored is never the folded one.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Finding:
    """One likely secret in a text: its kind and where it is (``text[start:end]``)."""

    kind: str
    start: int
    end: int


# Latin letters' look-alikes in Cyrillic and Greek (NFKC keeps them: they are letters of
# their own scripts), read as the Latin letter, for the scan only.
_HOMOGLYPHS: Final = str.maketrans(
    # Cyrillic: the first 27 letters of the second string
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0455\u0456\u0458\u0501\u04bb"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425"
    "\u0405\u0406\u0408"
    # Greek: its last 18
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4"
    "\u03a5\u03a7\u03bf\u03bd\u03b9\u03b1",
    "aeopcyxsijdhABEKMHOPCTYXSIJ" + "ABEZHIKMNOPTYXovia",
)
# What the fold rewrites: a character beyond ASCII, or a percent-encoded one.
_UNUSUAL = re.compile(r"[^\x00-\x7f]|%[0-9A-Fa-f]{2}")


@dataclass(frozen=True, slots=True)
class _Piece:
    """A run of a scanned text and where it came from: copied character for character, or
    one unit (a character, ``%5F``) rewritten as ``length`` characters."""

    at: int
    length: int
    source: int
    source_length: int
    copied: bool


@dataclass(frozen=True, slots=True)
class Scanned:
    """A text as the shapes read it, and the pieces that say where each character came from
    (none: the text itself)."""

    text: str
    pieces: tuple[_Piece, ...] = ()
    starts: tuple[int, ...] = ()

    def source_span(self, finding: Finding) -> Finding:
        """``finding`` placed in the text this one was made from; a rewritten unit is
        covered whole, and what the fold dropped inside a secret is part of it."""
        if not self.pieces:
            return finding
        first = self.pieces[bisect.bisect_right(self.starts, finding.start) - 1]
        last = self.pieces[bisect.bisect_right(self.starts, finding.end - 1) - 1]
        start = first.source + (finding.start - first.at if first.copied else 0)
        if last.copied:
            end = last.source + finding.end - last.at
        else:
            end = last.source + last.source_length
        return Finding(finding.kind, start, end)

    def joins_inside(self, finding: Finding) -> bool:
        """Whether a newline this text left out lies inside ``finding`` (made by
        :func:`join_broken_tokens`, its pieces after the first each start where one was)."""
        return any(finding.start < at < finding.end for at in self.starts[1:])


def _scanned(pieces: list[_Piece], parts: list[str]) -> Scanned:
    return Scanned("".join(parts), tuple(pieces), tuple(p.at for p in pieces))


def fold_disguises(text: str) -> Scanned:
    """``text`` with the disguises a secret can wear undone: compatibility forms folded by
    NFKC (fullwidth and mathematical letters), format characters (zero-width
    spaces and joiners, soft hyphens, direction marks) and combining marks dropped,
    Cyrillic and Greek look-alikes of Latin letters read as Latin, and ``%XX`` of a
    printable ASCII character decoded. The stored text is never this; findings are mapped
    back to it (:meth:`Scanned.source_span`)."""
    if text.isascii() and "%" not in text:
        return Scanned(text)
    parts: list[str] = []
    pieces: list[_Piece] = []
    at = 0

    def add(part: str, source: int, source_length: int, copied: bool) -> None:
        nonlocal at
        if not part:
            return
        last = pieces[-1] if pieces else None
        if copied and last is not None and last.copied and last.source + last.length == source:
            pieces[-1] = _Piece(last.at, last.length + len(part), last.source, 0, True)
        else:
            pieces.append(_Piece(at, len(part), source, source_length, copied))
        parts.append(part)
        at += len(part)

    done = 0
    for m in _UNUSUAL.finditer(text):
        add(text[done : m.start()], done, 0, True)
        unit = m.group()
        rewritten = _rewritten(unit)
        add(rewritten, m.start(), len(unit), rewritten == unit)
        done = m.end()
    add(text[done:], done, 0, True)
    return _scanned(pieces, parts)


def _rewritten(unit: str) -> str:
    if unit.startswith("%"):
        byte = int(unit[1:], 16)
        return chr(byte) if 0x21 <= byte <= 0x7E else unit
    if unicodedata.category(unit) in ("Cf", "Mn"):
        return ""
    return unicodedata.normalize("NFKC", unit).translate(_HOMOGLYPHS)


# A newline between two runs of a token's characters, four or more each.
_SPLIT = re.compile(
    r"(?<![A-Za-z0-9_+/=-])(?P<left>[A-Za-z0-9_+/=-]{4,}+)\r?\n(?=(?P<right>[A-Za-z0-9_+/=-]{4,}+))"
)


def _token_like(half: str) -> bool:
    """Whether half of a line-broken run looks like part of a token, not a word: a digit,
    ``_``, ``-`` or the other base64 symbols, or upper case after its first letter."""
    return any(c.isdigit() or not c.isalpha() for c in half) or any(c.isupper() for c in half[1:])


def join_broken_tokens(folded: Scanned) -> Scanned | None:
    """``folded`` without each newline that splits a token (both sides :func:`_token_like`),
    or None when there is none. A list of tokens one per line would run together, so the
    shapes read this beside ``folded``, not instead of it."""
    text = folded.text
    cuts = [
        (m.end("left"), m.end())
        for m in _SPLIT.finditer(text)
        if _token_like(m.group("left")) and _token_like(m.group("right"))
    ]
    if not cuts:
        return None
    parts: list[str] = []
    pieces: list[_Piece] = []
    done = at = 0
    for start, end in cuts:
        parts.append(text[done:start])
        pieces.append(_Piece(at, start - done, done, 0, True))
        at += start - done
        done = end
    parts.append(text[done:])
    pieces.append(_Piece(at, len(text) - done, done, 0, True))
    return _scanned(pieces, parts)
