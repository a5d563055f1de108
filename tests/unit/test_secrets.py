"""Likely secrets: each kind found by its shape, the look-alikes left alone, and what a store
request does with them under each ``store.secrets`` mode."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ferrex.config import load
from ferrex.core.settings import StoreSettings
from ferrex.errors import UsageError
from ferrex.rules.memory_input import StoreRequest, secrets_in, validate
from ferrex.rules.secret_values import entropy_floor, looks_random, shannon_entropy
from ferrex.rules.secrets import (
    find_in_named_value,
    find_secrets,
    marker,
    redact,
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
    ("npm_token", f"npm_{B62}Ab12"),
    ("gitlab_token", f"glpat-{B62[:20]}"),
    ("gitlab_token", f"gldt-{B62[:26]}"),
    ("huggingface_token", "hf_QvKmXpLzRtWcNbYhJfGdSaEuAbCdEfGhIj"),
    ("azure_key", f"AccountKey={B62}{B62}{B62[:22]}=="),
    ("azure_key", f"SharedAccessKey={B62}{B62[:11]}="),
    ("password", "passcode=Xy7!kq2Lm9"),
    ("password", "db_pw: Tr0ub4dor&3x"),
    ("password", "credentials: svc:Tr0ub4dor&3x"),
    ("password", "pin=4821"),
    ("password", "the password is hunter2"),
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
    # Said in prose, a password's value must look like one, not a word or a length.
    "the password is stored in vault",
    "the password is rotated monthly",
    "The password is required.",
    "the password is 12 characters long and the PIN is 4 digits",
    "my password's expired and pw is wrong again",
    "the password is SHA-256 hashed; the password is DB_PASSWORD from the environment",
    # A number after ``pin`` is a board's pin unless it has a PIN's four digits or more.
    "LED = Pin(pin=13, mode=Pin.OUT); led_pin: 2; PIN=4; pin = True",
    # Disguises undone, these are still not secrets.
    "Пароль хранится в хранилище; Ο κωδικός αλλάζει κάθε μήνα; ＡＰＩキーは環境変数",  # noqa: RUF001
    "https://example.org/search?q=password%20reset%20flow&next=%2Fhome",
    "3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c\n9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "AKIA is the prefix of key ids; commit 3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c",
    "npm_config_registry=https://registry.npmjs.org npm_package_version=1.4.2",
    "hf_hub_download() and 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()",
    "GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx or glpat-your-token-goes-here",
    "AccountKey=<storage-key>;AccountKey=${AZURE_STORAGE_KEY}",
]


SHAPES = Path(__file__).parents[2] / "golden_set" / "secret_shapes.jsonl"
"""One line or more per shape an issue reported as passing (``tools/eval_secrets.py`` counts
them too): each must be found as the kinds it names."""


def _shape_lines() -> list[Any]:
    lines = [json.loads(line) for line in SHAPES.read_text(encoding="utf-8").splitlines()]
    return [pytest.param(line, id=f"{line['shape']}-{n}") for n, line in enumerate(lines)]


@pytest.mark.parametrize("line", _shape_lines())
def test_each_shape_that_passed_is_found(line: dict[str, Any]) -> None:
    if "text" in line:
        kinds = {f.kind for f in find_secrets(line["text"])}
    else:
        kinds = {
            s.kind for s in secrets_in(validate(StoreRequest(**line["request"]), secrets="allow"))
        }
    assert set(line["expect"]) <= kinds


GH = f"ghp_{B62}Ab12"
DISGUISED = [
    ("zero-width space", f"{GH[:9]}\u200b{GH[9:20]}\ufeff{GH[20:]}"),
    ("soft hyphen and a combining mark", f"{GH[:9]}\u00ad{GH[9:20]}\u0301{GH[20:]}"),
    ("fullwidth", "".join(chr(ord(c) + 0xFEE0) for c in GH)),
    (
        "Cyrillic look-alikes",
        "gh\u0440_" + B62.replace("X", "\u0425").replace("p", "\u0440") + "Ab12",
    ),
    ("percent-encoded", f"ghp%5F{B62}Ab%31%32"),
    ("split by a newline", f"{GH[:14]}\n{GH[14:]}"),
    ("split by CR LF", f"{GH[:30]}\r\n{GH[30:]}"),
]


@pytest.mark.parametrize(("how", "token"), DISGUISED)
def test_a_disguised_token_is_found_where_it_is_in_the_text_as_sent(how: str, token: str) -> None:
    text = f"CI pushes with {token} (rotate monthly)"
    found = find_secrets(text)
    assert [(f.kind, text[f.start : f.end]) for f in found] == [("github_token", token)]
    assert redact(text) == "CI pushes with [redacted:github_token] (rotate monthly)"


def _disguised(char: str, how: int) -> str:
    """``char`` as one of the disguises the scan undoes (0: as it is)."""
    match how:
        case 1:
            return f"\u200b{char}"
        case 2:
            return chr(ord(char) + 0xFEE0)
        case 3:
            return f"%{ord(char):02X}"
        case _:
            return char


@given(st.lists(st.integers(0, 3), min_size=len(GH), max_size=len(GH)), st.sampled_from(" :=("))
def test_a_token_disguised_char_by_char_is_found_and_redacted_whole(
    hows: list[int], before: str
) -> None:
    token = "".join(_disguised(c, how) for c, how in zip(GH, hows, strict=True))
    text = f"CI pushes{before}{token} (rotate monthly)"
    found = find_secrets(text)
    # A zero-width space before the token's first letter is outside it, and left in place.
    shown = token.removeprefix("\u200b")
    assert [(f.kind, text[f.start : f.end]) for f in found] == [("github_token", shown)]
    assert (
        redact(text)
        == f"CI pushes{before}{token[: -len(shown)]}[redacted:github_token] (rotate monthly)"
    )


def test_tokens_one_per_line_are_each_found_and_words_across_a_line_are_not_joined() -> None:
    text = f"AKIAQ7VK2MXP9LZR4TWC\nASIAQ7VK2MXP9LZR4TWD\n{GH}"
    assert [f.kind for f in find_secrets(text)] == ["aws_access_key"] * 2 + ["github_token"]
    # "is" and "hunter2" are not halves of one token.
    assert [f.kind for f in find_secrets("the password is\nhunter2")] == []


def test_a_pin_is_four_digits_or_more_and_a_short_number_is_a_boards_pin() -> None:
    assert [f.kind for f in find_secrets("card pin=4821")] == ["password"]
    assert [f.kind for f in find_secrets("passcode: 73915284")] == ["password"]
    for text in ("pin=13", "led_pin = 2", "pin: 123", "pin=0000", "pin=1.2.3", "pinned=4821"):
        assert find_secrets(text) == [], text
    assert [f.kind for f in find_in_named_value("pin", "4821")] == ["password"]
    assert find_in_named_value("pin", "13") == []


def test_a_password_after_its_name_may_be_short_as_people_choose_them() -> None:
    text = "pw: hunter2, password=Tr0ub4, token=hunter2"
    found = find_secrets(text)
    assert [text[f.start : f.end] for f in found] == ["hunter2", "Tr0ub4"]  # a token is longer
    for text in ("password: abcdef", "password=v1.2.3", "pw = getpass()", "pwd: /home/ada/src"):
        assert find_secrets(text) == [], text


def test_a_password_said_in_prose_is_the_token_after_the_copula() -> None:
    for text, value in (
        ("the password is hunter2", "hunter2"),
        ("My password\u2019s hunter2.", "hunter2"),
        ("pw is Xk29fLq7 for the staging box", "Xk29fLq7"),
        ("the wifi password is now \u201cTr0ub4dor&3\u201d.", "Tr0ub4dor&3"),
        ("the password for the admin account is s3cr3tSauce!", "s3cr3tSauce!"),
        ("the PIN code is 4821, the passphrase was 'c0rrect-h0rse'", "4821"),
    ):
        found = find_secrets(text)
        assert found and text[found[0].start : found[0].end] == value, text
        assert found[0].kind == "password"


def test_an_aws_secret_key_without_its_equals_sign_or_beside_its_key_id() -> None:
    secret = f"{B62}a1b2c3/+"
    for text in (
        f"aws_secret_access_key {secret}",
        f"the AWS secret key is {secret}",
        f"AKIAQ7VK2MXP9LZR4TWC  {secret}",
        f"{secret} is the secret of AKIAQ7VK2MXP9LZR4TWC",
    ):
        found = [(f.kind, text[f.start : f.end]) for f in find_secrets(text)]
        assert ("aws_secret_key", secret) in found, text
    # A commit id near a key id is one case, a longer run no 40 characters: no secret.
    text = "AKIAQ7VK2MXP9LZR4TWC rotated in 3f2a9b1c4d5e6f708192a3b4c5d6e7f8091a2b3c"
    assert [f.kind for f in find_secrets(text)] == ["aws_access_key"]
    for gap in (150, 153, 190):  # 153: the run starts 40 characters before the window ends
        text = f"AKIAQ7VK2MXP9LZR4TWC{' ' * gap}sha512-{B62 * 3}"
        assert [f.kind for f in find_secrets(text)] == ["aws_access_key"], gap


@pytest.mark.parametrize(("kind", "text"), KINDS)
def test_each_kind_is_found_by_its_shape(kind: str, text: str) -> None:
    found = find_secrets(f"note: {text} (pasted)")
    assert [f.kind for f in found] == [kind]
    redacted = redact(f"note: {text} (pasted)", found)
    assert marker(kind) in redacted and "(pasted)" in redacted


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_a_prefix_inside_a_longer_run_starts_no_token() -> None:
    hf = "hf_QvKmXpLzRtWcNbYhJfGdSaEuAbCdEfGhIj"
    tokens = [f"github_pat_11A_{B62}Ab12", f"npm_{B62}Ab12", f"glpat-{B62}", f"sk-{B62}"]
    for token in (f"ghp_{B62}Ab12", *tokens, f"dckr_pat_{B62}", f"AIza{B62}Ab1", hf):
        assert find_secrets(token) != [], token
        for before in ("x", "_", "-", "9"):
            assert find_secrets(f"{before}{token}") == [], before + token


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


def test_code_an_agent_stores_stays_clean_and_every_reported_shape_is_found() -> None:
    from tools.eval_secrets import (
        CODE_NEGATIVES,
        SHAPES,
        code_negative_texts,
        eval_shapes,
        source_texts,
        text_secrets,
    )

    assert eval_shapes(SHAPES).missed == []
    dirty = [w for w, text in code_negative_texts(CODE_NEGATIVES) if text_secrets(text)]
    assert dirty == []
    # ferrex's own source, line by line and in chunks, as an agent stores code it works on.
    assert [where for where, text in source_texts() if text_secrets(text)] == []
