"""A credential named by a keyword and given a value the way people write it, in prose, as a
``user / password`` pair or as a fact's object; and text about credentials that is none."""

from __future__ import annotations

import pytest

from ferrex.rules.secrets import find_in_named_value, find_secrets, redact

# (text, kind, the value found)
NAMED = (
    (
        "The staging database password for orbit is Tr0ub4dor&3-staging, user orbit_app.",
        "password",
        "Tr0ub4dor&3-staging",
    ),
    ("password for the orbit staging db: Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
    ("orbit creds: orbit_app / Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
    ("orbit credentials are orbit_app/Tr0ub4dor&3x.", "password", "Tr0ub4dor&3x"),
    ("The staging password is Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
    ("the root password for the NAS is (Pl4net#Nine).", "password", "Pl4net#Nine"),
    ("the SMTP passwd is mT9&vx2Lq", "password", "mT9&vx2Lq"),
    ("the API key for the billing sandbox is Zq81vLm2Xp0aRt", "api_key", "Zq81vLm2Xp0aRt"),
    ("jenkins secret for the webhook: aP3xQ9zL7mWv", "secret", "aP3xQ9zL7mWv"),
    ("the deploy token is 7fGh2KqLmN9pRs, valid until March", "token", "7fGh2KqLmN9pRs"),
    ("staging password (orbit): Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
    ("orbit password - Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
    ("the password for orbit = Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
)

ABOUT = (
    "rotate the staging password every 90 days",
    "the password policy requires 12 characters",
    "password reset emails go through SES",
    "token bucket rate limiter",
    "set the API key in the env var ORBIT_KEY",
    "the secret is stored in Vault at secret/orbit/db",
    "the password for the staging db is in 1Password",
    "the API key for billing is ORBIT_BILLING_KEY",
    "creds: see the vault entry / ask ops",
    "the token for CI is scoped to repo:read",
    "password for the admin account: rotated last week",
    "the password for prod is 2FA-protected",
    "the password for prod is utf8-encoded",
    "api key for maps: restricted to our domains",
    "the session token is SHA-256 hashed",
    "secret for the cookie: 32 random bytes",
    "user/password: admin / changeme",
    "login: alice / bob",
    "the token is v2 of the format",
    "passwords for 2024: see the runbook",
    "the secret to good tests is small-fixtures-first",
    "password (optional): leave blank",
    "token - a unit of text the model reads",
    "the password manager is 1Password",
    "password for orbit - see the vault entry",
    "const token = cookieStore.get('session')?.value;",
    "return { token: cookieStore.get('t'), secret: getSecret(env) };",
)


@pytest.mark.parametrize(("text", "kind", "value"), NAMED)
def test_a_credential_named_by_a_keyword_is_found_where_its_value_is(
    text: str, kind: str, value: str
) -> None:
    found = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [(kind, value)]
    assert value not in redact(text)


@pytest.mark.parametrize("text", ABOUT)
def test_text_about_credentials_is_no_secret(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("predicate", "value", "kind", "secret"),
    [
        ("password", "Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
        ("has password", "hunter2x!", "password", "hunter2x!"),
        ("db password", "Tr0ub4dor&3-staging", "password", "Tr0ub4dor&3-staging"),
        ("api key", "Zq81vLm2Xp0aRt", "api_key", "Zq81vLm2Xp0aRt"),
        ("Login Credentials", "Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
        # A value with more words is read as if written after the name, in prose.
        ("credentials", "orbit_app / Tr0ub4dor&3x", "password", "Tr0ub4dor&3x"),
        ("password", "Tr0ub4dor&3x (staging)", "password", "Tr0ub4dor&3x"),
    ],
)
def test_a_facts_object_is_a_secret_when_its_predicate_names_one_and_it_looks_like_one(
    predicate: str, value: str, kind: str, secret: str
) -> None:
    found = find_in_named_value(predicate, value)
    assert [(f.kind, value[f.start : f.end]) for f in found] == [(kind, secret)]


@pytest.mark.parametrize(
    ("predicate", "value"),
    [
        ("password", "rotated"),
        ("password", "in vault"),
        ("password", "see 1Password"),
        ("password", "12 characters minimum"),
        ("password policy", "12 characters minimum"),
        ("password", "ORBIT_DB_PASSWORD"),
        ("api key", "${ORBIT_KEY}"),
        ("token lifetime", "30d"),
        ("reset password", "every 90 days"),
        ("owner", "Tr0ub4dor&3x"),
        ("credentials", "orbit_app / see vault"),
        ("password", "same as staging"),
    ],
)
def test_a_facts_object_that_says_about_a_credential_is_no_secret(
    predicate: str, value: str
) -> None:
    assert find_in_named_value(predicate, value) == []


@pytest.mark.parametrize(
    "text",
    [
        "Deploy keys for the payments repo: user deploybot, password Zq8!vR2#kLm9 please rotate",
        "pw 8f3kQ2!x for the kiosk",
        "set password Hunter2024 for the demo tenant",
    ],
)
def test_a_generated_password_right_after_its_noun_is_caught(text: str) -> None:
    assert find_secrets(text), text


@pytest.mark.parametrize(
    "text",
    [
        "the password argon2id hash is stored per user",
        "password reset emails go through SES",
        "password v2 migration lands Friday",
        "password SHA-256 hashes are salted",
        "passwords hashed with bcrypt2b",
    ],
)
def test_a_word_after_the_password_noun_is_not_a_password(text: str) -> None:
    assert find_secrets(text) == [], text
