"""Whether a value looks like a secret, by its shape: what :mod:`ferrex.rules.secrets` asks of
a value after a secret's name (``password=…``, "the password for orbit is …", a fact's
object under the predicate "password").

:func:`looks_random` is the test of a value assigned to a name (``token=…``): long enough,
mixed classes of characters, Shannon entropy near what its length allows, not words joined
nor a unit repeated. :func:`said_secret` is the test of a value said in prose (after
"the password is"): six or more characters mixing letters with digits or symbols, not a
word, not words and numbers joined (:func:`phrase`) unless a made-up part is glued to them
(:func:`glued`). Neither accepts a reference to where a secret is kept
(:func:`assigned_reference`: ``${VAR}``, ``DB_PASSWORD``, ``settings.API_TOKEN``) or a
placeholder (``<token>``, ``changeme``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from typing import Final

MIN_VALUE_CHARS: Final = 8
"""A value after ``token=`` (or ``secret=``, ``api_key=``) shorter than this is not treated
as a likely secret."""
MIN_PASSWORD_CHARS: Final = 6
"""Nor one after ``password=`` shorter than this: people choose passwords (``hunter2``), and
what keeps words and names out is the rest of :func:`looks_random`, not the length."""
MAX_VALUE_CHARS: Final = 512


def shannon_entropy(text: str) -> float:
    """Shannon entropy of ``text``'s characters, in bits per character (0 for "")."""
    if not text:
        return 0.0
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def entropy_floor(length: int) -> float:
    """The entropy (bits per character) a value of ``length`` characters needs to count as
    random: 80 % of the most its length allows (``log2(length)``), capped at 3.0.

    A random value of *n* characters drawn from 60 or more symbols has nearly ``log2(n)``
    bits per character while n is small (few repeats), and 4 to 6 once it is long; words,
    repeated digits and patterns stay well below (measured by ``tools/eval_secrets.py``).
    """
    return min(3.0, 0.8 * math.log2(max(length, 2)))


_SAID_CHARS: Final = 6
"""The fewest characters of a password said in prose (a PIN's digits: :data:`_PIN`)."""
# A PIN or a passcode of digits; shorter, a number after ``pin`` is a pin's number
# (``Pin(pin=13)``, ``led_pin: 2``): boards have tens of pins, cards have 4-digit PINs.
_PIN = re.compile(r"[0-9]{4,12}")

_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\.?")
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]+")
_PLACEHOLDER = re.compile(
    r"(?i)(?:[*x\u2022.#-]+|\$[A-Z0-9_]*|\$\{[^}]*\}|\{\{.*\}\}|<[^>]*>|%\(\w+\)s|\$\d\$.*|\$2[aby]?\$.*|\$argon2.*|%s?|"
    r"your[_-].*|.*[_-]here|"
    r"(?:redacted|changeme|example|placeholder|secret|password|passwd|pass|pwd|token|user|"
    r"username|none|null|nil|empty|unset|hidden|masked|dummy|fake|todo|tbd)s?)"
)
# Words and short numbers joined by separators: ``ready-for-review``, ``see-vault-42``,
# ``2fa-enabled``, ``summary-v2``.
_WORDY_PART = re.compile(
    r"[a-z]+|[A-Z][a-z]+|[A-Z]+|\d{1,4}|\d{1,2}[a-z]{1,3}|[A-Za-z]{1,3}\d{1,3}"
)
_WORD_SEPARATORS = re.compile(r"[-_./:]+")


def said_secret(value: str, rule: str) -> bool:
    """Whether a token said to be a password looks like one, by its structure: a PIN's
    digits (after "pin" or "passcode"), a run of six or more digits, or six or more
    characters mixing letters with digits or symbols that are not a phrase
    (:func:`phrase`), a name (``DB_PASSWORD``, ``vault.prod``) or a placeholder. A word
    alone ("stored", "required", "**redacted**") is never one: a password that is an
    English word is out of reach, it reads like the sentences about passwords that must stay
    clean."""
    core = value.rstrip("!?")
    if core.isdigit():
        return (
            rule in ("pin", "password")
            and not repeats(core)
            and (
                _PIN.fullmatch(core) is not None
                if rule == "pin"
                else _SAID_CHARS <= len(core) <= 64
            )
        )
    parts = _PARTS.findall(core)
    least = _SAID_CHARS if rule in ("pin", "password") else MIN_VALUE_CHARS
    if len(core) < least or not any(c.isalpha() for c in core):
        return False
    if len(parts) == 1 and parts[0].isalpha():  # a word, quoted or starred
        return False
    # A call is code (``cookieStore.get(``): a reference when what is called is one.
    called = value.split("(", 1)[0]
    return (
        classes(value) >= 2
        and not phrase(core)
        and not assigned_reference(value)
        and not (called and assigned_reference(called))
    )


# Technical names that end in a number: an encoding, a hash, a protocol, a key size.
_TECHNICAL = re.compile(
    r"(?i)(?:base|sha|md|utf|wpa|oauth|https?|ipv|x|pkcs|aes|rsa|argon|pbkdf|crc|tls|ssl|ed|v)"
    r"[0-9]+[a-z]?"
)
_PARTS = re.compile(r"[A-Za-z0-9]+")


def phrase(value: str) -> bool:
    """Whether ``value`` reads as words, numbers and technical names joined (``SHA-256``,
    ``base64``, ``2FA-protected``, ``sha256(salt+pw)``) rather than a password: each part
    a word, a short number or a technical name, or any part a lower-case word of four
    letters or more beside others (``…-encoded``, ``…-based``). A value with a made-up
    part (:func:`glued`) is none, whatever words are glued to it
    (``Tr0ub4dor&3-staging``)."""
    parts = _PARTS.findall(value)
    if glued(value, parts):
        return False
    if len(parts) > 1 and any(p.isalpha() and p.islower() and len(p) >= 4 for p in parts):
        return True
    return all(_WORDY_PART.fullmatch(p) or _TECHNICAL.fullmatch(p) for p in parts)


# A symbol inside a run of letters and digits, as people put one in a password
# (``Tr0ub4dor&3``, ``Pl4net#Nine``); not ``@`` (an address), ``+``, ``-``, ``_``, ``.``.
_INNER_SYMBOL = re.compile(r"[A-Za-z0-9][!#$%^&*~][A-Za-z0-9]")
_GLUED_SWITCHES: Final = 4
"""How many switches between letters and digits make a part made up (``Tr0ub4dor``,
``s3cr3t``): a word and a number (``base64url``, ``utf8mb4``, ``x86``) switch fewer times."""


def glued(value: str, parts: list[str]) -> bool:
    """Whether ``value`` holds a made-up part: a symbol inside letters and digits, or a part
    switching between letters and digits :data:`_GLUED_SWITCHES` times or more."""
    if _INNER_SYMBOL.search(value):
        return True
    return any(
        sum(a.isdigit() != b.isdigit() for a, b in pairwise(p)) >= _GLUED_SWITCHES for p in parts
    )


def placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is not None


def classes(value: str) -> int:
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def looks_random(
    value: str, floor: Callable[[int], float] | None = None, *, min_chars: int = MIN_VALUE_CHARS
) -> bool:
    """Whether ``value`` is long, mixed and high-entropy enough to be a generated secret.

    It needs ``min_chars`` to :data:`MAX_VALUE_CHARS` characters, a digit and two
    classes of characters (or three classes), :func:`entropy_floor`, and must not be words
    and short numbers joined by separators (``ready-for-review``, ``Summer-2024``) nor a
    short unit repeated.
    ``floor`` replaces :func:`entropy_floor` (the evaluation sweeps it).
    """
    floor = floor or entropy_floor
    kinds = classes(value)
    return (
        min_chars <= len(value) <= MAX_VALUE_CHARS
        and (kinds >= 3 or (kinds == 2 and any(c.isdigit() for c in value)))
        and shannon_entropy(value) >= floor(len(value))
        and not wordy(value)
        and not repeats(value)
    )


def repeats(value: str) -> bool:
    """Whether ``value`` is a short unit repeated (``Ab1!Ab1!Ab1!``), however random the
    unit: a pattern, not a generated secret."""
    n = len(value)
    return any(value == (value[:p] * (n // p + 1))[:n] for p in range(1, min(16, n // 2) + 1))


def wordy(value: str) -> bool:
    parts = [p for p in _WORD_SEPARATORS.split(value) if p]
    return bool(parts) and all(_WORDY_PART.fullmatch(p) for p in parts)


def assigned_secret(value: str, rule: str) -> bool:
    """A value after a secret's name that is one, not a reference to where one is kept.
    After ``pin`` or ``passcode``, :data:`_PIN`'s digits are one too."""
    if assigned_reference(value):
        return False
    if rule == "pin" and _PIN.fullmatch(value) and not repeats(value):
        return True
    least = MIN_PASSWORD_CHARS if rule == "password" else MIN_VALUE_CHARS
    return looks_random(value, min_chars=least)


def assigned_reference(value: str) -> bool:
    """Whether ``value`` names where a secret is kept (a variable, ``${VAR}``, a dotted
    path) or is a placeholder."""
    # Markdown escapes its underscores (``process.env.API\\_KEY``): a reference still.
    plain = value.replace("\\", "")
    return bool(placeholder(plain) or _ENV_NAME.fullmatch(plain) or _DOTTED_NAME.fullmatch(plain))
