"""Likely secrets: each kind found by its shape, the look-alikes left alone, and what a store
request does with them under each ``store.secrets`` mode."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from ferrex.config import load
from ferrex.core.settings import StoreSettings
from ferrex.errors import UsageError
from ferrex.rules.memory_input import StoreRequest, secrets_in, validate
from ferrex.rules.secrets import (
    entropy_floor,
    find_in_named_value,
    find_secrets,
    looks_random,
    marker,
    redact,
    shannon_entropy,
)

B62 = "Q7vK2mXp9LzR4tWc8NbY3hJf6GdS1aEu"  # 32 made-up characters, mixed like a real key


def _b64url(doc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).rstrip(b"=").decode()


JWT = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': 'u1'})}.{B62}Zk3"
PEM_BODY = "MIIEowIBAAKCAQEAw3kP9sLq2ZbXvN8mR4tY7uJ1cF6hG0aD5eK"

KINDS = [
    ("private_key", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"),
    ("private_key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}"),  # cut off
    ("aws_access_key", "AKIAQ7VK2MXP9LZR4TWC"),
    ("aws_access_key", "ASIAQ7VK2MXP9LZR4TWC"),
    ("aws_secret_key", f"aws_secret_access_key = {B62}a1b2c3/+"),
    ("github_token", f"ghp_{B62}Ab12"),
    ("github_token", f"ghs_{B62}Ab12"),
    ("github_token", f"github_pat_11ABCDEFG0_{B62}{B62}"),
    ("slack_token", "xoxb-123456789012-1234567890123-Q7vK2mXp9LzR4tWc"),
    ("slack_webhook", f"https://hooks.slack.com/services/T0ABC1234/B0DEF5678/{B62[:24]}"),
    ("stripe_key", f"sk_live_{B62[:24]}"),
    ("stripe_key", f"rk_live_{B62[:24]}"),
    ("openai_key", f"sk-{B62}{B62[:16]}"),
    ("openai_key", f"sk-proj-{B62}_{B62}"),
    ("anthropic_key", f"sk-ant-api03-{B62}{B62}-{B62}AA"),
    ("google_api_key", f"AIza{B62}Xy_"),
    ("docker_token", f"dckr_pat_{B62[:27]}"),
    ("jwt", JWT),
    ("url_password", "postgres://ledger:Zx81kqLmw3@db.internal:5432/ledger"),
    ("password", "password=Xy7!kq2Lm9"),
    ("password", "passwd: Tr0ub4dor&3x"),
    ("password", '{"db_password": "Tr0ub4dor&3x"}'),
    ("password", "Authorization: Basic " + base64.b64encode(b"svc:Tr0ub4dor&3x").decode()),
    ("secret", f"client_secret={B62}"),
    ("token", "token=8f14e45fceea167a5a36dedd4bea2543"),
    ("token", f"Authorization: Bearer {B62}"),
    ("api_key", f"api_key: {B62[:24]}"),
    ("api_key", f'"apiKey": "{B62[:24]}"'),
    ("token", f'accessToken: "{B62[:24]}"'),
    ("secret", f"clientSecret={B62[:24]}"),
]

NOT_SECRETS = [
    "Fixed in commit 3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c",
    "image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "superseded mem_01JD3X7K2M9Q4P1Z8R5T6V7W8Y",
    "aGVsbG8gd29ybGQ= is base64 for hello world",
    "tokio 1.38.2, node v20.11.1, 2.0.0-beta.3",
    "https://docs.example.org/guide?page=2 and http://user@host.example.com/x",
    "postgres://app@db.internal:5432/app and redis://localhost:6379/0",
    "postgres://admin:${DB_PASSWORD}@db/app and https://user:pass@host.example",
    "We need to fix the password reset flow before launch",
    "password_min_length=12, max_tokens=4096, token_count: 8192, maxTokens: 4096x2",
    "secret_santa: 2024-12-20, passport: X1234567, compass: N45W122x",
    "token: expired",
    "status token: ready-for-review",
    "api_key: ${STRIPE_KEY}; token=$GITHUB_TOKEN; secret=SECRET_KEY",
    "password=os.environ['DB_PASSWORD']",
    "'API-Key': process.env.DATA\\_API\\_KEY,",
    "api_key=<your-api-key>, password=changeme, token=xxxxxxxx",
    "AWS key ids start with AKIA; GitHub tokens with ghp_; Slack with xoxb-",
    "see sk-2024-quarterly-planning-notes-v2 (scikit-learn is sk-learn), sk-Q4-2024-Planning",
    "the channel xoxp-2024-roadmap-notes is archived",
    "the file starts with -----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n"
    "-----END PUBLIC KEY-----",
    "ids eyJhbGxvd29ybGQ.eyJzb21ldGhpbmc.abcdefghij are not tokens",
    "Bearer tokens go in the Authorization header; Basic authentication is off",
    "password_hash: $2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
]


@pytest.mark.parametrize(("kind", "text"), KINDS)
def test_each_kind_is_found_by_its_shape(kind: str, text: str) -> None:
    found = find_secrets(f"note: {text} (pasted)")
    assert [f.kind for f in found] == [kind]
    redacted = redact(f"note: {text} (pasted)", found)
    assert marker(kind) in redacted and "(pasted)" in redacted


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_a_finding_is_where_the_secret_is() -> None:
    text = "use AKIAQ7VK2MXP9LZR4TWC then password=Xy7!kq2Lm9."
    found = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [
        ("aws_access_key", "AKIAQ7VK2MXP9LZR4TWC"),
        ("password", "Xy7!kq2Lm9"),
    ]
    assert redact(text) == "use [redacted:aws_access_key] then password=[redacted:password]."


def test_a_jwt_needs_a_header_naming_its_algorithm() -> None:
    no_alg = f"{_b64url({'typ': 'JWT'})}.{_b64url({'sub': 'u1'})}.{B62}"
    assert find_secrets(no_alg) == []
    assert [f.kind for f in find_secrets(JWT)] == ["jwt"]


def test_entropy_and_the_randomness_test() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert entropy_floor(8) == pytest.approx(2.4) and entropy_floor(64) == 3.0
    assert looks_random("Xy7!kq2Lm9")
    for value in ("aaaaaaaa1", "12345678", "ready-for-review", "Summer-2024", "Xy7!k",
                  "Abtoken=" * 8, "Q7v!" * 5):  # fmt: skip
        assert not looks_random(value), value


def test_a_value_under_a_secrets_name_in_structured_data() -> None:
    assert [f.kind for f in find_in_named_value("db_password", " Tr0ub4dor&3x")] == ["password"]
    assert find_in_named_value("db_password", " Tr0ub4dor&3x")[0].start == 1
    assert find_in_named_value("password_set", "Tr0ub4dor&3x") == []
    assert find_in_named_value("token", "summary-v2") == []
    assert [f.kind for f in find_in_named_value("note", f"ghp_{B62}Ab12")] == ["github_token"]


# -- what a store request does ---------------------------------------------------------------

KEY = "AKIAQ7VK2MXP9LZR4TWC"

EVERY_FIELD: list[tuple[str, dict[str, Any]]] = [
    ("content", {"content": f"deploy key {KEY}"}),
    ("subject", {"subject": f"key {KEY}", "predicate": "owned by", "object": "ci"}),
    ("predicate", {"subject": "ci", "predicate": f"uses {KEY}", "object": "s3"}),
    ("object", {"subject": "ci", "predicate": "access key", "object": KEY}),
    ("name", {"name": f"rotate {KEY}", "steps": ("a",)}),
    ("steps[1]", {"name": "rotate", "steps": ("a", f"export KEY={KEY}")}),
    ("conditions[0]", {"name": "rotate", "steps": ("a",), "conditions": (f"when {KEY} leaks",)}),
    ("entities[1]", {"content": "rotated", "entities": ("ci", KEY)}),
    ("source", {"content": "rotated", "source": f"https://ci:{B62[:12]}@ci.example.org"}),
    ("context.creds.aws", {"content": "rotated", "context": {"creds": {"aws": KEY}}}),
    ("context.db_password", {"content": "rotated", "context": {"db_password": "Tr0ub4dor&3x"}}),
    ("context.keys[0]", {"content": "rotated", "context": {"keys": [KEY]}}),
    ("namespace", {"content": "rotated", "namespace": f"ci-{KEY}"}),
    # A key that carries a secret is shown redacted in the field's path.
    ("context.[redacted:aws_access_key] (key)", {"content": "rotated", "context": {KEY: "ci"}}),
    (
        "context.creds.[redacted:aws_access_key] (key)",
        {"content": "rotated", "context": {"creds": {KEY: {"scope": "s3"}}}},
    ),
]


@pytest.mark.parametrize(("field", "fields"), EVERY_FIELD)
def test_refuse_covers_every_text_field_and_never_quotes_the_secret(
    field: str, fields: dict[str, Any]
) -> None:
    with pytest.raises(UsageError) as caught:
        validate(StoreRequest(**fields))  # refuse is the default
    error = caught.value
    assert error.code == "secret_refused"
    assert error.details["secrets"][0]["field"] == field
    assert f"in {field} at character" in error.message
    shown = json.dumps(error.as_dict())
    assert KEY not in shown and "Tr0ub4dor" not in shown and B62[:12] not in shown


@pytest.mark.parametrize(("field", "fields"), EVERY_FIELD)
def test_redact_replaces_the_secret_in_every_text_field(field: str, fields: dict[str, Any]) -> None:
    valid = validate(StoreRequest(**fields), secrets="redact")
    assert [s.field for s in valid.redacted] == [field]
    v = valid
    texts = [v.content, v.subject, v.predicate, v.object, v.name, v.source, v.namespace, v.steps]
    stored = json.dumps([*texts, v.conditions, v.entities, v.context])
    assert KEY not in stored and "Tr0ub4dor" not in stored and B62[:12] not in stored
    assert "[redacted:" in stored or field.startswith("entities")  # such an entity is dropped
    assert secrets_in(valid) == []


def test_refusal_names_every_secret_with_its_position() -> None:
    text = f"key {KEY} and password=Xy7!kq2Lm9"
    with pytest.raises(UsageError) as caught:
        validate(StoreRequest(content=text))
    assert caught.value.details["secrets"] == [
        {"field": "content", "kind": "aws_access_key", "at": 4},
        {"field": "content", "kind": "password", "at": text.index("Xy7")},
    ]


def test_allow_keeps_the_text_as_sent() -> None:
    valid = validate(StoreRequest(content=f"deploy key {KEY}"), secrets="allow")
    assert valid.content == f"deploy key {KEY}" and valid.redacted == ()
    assert [s.kind for s in secrets_in(valid)] == ["aws_access_key"]


def test_text_without_secrets_is_unchanged_under_every_mode() -> None:
    request = StoreRequest(content="We need to fix the password reset flow", context={"t": 1})
    for mode in ("refuse", "redact", "allow"):
        assert validate(request, secrets=mode) == validate(request, secrets="allow")


def test_redact_renames_a_context_key_that_carries_a_secret_and_keeps_every_item() -> None:
    other = "AKIAZ7VK2MXP9LZR4TWD"
    context = {KEY: {"db_password": "Tr0ub4dor&3x", "region": "eu"}, other: 1, "ok": KEY}
    request = StoreRequest(content="two keys", context=context)
    with pytest.raises(UsageError) as caught:
        validate(request)
    assert [s["field"] for s in caught.value.details["secrets"]] == [
        "context.[redacted:aws_access_key] (key)",
        "context.[redacted:aws_access_key].db_password",
        "context.[redacted:aws_access_key] 2 (key)",
        "context.ok",
    ]
    valid = validate(request, secrets="redact")
    assert valid.context == {
        "[redacted:aws_access_key]": {"db_password": "[redacted:password]", "region": "eu"},
        "[redacted:aws_access_key] 2": 1,
        "ok": "[redacted:aws_access_key]",
    }
    assert secrets_in(valid) == []


def test_redact_drops_an_entity_named_by_a_secret() -> None:
    other = "AKIAZ7VK2MXP9LZR4TWD"
    request = StoreRequest(content="two keys", entities=(KEY, "ci", f"key {other}"))
    valid = validate(request, secrets="redact")
    assert valid.entities == ("ci",)
    assert [s.field for s in valid.redacted] == ["entities[0]", "entities[2]"]


def test_the_configuration_key_defaults_to_refuse_and_rejects_other_modes(tmp_path: Path) -> None:
    assert StoreSettings.from_config(load(tmp_path, env={})).secrets == "refuse"
    (tmp_path / "ferrex.toml").write_text('[store]\nsecrets = "redact"\n')
    assert StoreSettings.from_config(load(tmp_path, env={})).secrets == "redact"
    (tmp_path / "ferrex.toml").write_text('[store]\nsecrets = "warn"\n')
    with pytest.raises(UsageError, match=r"store\.secrets") as caught:
        load(tmp_path, env={})
    assert "refuse, redact, allow" in caught.value.message


def test_the_planted_set_is_found_and_its_clean_lines_and_the_golden_set_stay_clean() -> None:
    from tools.eval_secrets import GOLDEN, PLANTED, eval_planted, golden_texts, request_secrets

    planted, _ = eval_planted(PLANTED)
    assert planted.secrets >= 40 and planted.clean >= 40
    assert planted.missed == [] and planted.detected == planted.secrets
    assert planted.false_positives == [] and planted.wrong_kind == []
    assert {"private_key", "jwt", "url_password", "password", "token"} <= set(planted.by_kind)
    assert [where for where, request in golden_texts(GOLDEN) if request_secrets(request)] == []
