"""Likely secrets in a text, by their known shapes: what the store keeps out of memory.

An agent pastes what it sees, and a memory is recalled verbatim, to any agent that may see
it, for as long as it lives. So by default (``store.secrets = "refuse"``) a store whose text
carries a likely secret is refused; ``redact`` stores it with each secret replaced by a
marker (``[redacted:aws_access_key]``); ``allow`` keeps the text as sent.

:func:`find_secrets` reports each likely secret in a text as a :class:`Finding` (its kind and
character span); it never returns the secret's text, so nothing that reports a finding can
leak it. Kinds, and the shape each is recognised by:

- ``private_key``: a PEM block ``-----BEGIN … PRIVATE KEY-----`` (RSA, EC, DSA, OPENSSH,
  ENCRYPTED, PGP … BLOCK) with a body, up to its END line or, in a cut paste (which still
  leaks the key), to the end of its base64 lines;
- ``aws_access_key``: ``AKIA``/``ASIA`` and 16 upper-case letters and digits;
  ``aws_secret_key``: 40 base64 characters after a name like ``aws_secret_access_key``;
- ``github_token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and 36 or more letters and
  digits, or ``github_pat_`` and 40 or more;
- ``slack_token``: ``xoxa-``/``xoxb-``/``xoxp-``/``xoxr-``/``xoxs-``, groups of digits and
  a last part mixing letters and digits;
  ``slack_webhook``: ``hooks.slack.com/services/T…/B…/…``;
- ``stripe_key``: ``sk_live_``/``rk_live_`` (and ``_test_``) and 16 or more characters;
- ``anthropic_key``: ``sk-ant-`` and a long body; ``openai_key``: ``sk-`` (optionally
  ``proj-``, ``svcacct-``, ``admin-``) and 32 or more characters mixing upper and lower
  case and digits;
- ``google_api_key``: ``AIza`` and 35 characters; ``docker_token``: ``dckr_pat_`` and 20 or
  more;
- ``jwt``: three base64url parts whose first decodes to a JSON object naming an ``alg``;
- ``url_password``: ``scheme://user:password@host`` (a placeholder password such as
  ``***``, ``<password>`` or ``${DB_PASS}`` is not one);
- ``password``, ``secret``, ``token``, ``api_key``: the value right after such a name and
  ``=`` or ``:`` (``password=…``, ``"api_key": "…"``, ``Authorization: Bearer …``) when it
  looks random: at least :data:`MIN_VALUE_CHARS` characters of two or more classes
  (lower, upper, digit, symbol), Shannon entropy of at least :func:`entropy_floor` bits per
  character, and not a reference to one kept elsewhere (``${VAR}``, ``<token>``,
  ``os.environ["X"]``, ``DB_PASSWORD``).

What is *not* a secret, and must never be caught (``golden_set/secrets.jsonl`` holds such
lines, ``tools/eval_secrets.py`` measures it on real conversations): hashes and commit ids,
UUIDs, ferrex ids, base64 of ordinary words, versions, URLs without a password, and prose
about passwords ("the password reset flow", "token: expired").
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

SecretsMode = Literal["refuse", "redact", "allow"]
SECRETS_MODES: Final[tuple[SecretsMode, ...]] = ("refuse", "redact", "allow")

MIN_VALUE_CHARS: Final = 8
"""A value after ``password=`` shorter than this is not treated as a likely secret."""
MAX_VALUE_CHARS: Final = 512


@dataclass(frozen=True, slots=True)
class Finding:
    """One likely secret in a text: its kind and where it is (``text[start:end]``)."""

    kind: str
    start: int
    end: int


def marker(kind: str) -> str:
    """What a redacted secret of ``kind`` is replaced with."""
    return f"[redacted:{kind}]"


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


def find_secrets(text: str) -> list[Finding]:
    """The likely secrets in ``text``, in order, none overlapping (the first found wins)."""
    found: list[Finding] = []
    for finding in _candidates(text):
        if not any(f.start < finding.end and finding.start < f.end for f in found):
            found.append(finding)
    return sorted(found, key=lambda f: f.start)


def find_in_named_value(name: str, value: str) -> list[Finding]:
    """The likely secrets in ``value``, a structured field's value under the key ``name``
    (a context's ``{"db_password": "…"}``): those :func:`find_secrets` finds, or else the
    whole value when ``name`` names a secret and the value looks like one."""
    found = find_secrets(value)
    if found:
        return found
    named = _NAME.fullmatch(name)
    stripped = value.strip()
    if named is None or not _assigned_secret(stripped):
        return []
    kind = next(k for k, _ in _NAMED_KINDS if named.group(k) is not None)
    start = len(value) - len(value.lstrip())
    return [Finding(kind, start, start + len(stripped))]


def redact(text: str, findings: list[Finding] | None = None) -> str:
    """``text`` with every finding replaced by its :func:`marker`."""
    spans = find_secrets(text) if findings is None else sorted(findings, key=lambda f: f.start)
    parts: list[str] = []
    at = 0
    for f in spans:
        parts.append(text[at : f.start])
        parts.append(marker(f.kind))
        at = f.end
    parts.append(text[at:])
    return "".join(parts)


# -- shapes -----------------------------------------------------------------------------------

# The header, any ``Name: value`` lines (PGP's Version, an encrypted key's DEK-Info), the
# base64 lines, and the END line when it is there. Possessive, so a long body never
# backtracks.
_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[ \t]*+\r?\n?"
    r"(?:[A-Za-z-]++:[^\n]*+\n)*+\s*+"
    r"(?P<body>(?:[ \t]*+[A-Za-z0-9+/=]++[ \t]*+\r?\n?)*+)"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
)
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")

# Fixed prefixes with their bodies. The look-behind and look-ahead keep a match from
# starting or ending inside a longer run of the same characters.
_TOKEN_EDGE = r"(?<![A-Za-z0-9_-])"
_TOKEN_END = r"(?![A-Za-z0-9_-])"
_SHAPES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("aws_access_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("github_token", re.compile(_TOKEN_EDGE + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _TOKEN_END)),
    ("github_token", re.compile(_TOKEN_EDGE + r"github_pat_[A-Za-z0-9_]{40,255}" + _TOKEN_END)),
    (
        "slack_token",
        re.compile(
            _TOKEN_EDGE + r"xox[abprs]-(?:[0-9]{1,20}-){1,4}[A-Za-z0-9]{8,250}" + _TOKEN_END
        ),
    ),
    (
        "slack_webhook",
        re.compile(
            r"hooks\.slack\.com/services/T[A-Za-z0-9]{6,}/B[A-Za-z0-9]{6,}/[A-Za-z0-9]{16,}"
        ),
    ),
    (
        "stripe_key",
        re.compile(_TOKEN_EDGE + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}" + _TOKEN_END),
    ),
    ("anthropic_key", re.compile(_TOKEN_EDGE + r"sk-ant-[A-Za-z0-9_-]{32,250}" + _TOKEN_END)),
    (
        "openai_key",
        re.compile(
            _TOKEN_EDGE + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,250}" + _TOKEN_END
        ),
    ),
    ("docker_token", re.compile(_TOKEN_EDGE + r"dckr_pat_[A-Za-z0-9_-]{20,250}" + _TOKEN_END)),
    ("google_api_key", re.compile(_TOKEN_EDGE + r"AIza[0-9A-Za-z_-]{35}" + _TOKEN_END)),
)
# Bodies that must mix letters and digits, so that ``sk-`` and ``xoxb-`` followed by words
# (``sk-learn-style-pipeline-…``) are not keys.
_MIXED: Final = frozenset(
    {"slack_token", "openai_key", "anthropic_key", "stripe_key", "docker_token"}
)

_JWT = re.compile(
    _TOKEN_EDGE + r"(eyJ[A-Za-z0-9_-]{6,})\.(eyJ[A-Za-z0-9_-]{4,}|[A-Za-z0-9_-]{8,})"
    r"\.([A-Za-z0-9_-]{8,})" + _TOKEN_END
)

_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,31}://"
    r"[^\s:/@?#\[\]]{1,128}:(?P<password>[^\s/@?#\[\]]{1,256})@[A-Za-z0-9\[]"
)

_AWS_SECRET = re.compile(
    r"(?i)aws[_\-. ]?(?:secret[_\-. ]?access[_\-. ]?key|secret[_\-. ]?key|secret)"
    r"[\"']?\s*(?:=|:|=>)\s*[\"']?(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

_NAMED_KINDS: Final[tuple[tuple[str, str], ...]] = (
    ("password", r"pass(?:word|wd|phrase)|pwd|(?<=[_.-])pass"),
    ("api_key", r"api[_-]?key|apikey|access[_-]?key"),
    ("secret", r"secret(?:[_-]?key)?"),
    ("token", r"token"),
)
# A name is one of the words above, led by any words joined with ``_ . -`` or in camel case
# (``db_password``, ``client-secret``, ``GITHUB_TOKEN``, ``accessToken``), and must end there
# (``token_count`` is no name).
# The leading words are bounded: unbounded, a long run of ``a-a-a-…`` took quadratic time.
_NAME_PATTERN = (
    r"(?:[A-Za-z0-9]{1,40}[_.-]|(?-i:[a-z0-9]{1,40}(?=[A-Z]))){0,6}(?:"
    + "|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _NAMED_KINDS)
    + ")"
)
_NAME = re.compile(f"(?i){_NAME_PATTERN}")
_NAMED = re.compile(
    r"(?i)(?<![A-Za-z0-9])"
    + _NAME_PATTERN
    + r"[\"']?[ \t]*(?:=|:|=>)[ \t]*(?:(?-i:Bearer|Token)[ \t]+)?"
    r"(?P<quote>[\"'`]?)(?P<value>[^\s\"'`,;<>(){}\[\]]{1,512})"
)
_BEARER = re.compile(r"(?<![A-Za-z0-9])Bearer[ \t]+(?P<value>[A-Za-z0-9._~+/-]{16,512}=*)")
_BASIC = re.compile(r"(?<![A-Za-z0-9])Basic[ \t]+(?P<value>[A-Za-z0-9+/]{12,512}={0,2})")

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


def _candidates(text: str) -> Iterator[Finding]:
    for m in _PEM.finditer(text):
        if _PEM_BODY.search(m.group("body")):
            yield Finding("private_key", m.start(), m.end())
    for kind, pattern in _SHAPES:
        for m in pattern.finditer(text):
            if kind in _MIXED and not _mixed(kind, m.group()):
                continue
            yield Finding(kind, m.start(), m.end())
    for m in _JWT.finditer(text):
        if _jwt_header(m.group(1)):
            yield Finding("jwt", m.start(), m.end())
    for m in _URL_PASSWORD.finditer(text):
        if not _placeholder(m.group("password")):
            yield Finding("url_password", m.start("password"), m.end("password"))
    for m in _AWS_SECRET.finditer(text):
        if looks_random(m.group("value")):
            yield Finding("aws_secret_key", m.start("value"), m.end("value"))
    for kind, start, value in assigned_values(text):
        if _assigned_secret(value):
            yield Finding(kind, start, start + len(value))
    for m in _BEARER.finditer(text):
        if _assigned_secret(m.group("value")):
            yield Finding("token", m.start("value"), m.end("value"))
    for m in _BASIC.finditer(text):
        if _basic_credentials(m.group("value")):
            yield Finding("password", m.start("value"), m.end("value"))


def assigned_values(text: str) -> Iterator[tuple[str, int, str]]:
    """(kind, position, value) of every value written after a secret's name and ``=`` or
    ``:``, secret-looking or not (:func:`looks_random` decides; the evaluation measures it)."""
    for m in _NAMED.finditer(text):
        value = m.group("value")
        if m.group("quote"):  # a quoted value ends at its quote
            value = value.split(m.group("quote"), 1)[0]
        value = value.rstrip(".!?:")
        if value:
            kind = next(k for k, _ in _NAMED_KINDS if m.group(k) is not None)
            yield kind, m.start("value"), value


def _mixed(kind: str, token: str) -> bool:
    """Whether a prefixed token's body mixes like a generated one: letters and digits, and
    for the ``sk-`` keys upper case, lower case and digits (``sk-2024-planning-notes`` is
    a slug, not a key)."""
    if kind == "slack_token":  # the random part is the last
        body = token.rsplit("-", 1)[1]
    else:
        body = token.split("-", 1)[1] if "-" in token else token.split("_", 2)[-1]
    digits = any(c.isdigit() for c in body)
    if kind in ("openai_key", "anthropic_key"):
        return digits and any(c.islower() for c in body) and any(c.isupper() for c in body)
    return digits and any(c.isalpha() for c in body)


def _basic_credentials(value: str) -> bool:
    """``Authorization: Basic …``: base64 of ``user:password``."""
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password) and decoded.isprintable()


def _jwt_header(part: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        header = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


def _placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is not None


def _classes(value: str) -> int:
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def looks_random(value: str, floor: Callable[[int], float] | None = None) -> bool:
    """Whether ``value`` is long, mixed and high-entropy enough to be a generated secret.

    It needs :data:`MIN_VALUE_CHARS` to :data:`MAX_VALUE_CHARS` characters, a digit and two
    classes of characters (or three classes), :func:`entropy_floor`, and must not be words
    and short numbers joined by separators (``ready-for-review``, ``Summer-2024``) nor a
    short unit repeated.
    ``floor`` replaces :func:`entropy_floor` (the evaluation sweeps it).
    """
    floor = floor or entropy_floor
    classes = _classes(value)
    return (
        MIN_VALUE_CHARS <= len(value) <= MAX_VALUE_CHARS
        and (classes >= 3 or (classes == 2 and any(c.isdigit() for c in value)))
        and shannon_entropy(value) >= floor(len(value))
        and not _wordy(value)
        and not _repeats(value)
    )


def _repeats(value: str) -> bool:
    """Whether ``value`` is a short unit repeated (``Ab1!Ab1!Ab1!``), however random the
    unit: a pattern, not a generated secret."""
    n = len(value)
    return any(value == (value[:p] * (n // p + 1))[:n] for p in range(1, min(16, n // 2) + 1))


def _wordy(value: str) -> bool:
    parts = [p for p in _WORD_SEPARATORS.split(value) if p]
    return bool(parts) and all(_WORDY_PART.fullmatch(p) for p in parts)


def _assigned_secret(value: str) -> bool:
    """A value after a secret's name that is one, not a reference to where one is kept."""
    # Markdown escapes its underscores (``process.env.API\\_KEY``): a reference still.
    plain = value.replace("\\", "")
    if _placeholder(plain) or _ENV_NAME.fullmatch(plain) or _DOTTED_NAME.fullmatch(plain):
        return False
    return looks_random(value)
