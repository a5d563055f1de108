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
  ``aws_secret_key``: 40 base64 characters after a name like ``aws_secret_access_key``
  (and ``=``, ``:``, a space or "is"), or mixing upper case, lower case and digits within
  200 characters of an access key id;
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
  more; ``npm_token``: ``npm_`` and 36 letters and digits; ``gitlab_token``: ``glpat-``
  (``gldt-``, ``glrt-``, ``glptt-``, ``glft-``, ``gloas-``, ``glcbt-``) and 20 or more;
  ``huggingface_token``: ``hf_`` and 34 letters, a fifth or more of each case;
- ``azure_key``: the base64 after ``AccountKey=`` or ``SharedAccessKey=`` in a connection
  string;
- ``jwt``: three base64url parts whose first decodes to a JSON object naming an ``alg``;
- ``url_password``: ``scheme://user:password@host`` (a placeholder password such as
  ``***``, ``<password>`` or ``${DB_PASS}`` is not one);
- ``password``, ``secret``, ``token``, ``api_key``: the value right after such a name and
  ``=`` or ``:`` (``password=…``, ``pw: …``, ``credentials: …``, ``"api_key": "…"``,
  ``Authorization: Bearer …``) when it looks random
  (:func:`~ferrex.rules.secret_values.looks_random`): at least ``MIN_VALUE_CHARS``
  characters (``MIN_PASSWORD_CHARS`` after a password's name) of two or more classes
  (lower, upper, digit, symbol), Shannon entropy of at least ``entropy_floor`` bits per
  character, and not a reference to one kept elsewhere (``${VAR}``, ``<token>``,
  ``os.environ["X"]``, ``DB_PASSWORD``); after ``pin`` or ``passcode``, four digits or more
  are one too (a card's PIN), fewer are a board's pin number (``Pin(pin=13)``);
- a credential said in prose: "the password is …", "my password's …", "pw is …", "the
  staging database password for orbit is …", "password for the orbit db: …", "the API key
  for billing is …", "the deploy token is …" (``password``, ``api_key``, ``secret``,
  ``token`` by the noun), when the token looks like one (``hunter2``; words glued to a
  made-up part, ``Tr0ub4dor&3-staging``), not a word or words joined ("the password is
  stored in vault", "the token for CI is scoped to …", "2FA-protected"); a login written as
  a pair, "orbit creds: orbit_app / …" (the second is the password);
- a fact's object under a predicate naming a credential ("password", "db password", "API
  key") when it is one token that passes the test of a value after that name
  (:func:`find_in_named_value`), not "rotated", "in vault" or "12 characters minimum".

Disguises are undone before the shapes read a text (:mod:`ferrex.rules.secret_fold`:
:func:`fold_disguises`, :func:`join_broken_tokens`):
fullwidth and other compatibility forms (NFKC), zero-width and other format characters,
combining marks, Cyrillic and Greek look-alikes of Latin letters, ``%XX`` escapes, a token
split by a newline. The text stored is never the folded one; a finding's span is where the
secret is in the text as sent, disguise included, so redaction removes all of it.

Out of reach, by design or for want of a shape: a secret that is a dictionary word or a
phrase ("the password is swordfish"), a value after its name with no copula or colon
unless it looks generated and mixes three classes of characters, a value after a name
this module does not know
(``mysql -p…``, ``--key …``), secrets spelled out, base64-encoded (but for ``Basic``),
escaped (``\\u005f``, ``&#95;``) or split by anything but one newline, providers without a
fixed prefix (a bare 40-character AWS secret far from its key id, a Twilio or Datadog key),
and a PIN said in prose without "pin" or "passcode".

What is *not* a secret, and must never be caught (``golden_set/secrets.jsonl`` holds such
lines, ``tools/eval_secrets.py`` measures it on real conversations): hashes and commit ids,
UUIDs, ferrex ids, base64 of ordinary words, versions, URLs without a password, and prose
about passwords ("the password reset flow", "token: expired").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Final, Literal

from ferrex.rules.secret_fold import Finding, fold_disguises, join_broken_tokens
from ferrex.rules.secret_values import (
    assigned_secret,
    classes,
    looks_random,
    placeholder,
    repeats,
    said_secret,
    wordy,
)

SecretsMode = Literal["refuse", "redact", "allow"]
SECRETS_MODES: Final[tuple[SecretsMode, ...]] = ("refuse", "redact", "allow")


def marker(kind: str) -> str:
    """What a redacted secret of ``kind`` is replaced with."""
    return f"[redacted:{kind}]"


def find_secrets(text: str) -> list[Finding]:
    """The likely secrets in ``text``, in order, none overlapping (the first found wins).

    The shapes read ``text`` as :func:`fold_disguises` has it (disguises undone), then once
    more with tokens split by a newline joined (:func:`join_broken_tokens`); each finding is
    where the secret is in ``text`` itself.
    """
    folded = fold_disguises(text)
    candidates = [folded.source_span(f) for f in _candidates(folded.text)]
    joined = join_broken_tokens(folded)
    if joined is not None:
        candidates += [
            folded.source_span(joined.source_span(f))
            for f in _candidates(joined.text)
            if joined.joins_inside(f)
        ]
    found: list[Finding] = []
    for finding in candidates:
        if not any(f.start < finding.end and finding.start < f.end for f in found):
            found.append(finding)
    return sorted(found, key=lambda f: f.start)


def find_in_named_value(name: str, value: str) -> list[Finding]:
    """The likely secrets in ``value``, a structured field's value under the name ``name``
    (a context's ``{"db_password": "…"}``, a fact's object under its predicate
    ``"password"``): those :func:`find_secrets` finds, or else the whole value when ``name``
    names a secret (:func:`_secret_name`) and the value looks like one: a single token (a
    value with a space in it says something about the secret: "see 1Password", "12
    characters minimum") that passes the test of a value after that name."""
    found = find_secrets(value)
    if found:
        return found
    rule = _secret_name(name)
    folded = fold_disguises(value)
    stripped = folded.text.strip()
    if rule is None or not stripped:
        return []
    if any(c.isspace() for c in stripped):
        return _said_after(rule, value)
    if not assigned_secret(stripped, rule):
        return []
    start = len(folded.text) - len(folded.text.lstrip())
    return [folded.source_span(Finding(_KIND_OF[rule], start, start + len(stripped)))]


# What a value of words under a secret's name is read after (:func:`_said_after`).
_SAID_LEAD: Final = {
    "password": "credentials: ",
    "pin": "pin: ",
    "api_key": "api key: ",
    "secret": "secret: ",
    "token": "token: ",
}


def _said_after(rule: str, value: str) -> list[Finding]:
    """The likely secrets in ``value``, words under a secret's name, read as prose after
    that name ("credentials: orbit_app / …", "password: … (staging)"), placed in ``value``."""
    lead = _SAID_LEAD[rule]
    return [
        Finding(f.kind, f.start - len(lead), f.end - len(lead))
        for f in find_secrets(lead + value)
        if f.start >= len(lead)
    ]


# Words a predicate may end with after the secret's name ("password for", "api key is").
_TRAILING_WORDS: Final = frozenset({"for", "of", "is", "was", "are", "to", "on"})


def _secret_name(name: str) -> str | None:
    """The rule of the secret ``name`` names, if it does: a key (``db_password``,
    ``accessToken``) or words whose last one or two are a secret's name ("password", "has
    password", "db password", "API key", "login credentials"); not words that go on after
    it ("password policy", "token lifetime")."""
    folded = fold_disguises(name).text.strip()
    words = re.findall(r"[A-Za-z0-9_.-]+", folded)
    while words and words[-1].lower() in _TRAILING_WORDS:
        words.pop()
    tries = [folded] + ["_".join(words[-n:]) for n in (2, 1) if len(words) >= n]
    for candidate in tries:
        named = _NAME.fullmatch(candidate)
        if named is not None:
            return next(g for g, _, _ in _NAMED_KINDS if named.group(g) is not None)
    return None


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
_TOKEN_CHAR = r"[A-Za-z0-9_-]"
_TOKEN_EDGE = f"(?<!{_TOKEN_CHAR})"
_TOKEN_END = f"(?!{_TOKEN_CHAR})"


def _token(lead: str, rest: str) -> re.Pattern[str]:
    """A token that starts with the literal ``lead``, then ``rest``, not inside a longer run
    of a token's characters. The literal comes first and the look-behind after it, so the
    engine skips to where the literal is (a look-behind first tries every position: eight
    times slower on conversations)."""
    literal = re.escape(lead)
    return re.compile(f"{literal}(?<!{_TOKEN_CHAR}{literal}){rest}{_TOKEN_END}")


_AWS_KEY_ID = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_SHAPES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("aws_access_key", _AWS_KEY_ID),
    ("github_token", _token("gh", r"[pousr]_[A-Za-z0-9]{36,255}")),
    ("github_token", _token("github_pat_", r"[A-Za-z0-9_]{40,255}")),
    (
        "slack_token",
        _token("xox", r"[abprs]-(?:[0-9]{1,20}-){1,4}[A-Za-z0-9]{8,250}"),
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
    ("anthropic_key", _token("sk-ant-", r"[A-Za-z0-9_-]{32,250}")),
    (
        "openai_key",
        _token("sk-", r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,250}"),
    ),
    ("docker_token", _token("dckr_pat_", r"[A-Za-z0-9_-]{20,250}")),
    ("google_api_key", _token("AIza", r"[0-9A-Za-z_-]{35}")),
    # npm's access tokens: 36 letters and digits (30 random, 6 of checksum).
    ("npm_token", _token("npm_", r"[A-Za-z0-9]{36}")),
    # GitLab's tokens: personal, project and group (glpat), deploy (gldt), runner (glrt),
    # pipeline trigger (glptt), feed (glft), OAuth application secrets (gloas), CI job
    # (glcbt); 20 characters of base64url, longer in newer releases, which may end with
    # ``.VERSION.ROUTE`` in base 36.
    (
        "gitlab_token",
        _token(
            "gl",
            r"(?:pat|dt|rt|ptt|ft|oas|cbt)-[A-Za-z0-9_-]{20,250}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,12})?",
        ),
    ),
    # Hugging Face's user access tokens: 34 letters.
    ("huggingface_token", _token("hf_", r"[A-Za-z0-9]{34}")),
)
# Bodies that must mix like generated ones (:func:`_mixed`), so that ``sk-`` and ``xoxb-``
# followed by words (``sk-learn-style-pipeline-…``), ``glpat-xxxx…`` and ``hf_`` and a
# camel-case name are not keys.
_MIXED: Final = frozenset(
    {
        "slack_token",
        "openai_key",
        "anthropic_key",
        "stripe_key",
        "docker_token",
        "npm_token",
        "gitlab_token",
        "huggingface_token",
    }
)

# Azure's storage account keys (64 random bytes, 88 base64 characters) and the shared access
# keys of Service Bus and Event Hubs (32 bytes, 44), as connection strings write them.
_AZURE_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:Account|SharedAccess)Key[ \t]*=[ \t]*"
    r"(?P<value>[A-Za-z0-9+/]{32,256}={0,2})(?![A-Za-z0-9+/=])"
)

_JWT = re.compile(
    _TOKEN_EDGE + r"(eyJ[A-Za-z0-9_-]{6,})\.(eyJ[A-Za-z0-9_-]{4,}|[A-Za-z0-9_-]{8,})"
    r"\.([A-Za-z0-9_-]{8,})" + _TOKEN_END
)

_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,31}://"
    r"[^\s:/@?#\[\]]{1,128}:(?P<password>[^\s/@?#\[\]]{1,256})@[A-Za-z0-9\[]"
)

# After its name with ``=``, ``:``, ``=>``, a space or "is" (``aws configure`` lists it
# after a space, people write "the AWS secret key is …").
_AWS_SECRET = re.compile(
    r"(?i)aws[_\-. ]?(?:secret[_\-. ]?access[_\-. ]?key|secret[_\-. ]?key|secret)"
    r"[\"']?(?:\s*(?:=>|=|:)\s*|[ \t]+(?:(?:is|was)[ \t]+)?)[\"']?"
    r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
# Or without its name, near an access key id: a column beside it, "with secret …".
_AWS_SECRET_NEAR: Final = 200
"""How many characters either side of an access key id its secret key is looked for."""
_AWS_SECRET_ALONE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# (rule, kind, name): the rule is which test the value must pass (:func:`assigned_secret`),
# the kind is what a finding is reported as.
_NAMED_KINDS: Final[tuple[tuple[str, str, str], ...]] = (
    (
        "password",
        "password",
        r"pass(?:word|wd|phrase)|pwd|pw|credentials?|creds?|(?<=[_.-])pass",
    ),
    ("pin", "password", r"pin(?:[_-]?code)?|passcode"),
    ("api_key", "api_key", r"api[_-]?key|apikey|access[_-]?key"),
    ("secret", "secret", r"secret(?:[_-]?key)?"),
    ("token", "token", r"token"),
)
_KIND_OF: Final = {rule: kind for rule, kind, _ in _NAMED_KINDS}
# A name is one of the words above, led by any words joined with ``_ . -`` or in camel case
# (``db_password``, ``client-secret``, ``GITHUB_TOKEN``, ``accessToken``), and must end there
# (``token_count`` is no name).
# The leading words are bounded: unbounded, a long run of ``a-a-a-…`` took quadratic time.
_NAME_PATTERN = (
    r"(?:[A-Za-z0-9]{1,40}[_.-]|(?-i:[a-z0-9]{1,40}(?=[A-Z]))){0,6}(?:"
    + "|".join(f"(?P<{rule}>{pattern})" for rule, _, pattern in _NAMED_KINDS)
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

# A credential said in prose: its noun (password, passwd, passphrase, passcode, pw, PIN, API
# key, secret, token, creds), what it is for ("for the admin account", "(staging)"), a copula
# ("is", "was", "'s"), a dash, or a colon or ``=`` after what it is for (right after the
# noun they are an assignment: :data:`_NAMED`), an adverb ("now"), then one token, quoted or
# not, which must look like a password, not a word (:func:`said_secret`): "the password is
# stored in vault" says where it is. The other words of the sentence are the thing it is
# for ("the staging database password for orbit is …").
_SAID_NOUN = (
    r"(?:(?P<pin>pin(?:[ -]?code)?|passcode)"
    r"|(?P<password>pass(?:word|wd|phrase)|pwd?|cred(?:s|entials?)?)"
    r"|(?P<api_key>api[ _-]?key|access[ _-]key)|(?P<secret>(?:client[ _-])?secret(?:[ _-]key)?)"
    r"|(?P<token>(?:access[ _-]|api[ _-]|auth[ _-]|bearer[ _-])?token))"
)
_SAID_FOR = (
    r"(?P<what>(?:[ \t]+(?:for|of|to|on)[ \t]+[^.,;:!?\n]{1,40}?)?"
    r"(?:[ \t]*\([^()\n]{1,40}\))?)"
)
_SAID = re.compile(
    r"(?i)(?<![A-Za-z0-9_])"
    + _SAID_NOUN
    + _SAID_FOR
    + r"(?:['\u2019]s[ \t]+|[ \t]+(?:is|was)[ \t]+|(?P<assign>[ \t]*[:=](?!//)[ \t]*)"
    r"|[ \t]+(?:-|\u2013|\u2014|->|=>|\u2192)[ \t]+)"
    r"(?:(?:now|still|just|currently|actually)[ \t]+)?"
    r"(?P<quote>[\"'`\u2018\u201c(\[]?)(?P<value>[^\s\"'`\u2019\u201d]{1,64})"
)
# A password named and given with nothing between ("user deploybot, password" and a generated
# string): the value must pass the prose test, look generated (:func:`looks_random`) and mix three
# classes of characters, which a word after the noun ("password reset", "password manager",
# "the password argon2id hash") never does. The password nouns only: "token bucket" and
# "secret sauce" are words.
_SAID_BARE = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:pass(?:word|wd|phrase)|pwd?)[ \t]+"
    r"(?P<quote>[\"'`\u2018\u201c(\[]?)(?P<value>[^\s\"'`\u2019\u201d]{1,64})"
)
# A login written as a pair: "orbit creds: orbit_app / …", "the VPN credentials
# are alice@example.com / …", "username/password: admin/…"; the password is the second.
_PAIR = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?:creds?|credentials|logins?|user(?:name)?[ \t]*/[ \t]*pass(?:word)?)"
    + _SAID_FOR
    + r"(?:[ \t]*[:=][ \t]*|[ \t]+(?:is|are|was|were)[ \t]+)"
    r"[^\s/:\"'`]{1,64}[ \t]*[/:][ \t]*"
    r"(?P<quote>[\"'`\u2018\u201c(\[]?)(?P<value>[^\s\"'`\u2019\u201d]{1,64})"
)


def _candidates(text: str) -> Iterator[Finding]:
    for m in _PEM.finditer(text):
        if _PEM_BODY.search(m.group("body")):
            yield Finding("private_key", m.start(), m.end())
    for kind, pattern in _SHAPES:
        for m in pattern.finditer(text):
            if kind in _MIXED and not _mixed(kind, m.group()):
                continue
            yield Finding(kind, m.start(), m.end())
    for m in _AZURE_KEY.finditer(text):
        if looks_random(m.group("value")):
            yield Finding("azure_key", m.start("value"), m.end("value"))
    for m in _JWT.finditer(text):
        if _jwt_header(m.group(1)):
            yield Finding("jwt", m.start(), m.end())
    for m in _URL_PASSWORD.finditer(text):
        if not placeholder(m.group("password")):
            yield Finding("url_password", m.start("password"), m.end("password"))
    for m in _AWS_SECRET.finditer(text):
        if looks_random(m.group("value")):
            yield Finding("aws_secret_key", m.start("value"), m.end("value"))
    yield from _aws_secrets_near_key_ids(text)
    for rule, start, value in _assignments(text):
        if assigned_secret(value, rule):
            yield Finding(_KIND_OF[rule], start, start + len(value))
    for m in _BEARER.finditer(text):
        if assigned_secret(m.group("value"), "token"):
            yield Finding("token", m.start("value"), m.end("value"))
    for m in _BASIC.finditer(text):
        if _basic_credentials(m.group("value")):
            yield Finding("password", m.start("value"), m.end("value"))
    for m in _SAID.finditer(text):
        if m.group("assign") and not m.group("what"):
            continue  # ``password: …`` and ``token = …``: the assignment's rule (_NAMED)
        value = _said_value(m)
        rule = next(g for g, _, _ in _NAMED_KINDS if m.groupdict().get(g) is not None)
        if said_secret(value, rule):
            yield Finding(_KIND_OF[rule], m.start("value"), m.start("value") + len(value))
    for m in _SAID_BARE.finditer(text):
        value = _said_value(m)
        if said_secret(value, "password") and looks_random(value) and classes(value) >= 3:
            yield Finding("password", m.start("value"), m.start("value") + len(value))
    for m in _PAIR.finditer(text):
        value = _said_value(m)
        if said_secret(value, "password"):
            yield Finding("password", m.start("value"), m.start("value") + len(value))


def _aws_secrets_near_key_ids(text: str) -> Iterator[Finding]:
    """40 base64 characters mixing upper case, lower case and digits (a commit id is one
    case) within :data:`_AWS_SECRET_NEAR` characters of an access key id."""
    for key in _AWS_KEY_ID.finditer(text):
        # Searched to the text's end, not the window's: a longer run cut at the window's
        # edge would read as 40 characters.
        end = key.end() + _AWS_SECRET_NEAR
        for m in _AWS_SECRET_ALONE.finditer(text, max(0, key.start() - _AWS_SECRET_NEAR)):
            if m.start() >= end:
                break
            value = m.group()
            if (
                any(c.isupper() for c in value)
                and any(c.islower() for c in value)
                and any(c.isdigit() for c in value)
                and looks_random(value)
            ):
                yield Finding("aws_secret_key", m.start(), m.end())


def assigned_values(text: str) -> Iterator[tuple[str, int, str]]:
    """(kind, position, value) of every value written after a secret's name and ``=`` or
    ``:``, secret-looking or not (:func:`looks_random` decides; the evaluation measures it)."""
    for rule, start, value in _assignments(text):
        yield _KIND_OF[rule], start, value


def _assignments(text: str) -> Iterator[tuple[str, int, str]]:
    """(rule, position, value): :func:`assigned_values` with the rule each value must pass."""
    for m in _NAMED.finditer(text):
        value = m.group("value")
        if m.group("quote"):  # a quoted value ends at its quote
            value = value.split(m.group("quote"), 1)[0]
        value = value.rstrip(".!?:")
        if value:
            rule = next(g for g, _, _ in _NAMED_KINDS if m.group(g) is not None)
            yield rule, m.start("value"), value


def _said_value(m: re.Match[str]) -> str:
    """The token a password said in prose is: up to its closing quote if quoted, without
    the punctuation that ends the sentence or the clause."""
    value = m.group("value")
    opening = m.group("quote")
    closing = {"\u2018": "\u2019", "\u201c": "\u201d", "(": ")", "[": "]"}.get(opening, opening)
    if closing and closing in value:
        return value.split(closing, 1)[0]
    return value.rstrip(".,;:)").removesuffix("\u2019")


def _mixed(kind: str, token: str) -> bool:
    """Whether a prefixed token's body mixes like a generated one: letters and digits, and
    for the ``sk-`` keys upper case, lower case and digits (``sk-2024-planning-notes`` is
    a slug, not a key); GitLab's two of upper case, lower case and digits, not words joined
    (``glpat-your-token-here``); Hugging Face's letters a fifth or more of each case (a
    random body has about half, a camel-case name far fewer)."""
    if kind == "slack_token":  # the random part is the last
        body = token.rsplit("-", 1)[1]
    else:
        body = token.split("-", 1)[1] if "-" in token else token.split("_", 2)[-1]
    digits = any(c.isdigit() for c in body)
    if kind in ("openai_key", "anthropic_key"):
        return digits and any(c.islower() for c in body) and any(c.isupper() for c in body)
    if kind == "gitlab_token":
        alnum = "".join(c for c in body if c.isalnum())
        return classes(alnum) >= 2 and not wordy(body) and not repeats(body)
    if kind == "huggingface_token":
        fifth = len(body) / 5
        upper = sum(c.isupper() for c in body)
        lower = sum(c.islower() for c in body)
        return upper >= fifth and lower >= fifth
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
