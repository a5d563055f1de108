"""The CLI as a person meets it: no model where none is needed, readable output, the same
--agent-id/--namespace on every command, hints that name flags that exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from ferrex.cli import cli
from tests.e2e.mcp_helpers import FERREX, call, stdio_client

# A Python dict or list printed as is: a quoted key followed by a colon.
_RAW_DICT = re.compile(r"[{\[]\s*['\"][A-Za-z_]+['\"]\s*:")


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("human-home")
    for args in (
        ("--content", "The staging cluster runs in eu-west-1."),
        # A shared fact and an agent's private one that disagrees: both stand, a contradiction.
        ("--subject", "billing-api", "--predicate", "owned by", "--object", "payments team",
         "--visibility", "shared"),
        ("--subject", "billing-api", "--predicate", "owner", "--object", "platform team",
         "--agent-id", "ops-bot"),
        ("--content", "Disposable note to forget.", "--json"),
    ):  # fmt: skip
        code, _, err = run(home, "store", *args)
        assert code == 0, err
    return home


def _subprocess(home: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FERREX_CACHE_DIR": str(cache)}
    return subprocess.run(
        [FERREX, "--home", str(home), *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_commands_that_embed_nothing_load_no_model(home: Path, tmp_path: Path) -> None:
    # A fresh user cache: a command that loaded the default model would assemble it there.
    cache = tmp_path / "empty-cache"
    _, out, _ = run(home, "recall", "Disposable note to forget", "--json", "--limit", "1")
    victim = json.loads(out)["results"][0]["id"]
    for args in (
        ("stats",), ("stats", "--detailed"), ("reflect",), ("forget", victim),
        ("export", "jsonl", str(tmp_path / "dump.jsonl")), ("journal", "verify"),
        ("journal", "show", "--limit", "2"), ("config", "show"), ("doctor", "--quick"),
    ):  # fmt: skip
        done = _subprocess(home, *args, cache=cache)
        assert done.returncode == 0, (args, done.stderr)
        assert "loading model" not in done.stderr
        assert not (cache / "models").exists(), f"{args} loaded the embedding model"
    # ... and a store does (the check above can fail).
    done = _subprocess(home, "store", "--content", "One more note.", cache=cache)
    assert done.returncode == 0, done.stderr
    assert (cache / "models").exists()


def test_human_output_has_no_raw_dicts(home: Path) -> None:
    for args in (("stats", "--detailed"), ("reflect",), ("recall", "billing", "--explain")):
        code, out, err = run(home, *args)
        assert code == 0, err
        assert not _RAW_DICT.search(out), (args, out)
    code, out, _ = run(home, "stats", "--detailed")
    assert re.search(r"^  dense\.dim\s+384$", out, re.M), out
    code, out, _ = run(home, "reflect")
    assert "contradictions: 1" in out
    assert re.search(r"billing-api owned.by: payments team \(mem_\w+\) \| platform team", out), out
    code, out, _ = run(home, "recall", "billing owner", "--explain", "--limit", "1")
    assert re.search(r"^    legs \w+ .*fused [0-9.]+", out, re.M), out


def test_json_output_is_the_tool_document(home: Path) -> None:
    code, out, _ = run(home, "stats", "--detailed", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["models"]["dense"]["dim"] == 384 and "by_type" in doc


def test_agent_id_is_accepted_by_every_command_that_acts_as_an_agent(home: Path) -> None:
    code, out, err = run(home, "store", "--content", "Carol's private scratch note.",
                         "--agent-id", "carol", "--visibility", "private", "--json")  # fmt: skip
    assert code == 0, err
    private = json.loads(out)["id"]
    for command in (("recall", "scratch note"), ("stats",), ("reflect",)):
        code, _, err = run(home, *command, "--agent-id", "dave", "--json")
        assert code == 0, (command, err)
    code, _, err = run(home, "forget", "x", "--agent-id", "dave", "--json")
    assert code == 7 and "error [not_found]" in err  # the flag is taken; no memory x
    code, out, _ = run(home, "recall", "Carol's private scratch note", "--agent-id", "dave",
                       "--json")  # fmt: skip
    assert private not in {r["id"] for r in json.loads(out)["results"]}
    code, out, _ = run(home, "forget", private, "--agent-id", "dave", "--json")
    assert private not in json.loads(out)["forgotten"], "dave may not forget carol's memory"
    code, out, _ = run(home, "recall", "Carol's private scratch note", "--agent-id", "carol",
                       "--json")  # fmt: skip
    assert private in {r["id"] for r in json.loads(out)["results"]}
    # The global flag is the same thing, and the command's own one wins.
    code, out, _ = run(home, "--agent-id", "dave", "recall", "Carol's private scratch note",
                       "--agent-id", "carol", "--json")  # fmt: skip
    assert private in {r["id"] for r in json.loads(out)["results"]}


def test_serve_takes_agent_id_and_namespace(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> dict[str, object]:
        async with stdio_client(home, "serve", "--agent-id", "erin", "--namespace", "proj") as c:
            return await call(c, "store", {"content": "Erin's note, stored through serve.",
                                           "visibility": "private"})  # fmt: skip

    stored = anyio.run(main)
    assert stored["namespace"] == "proj"
    memory_id = str(stored["id"])
    seen = {}
    for agent in ("erin", "frank"):
        code, out, err = run(home, "recall", "Erin's note", "--namespace", "proj",
                             "--agent-id", agent, "--json")  # fmt: skip
        assert code == 0, err
        seen[agent] = memory_id in {r["id"] for r in json.loads(out)["results"]}
    assert seen == {"erin": True, "frank": False}


def test_help_says_what_namespace_defaults_to() -> None:
    runner = CliRunner()
    for command in ("store", "recall"):
        text = runner.invoke(cli, [command, "--help"]).stdout
        assert "store.default_namespace" in " ".join(text.split()), command
    for command in ("stats", "reflect"):
        text = " ".join(runner.invoke(cli, [command, "--help"]).stdout.split())
        assert "every namespace" in text, command


def test_the_split_long_hint_names_a_flag_that_exists(tmp_path: Path) -> None:
    long_text = " ".join(f"word{i}" for i in range(600))
    code, _, err = run(tmp_path, "store", "--content", long_text)
    assert code == 2, err
    flags = set(re.findall(r"--[a-z][a-z-]+", err))
    assert "--split-long" in flags, err
    store_help = CliRunner().invoke(cli, ["store", "--help"]).stdout
    assert all(flag in store_help for flag in flags), (flags, store_help)
    code, out, err = run(tmp_path, "store", "--content", long_text, "--split-long", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "stored"


def test_counts_agree_with_their_nouns_in_text_and_json_is_unchanged(tmp_path: Path) -> None:
    """A user trial read "1 possible conflicts", "1 memories", "1 records in 1 segments":
    one of a thing is singular in text; --json keeps its keys and numbers."""
    home = tmp_path / "home"
    for subject, predicate, obj in (
        ("billing service", "database", "PostgreSQL 14"),
        ("the billing service", "uses database", "PostgreSQL 16"),
    ):
        code, _, err = run(home, "store", "--subject", subject, "--predicate", predicate,
                           "--object", obj)  # fmt: skip
        assert code == 0, err
    code, out, err = run(home, "stats")
    assert code == 0 and "2 memories;" in out and "1 possible conflict," in out, (out, err)
    code, out, _ = run(home, "stats", "--json")
    assert json.loads(out)["needs_attention"]["possible_conflicts"] == 1, out
    one = tmp_path / "one"
    code, _, err = run(one, "store", "--content", "The staging cluster was rebuilt on Monday")
    assert code == 0, err
    code, out, _ = run(one, "stats")
    assert out.startswith("1 memory;") and "1 memories" not in out, out
    code, out, _ = run(one, "journal", "verify")
    assert out.startswith("1 record in 1 segment,"), out
    code, out, err = run(one, "export", "jsonl", str(tmp_path / "one.jsonl"))
    assert code == 0 and out.startswith("exported 1 memory and 0 entities to "), (out, err)
    assert "invalidated" not in out and "of them" not in out, out  # not "0 of them invalidated"
    code, out, _ = run(one, "export", "jsonl", str(tmp_path / "two.jsonl"), "--json")
    assert json.loads(out)["memories"] == 1, out
    code, out, _ = run(one, "recall", "staging cluster", "--json")
    first = json.loads(out)["results"][0]["id"]
    code, _, err = run(one, "store", "--content", "The staging cluster was rebuilt on Tuesday",
                       "--supersedes", first)  # fmt: skip
    assert code == 0, err
    code, out, err = run(one, "export", "jsonl", str(tmp_path / "three.jsonl"))
    assert code == 0, err
    assert out.startswith("exported 2 memories (1 invalidated) and 0 entities to "), out
