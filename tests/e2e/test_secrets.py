"""Secrets stay out of memory: over MCP stdio as an agent pastes them, and through the CLI's
import and scan, with real server processes, journals and stores.

Every test also looks at the bytes: the secret must not be anywhere under the home (journal,
read model, vectors, embedding cache), except where ``allow`` put it on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from tests.e2e.mcp_helpers import call, error, ferrex, journal_head, stdio_client

# Made-up secrets of real shapes.
AWS_KEY = "AKIAQ7VK2MXP9LZR4TWC"
GITHUB = "ghp_Q7vK2mXp9LzR4tWc8NbY3hJf6GdS1aEuAb12"
PG_PASSWORD = "Zx81kqLmw3Tp"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDk3mXJq9vYw2T8LpR4nZ0sKcHf7uB1aGdE6oVyWx5iNQAAAJg2fV1pNn1d\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def _anywhere(home: Path, secret: str) -> list[str]:
    """The files under ``home`` whose bytes contain ``secret``."""
    needle = secret.encode()
    return [
        str(p.relative_to(home))
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.is_symlink() and needle in p.read_bytes()
    ]


def test_a_pasted_key_is_refused_naming_its_kind_and_redact_mode_stores_the_marker(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def refusing() -> None:
        async with stdio_client(home) as client:
            await call(client, "store", {"content": "The artifacts bucket is ledger-artifacts"})
            head = journal_head(home)
            code, text = await error(
                client, "store",
                {"content": f"CI uploads with the access key {AWS_KEY} and its secret"},
            )  # fmt: skip
            assert code == "secret_refused"
            assert "aws_access_key in content at character 31" in text and AWS_KEY not in text
            code, text = await error(
                client, "store",
                {"name": "deploy", "steps": ["ssh in", f"paste the key:\n{PEM}"]},
            )  # fmt: skip
            assert code == "secret_refused" and "private_key in steps[1]" in text
            code, text = await error(
                client, "store",
                {"content": "moved the database",
                 "context": {"url": f"postgres://app:{PG_PASSWORD}@db.internal/app"}},
            )  # fmt: skip
            assert code == "secret_refused" and "url_password in context.url" in text
            assert PG_PASSWORD not in text
            assert journal_head(home) == head, "a refused store writes nothing"

    anyio.run(refusing)
    for secret in (AWS_KEY, PG_PASSWORD, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"):
        assert _anywhere(home, secret) == []

    (home / "ferrex.toml").write_text('[store]\nsecrets = "redact"\n')

    async def redacting() -> None:
        async with stdio_client(home) as client:
            stored = await call(
                client, "store", {"content": f"CI pushes releases with {GITHUB} (rotate monthly)"}
            )
            assert stored["status"] == "stored"
            assert stored["redacted"] == [{"field": "content", "kind": "github_token", "at": 24}]
            assert any("redacted a likely github_token" in w for w in stored["warnings"])
            found = await call(client, "recall", {"query": "how does CI push releases"})
            texts = [r.get("content") for r in found["results"] if r["id"] == stored["id"]]
            assert texts == ["CI pushes releases with [redacted:github_token] (rotate monthly)"]

    anyio.run(redacting)
    assert _anywhere(home, GITHUB) == []


def test_import_redacts_or_skips_with_a_report_and_scan_finds_what_allow_stored(
    tmp_path: Path,
) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps(line)
            for line in (
                {"content": f"CI uploads with {AWS_KEY}"},
                {"content": "The release train leaves on Thursdays"},
                {"subject": "ci", "predicate": "push token", "object": GITHUB},
            )
        )
        + "\n"
    )

    redacting = tmp_path / "redacting"
    done = ferrex(redacting, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"] == {"stored": 3}
    assert report["secrets"] == {"lines": 2, "kinds": {"aws_access_key": 1, "github_token": 1}}
    assert report["lines"][0]["redacted"] == [
        {"field": "content", "kind": "aws_access_key", "at": 16}
    ]
    assert report["lines"][2]["redacted"][0]["field"] == "object"
    assert AWS_KEY not in done.stdout and GITHUB not in done.stdout
    assert _anywhere(redacting, AWS_KEY) == [] and _anywhere(redacting, GITHUB) == []

    skipping = tmp_path / "skipping"
    done = ferrex(skipping, "import", str(lines), "--secrets", "skip")
    assert done.returncode == 0, done.stderr
    assert "line 1: skipped [secret_refused]" in done.stdout
    assert "line 3: skipped [secret_refused]" in done.stdout
    assert "2 skipped, 1 stored; likely secrets in 2 lines, skipped" in done.stdout
    assert AWS_KEY not in done.stdout and _anywhere(skipping, AWS_KEY) == []

    # Under allow the secrets are stored; scan finds them, never printing them.
    allowing = tmp_path / "allowing"
    allowing.mkdir()
    (allowing / "ferrex.toml").write_text('[store]\nsecrets = "allow"\n')
    done = ferrex(allowing, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    ids = [line.get("id") for line in json.loads(done.stdout)["lines"]]
    assert _anywhere(allowing, AWS_KEY) != []
    done = ferrex(allowing, "secrets", "scan", "--json")
    assert done.returncode == 0, done.stderr
    scan = json.loads(done.stdout)
    assert AWS_KEY not in done.stdout and GITHUB not in done.stdout
    assert scan["scanned"] == 3 and scan["memories"] == 2
    assert [(f["id"], f["field"], f["kind"], f["at"]) for f in scan["found"]] == sorted(
        [(ids[0], "content", "aws_access_key", 16), (ids[2], "object", "github_token", 0)]
    )
    assert "ferrex forget" in scan["purge"] and "journal compact" in scan["purge"]

    # A dump of those memories imports into a fresh home redacted (the dump path).
    dump = tmp_path / "dump.jsonl"
    assert ferrex(allowing, "export", "jsonl", str(dump)).returncode == 0
    restored = tmp_path / "restored"
    done = ferrex(restored, "import", str(dump), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["format"] == "dump" and report["secrets"]["lines"] == 2
    assert _anywhere(restored, AWS_KEY) == []

    # The purge the scan names removes them for real.
    for memory_id in (ids[0], ids[2]):
        assert ferrex(allowing, "forget", memory_id).returncode == 0
    done = ferrex(allowing, "journal", "compact")
    assert done.returncode == 0, done.stderr
    done = ferrex(allowing, "secrets", "scan")
    assert done.returncode == 0 and "no likely secrets in 1 memory" in done.stdout
    assert _anywhere(allowing / "journal", AWS_KEY) == []


def test_a_token_as_a_namespace_a_context_key_or_in_disguise_stays_out_and_scan_never_shows_it(
    tmp_path: Path,
) -> None:
    zero_width = f"{GITHUB[:12]}\u200b{GITHUB[12:]}"
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in GITHUB)
    home = tmp_path / "home"

    async def refusing() -> None:
        async with stdio_client(home) as client:
            await call(client, "store", {"content": "The release train leaves on Thursdays"})
            head = journal_head(home)
            code, text = await error(
                client, "store", {"content": "release notes", "namespace": GITHUB}
            )
            assert code == "secret_refused" and "github_token in namespace at character 0" in text
            code, text = await error(
                client, "store", {"content": "release notes", "context": {GITHUB: "ci"}}
            )
            assert code == "secret_refused"
            assert "github_token in context.[redacted:github_token] (key)" in text
            assert GITHUB not in text
            code, text = await error(client, "store", {"content": f"CI pushes with {zero_width}"})
            assert code == "secret_refused" and "github_token in content at character 15" in text
            assert journal_head(home) == head

    anyio.run(refusing)
    assert _anywhere(home, GITHUB) == [] and _anywhere(home, GITHUB[12:]) == []

    lines = tmp_path / "in.jsonl"
    lines.write_text(
        "\n".join(
            json.dumps(line)
            for line in (
                {"content": f"CI pushes with {fullwidth} (rotate monthly)"},
                {"content": "release notes", "context": {GITHUB: {"scope": "repo"}}},
                {"content": "the release train leaves on Thursdays", "namespace": GITHUB},
            )
        )
        + "\n"
    )
    redacting = tmp_path / "redacting"
    done = ferrex(redacting, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["secrets"] == {"lines": 3, "kinds": {"github_token": 3}}
    assert GITHUB not in done.stdout and fullwidth not in done.stdout
    assert _anywhere(redacting, GITHUB) == [] and _anywhere(redacting, fullwidth) == []

    # Under allow they are stored; scan finds the namespace's token and never prints it.
    allowing = tmp_path / "allowing"
    allowing.mkdir()
    (allowing / "ferrex.toml").write_text('[store]\nsecrets = "allow"\n')
    assert ferrex(allowing, "import", str(lines)).returncode == 0
    done = ferrex(allowing, "secrets", "scan", "--json")
    assert done.returncode == 0, done.stderr
    assert GITHUB not in done.stdout and fullwidth not in done.stdout
    found = json.loads(done.stdout)["found"]
    assert sorted((f["namespace"], f["field"]) for f in found) == [
        ("[redacted:github_token]", "namespace"),
        ("default", "content"),
        ("default", "context.[redacted:github_token] (key)"),
    ]


# Passwords as a new user wrote them (issue: stored as plain text), and text about passwords
# that must be stored.
NAMED_PASSWORDS = (
    {"content": "The staging database password for orbit is Tr0ub4dor&3-staging, user orbit_app."},
    {"content": "password for the orbit staging db: Tr0ub4dor&3x"},
    {"content": "orbit creds: orbit_app / Tr0ub4dor&3x"},
    {"subject": "orbit staging db", "predicate": "password", "object": "Tr0ub4dor&3x"},
)
ABOUT_PASSWORDS = (
    {"content": "rotate the staging password every 90 days"},
    {"content": "the password policy requires 12 characters"},
    {"content": "password reset emails go through SES"},
    {"content": "the orbit API uses a token bucket rate limiter"},
    {"content": "set the API key in the env var ORBIT_KEY"},
    {"content": "the secret is stored in Vault at secret/orbit/db"},
    {"subject": "orbit staging db", "predicate": "password", "object": "see 1Password"},
)


def test_a_password_named_in_prose_a_creds_pair_or_a_fact_is_refused_and_text_about_them_stored(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"

    async def storing() -> None:
        async with stdio_client(home) as client:
            await call(client, "store", {"content": "The release train leaves on Thursdays"})
            head = journal_head(home)
            where = (
                "content at character 43",
                "content at character 35",
                "content at character 25",
                "object at character 0",
            )
            for request, at in zip(NAMED_PASSWORDS, where, strict=True):
                code, text = await error(client, "store", dict(request))
                assert code == "secret_refused", request
                assert f"a likely password in {at}" in text and "Tr0ub4dor" not in text
            assert journal_head(home) == head, "a refused store writes nothing"
            for request in ABOUT_PASSWORDS:
                stored = await call(client, "store", dict(request))
                assert stored["status"] == "stored", request
                assert "redacted" not in stored

    anyio.run(storing)
    assert _anywhere(home, "Tr0ub4dor") == []

    # Imported under redact, each value is replaced; stored under allow, scan finds them.
    lines = tmp_path / "in.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in NAMED_PASSWORDS + ABOUT_PASSWORDS) + "\n")
    redacting = tmp_path / "redacting"
    done = ferrex(redacting, "import", str(lines), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["secrets"] == {"lines": 4, "kinds": {"password": 4}}
    assert _anywhere(redacting, "Tr0ub4dor") == [] and "Tr0ub4dor" not in done.stdout

    allowing = tmp_path / "allowing"
    allowing.mkdir()
    (allowing / "ferrex.toml").write_text('[store]\nsecrets = "allow"\n')
    assert ferrex(allowing, "import", str(lines)).returncode == 0
    done = ferrex(allowing, "secrets", "scan", "--json")
    assert done.returncode == 0, done.stderr
    assert "Tr0ub4dor" not in done.stdout
    scan = json.loads(done.stdout)
    assert scan["scanned"] == len(NAMED_PASSWORDS) + len(ABOUT_PASSWORDS)
    assert sorted((f["field"], f["kind"], f["at"]) for f in scan["found"]) == [
        ("content", "password", 25),
        ("content", "password", 35),
        ("content", "password", 43),
        ("object", "password", 0),
    ]
