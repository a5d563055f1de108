"""``models.dense = "openai:MODEL"`` end to end through the CLI, against a real embeddings
server on loopback that serves the bundled model (tests/embedding_server.py): store and
recall, the dimension probe and the mismatch refusal, new weights under an old name, the
server dying mid-import, recall falling back on BM25, and the key never shown."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ferrex.cli import cli
from ferrex.models import Embedder
from projections.generations import read_pointer
from tests.embedding_server import EmbeddingServer

KEY = "sk-e2e-9f3Kq-never-print-me"
MODEL = "openai:all-minilm"


@pytest.fixture
def server(shared_embedder: Embedder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(shared_embedder, key=KEY) as running:
        yield running


def configure(home: Path, url: str, model: str = MODEL, **extra: object) -> None:
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[models]", f'dense = "{model}"', f'embedding_url = "{url}"',
             "embedding_timeout = 5.0", "embedding_batch = 16"]  # fmt: skip
    lines += [f"{name} = {json.dumps(value)}" for name, value in extra.items()]
    (home / "ferrex.toml").write_text("\n".join(lines) + "\n")


def run(
    home: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> Result:
    return CliRunner(env={"FERREX_EMBEDDING_KEY": KEY, **(env or {})}).invoke(
        cli, ["--home", str(home), *args], input=stdin
    )


def stored_contents(home: Path) -> list[str]:
    result = run(home, "export", "jsonl", "-")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return [line["content"] for line in lines if line["type"] == "episodic"]


def test_store_and_recall_through_the_server(server: EmbeddingServer, tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure(home, server.url)
    result = run(home, "store", "--content", "The staging database moved to Frankfurt", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "stored"
    run(home, "store", "--content", "Lunch on Fridays is pizza at the corner place")
    calls = server.calls()
    result = run(home, "recall", "where is the staging DB hosted?", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["results"][0]["content"].startswith("The staging database")
    assert "warning" not in doc
    # The query went to the server too (a paraphrase: the dense leg found it).
    assert any(s.inputs == ["where is the staging DB hosted?"] for s in server.seen[calls:])
    doctor = run(home, "doctor", "--json")
    assert doctor.exit_code == 0, doctor.output
    dense = json.loads(doctor.stdout)["dense"]
    assert dense["kind"] == "remote" and dense["identity"]["dim"] == 384
    assert dense["identity"]["file_sha256"].startswith("probe-")
    assert dense["server"]["key_env"] == "FERREX_EMBEDDING_KEY" and dense["server"]["key_set"]
    assert dense["collection"]["matches"] is True


def test_another_dimension_is_refused_with_the_reembed_command(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    configure(home, server.url)
    assert run(home, "store", "--content", "Backups run at 02:00 UTC every night").exit_code == 0
    server.transform = "truncated"  # the server now serves a 256-dimension model
    result = run(home, "recall", "when do backups run?")
    assert result.exit_code == 4
    assert "[model_mismatch]" in result.stderr
    assert "384-dimension" in result.stderr and "256 dimensions" in result.stderr
    assert f"ferrex reembed --model {MODEL}" in result.stderr
    result = run(home, "reembed", "--model", MODEL, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"].startswith(f"{MODEL}|256|probe-")
    result = run(home, "recall", "when do backups run?", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["content"].startswith("Backups run")


def test_a_home_built_with_the_bundled_model_is_not_silently_re_embedded(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    assert run(home, "store", "--content", "The office closes early on Friday").exit_code == 0
    configure(home, server.url)
    result = run(home, "store", "--content", "Another memory")
    assert result.exit_code == 4 and "[model_mismatch]" in result.stderr
    assert "sentence-transformers/all-MiniLM-L6-v2" in result.stderr
    assert f"ferrex reembed --model {MODEL}" in result.stderr


def test_a_home_built_with_a_server_model_is_not_silently_re_embedded_either(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    configure(home, server.url)
    assert run(home, "store", "--content", "The office closes early on Friday").exit_code == 0
    generation = read_pointer(home).generation  # type: ignore[union-attr]
    bundled = {"FERREX_EMBEDDING_MODEL": "small"}
    result = run(home, "recall", "office hours", env=bundled)
    # Refused as the other direction is, not rebuilt with the bundled model.
    assert result.exit_code == 4 and "[model_mismatch]" in result.stderr
    assert MODEL in result.stderr and "sentence-transformers/all-MiniLM-L6-v2" in result.stderr
    assert "ferrex reembed --model small" in result.stderr
    assert read_pointer(home).generation == generation  # type: ignore[union-attr]
    assert run(home, "recall", "office hours").exit_code == 0  # the server's model still serves
    # The command it names moves the home to the bundled model, which then serves.
    assert run(home, "reembed", "--model", "small", env=bundled).exit_code == 0
    result = run(home, "recall", "office hours", "--json", env=bundled)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"][0]["content"].startswith("The office")


def test_new_weights_under_the_same_name_are_noticed(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    configure(home, server.url)
    assert run(home, "store", "--content", "The release train leaves on Tuesdays").exit_code == 0
    server.transform = "rolled"  # same name, same dimension, other vectors
    result = run(home, "recall", "release schedule")
    assert result.exit_code == 4 and "[model_mismatch]" in result.stderr
    assert "new weights served under the same name" in result.stderr
    assert "probe fingerprint" in result.stderr


_VOCABULARY = (
    "apple river cobalt lantern meadow quartz falcon harbor violin canyon ember glacier "
    "mosaic orchid pepper saddle thistle tundra velvet walnut yonder zephyr anchor basalt "
    "cactus dahlia eclipse fjord gondola hazel igloo jasmine kiwi lagoon mango nectar oasis "
    "prairie quiver radish sierra tulip umber vortex willow xenon yarrow zinnia badger "
    "compass dune ferret granite hammock iris juniper kettle lemur marble nutmeg otter "
    "pebble quill raven sequoia tiger urchin vulture wombat yak zebra"
)
WORDS = _VOCABULARY.split()


def import_lines(count: int) -> str:
    chooser = random.Random(2026)
    lines = []
    for i in range(count):
        words = " ".join(chooser.sample(WORDS, 7))
        lines.append(json.dumps({"content": f"Note {i}: {words}"}))
    return "\n".join(lines) + "\n"


def test_server_killed_mid_import_then_a_rerun_stores_the_rest_once(
    server: EmbeddingServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"
    configure(home, server.url)
    lines = import_lines(300)
    # One probe, 16 calls for the first chunk of 256 texts (batches of 16), one call of the
    # second chunk: the server dies while the second chunk is being embedded.
    server.die_after = 18
    first = run(home, "import", "-", "--json", stdin=lines)
    assert first.exit_code == 5, first.output
    outcomes = json.loads(first.stdout)["lines"]
    stored = {o["line"] for o in outcomes if o["status"] == "stored"}
    unavailable = {o["line"] for o in outcomes if o["status"] == "unavailable"}
    assert len(stored) + len(unavailable) + sum(o["status"] == "refused" for o in outcomes) == 300
    assert unavailable == set(range(257, 301))  # the whole second chunk, nothing of it half-done
    assert all(o["code"] == "backend_unavailable" for o in outcomes if o["line"] in unavailable)
    # What was acknowledged is all there, and nothing of the rest.
    server.die_after = None
    server.start()  # back, on the same port
    contents = stored_contents(home)
    assert len(contents) == len(stored) == len(set(contents))
    second = run(home, "import", "-", "--json", stdin=lines)
    assert second.exit_code in (0, 7), second.output
    again = {o["line"]: o for o in json.loads(second.stdout)["lines"]}
    # the lines stored the first time are known by their import keys: skipped, not re-decided
    assert all(again[n]["status"] == "skipped" for n in stored)
    newly = {n for n, o in again.items() if o["status"] == "stored"}
    assert newly <= unavailable and len(newly) >= len(unavailable) - 2
    contents = stored_contents(home)
    assert len(contents) == len(stored) + len(newly) == len(set(contents))
    assert KEY not in first.output + second.output + caplog.text


def test_recall_falls_back_on_bm25_and_says_so(
    server: EmbeddingServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"
    configure(home, server.url)
    for content in ("The VPN certificate expires on 2027-01-15",
                    "Deploys are frozen during the holiday week"):  # fmt: skip
        assert run(home, "store", "--content", content).exit_code == 0
    server.stop()
    result = run(home, "recall", "VPN certificate", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["results"][0]["content"].startswith("The VPN certificate")
    assert "refused the connection" in doc["warning"]
    assert "keyword (BM25) matching alone" in doc["warning"]
    text = run(home, "recall", "VPN certificate")
    assert text.exit_code == 0 and "keyword (BM25) matching alone" in text.stderr
    # A store cannot be made without its vector: refused, nothing written.
    before = run(home, "journal", "verify", "--json")
    store = run(home, "store", "--content", "Something new while the server is down")
    assert store.exit_code == 5 and "[backend_unavailable]" in store.stderr
    after = run(home, "journal", "verify", "--json")
    assert json.loads(after.stdout)["head_position"] == json.loads(before.stdout)["head_position"]
    # Back: dense recall again, no warning.
    server.start()
    doc = json.loads(run(home, "recall", "VPN certificate", "--json").stdout)
    assert "warning" not in doc
    assert KEY not in result.output + text.output + store.output + caplog.text


def test_the_key_is_never_written_or_shown(
    server: EmbeddingServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    home = tmp_path / "home"
    configure(home, server.url)
    outputs = [run(home, "store", "--content", "Alice owns the billing service").output]
    outputs.append(run(home, "config", "show").output)
    outputs.append(run(home, "doctor").output)
    outputs.append(run(home, "recall", "billing").output)
    # A server that refuses the key (and echoes it back in its error body).
    server.key = "another-key"
    refused = run(home, "store", "--content", "Bob owns the search service")
    assert refused.exit_code == 4 and "[model_unauthorized]" in refused.stderr
    assert "FERREX_EMBEDDING_KEY" in refused.stderr
    outputs.append(refused.output)
    assert all(s.authorization == f"Bearer {KEY}" for s in server.seen)  # it was sent
    written = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert KEY.encode() not in written
    assert not any(KEY in output for output in outputs)
    assert KEY not in caplog.text


def test_bad_settings_are_invalid_input(tmp_path: Path) -> None:
    home = tmp_path / "home"
    configure(home, "localhost:11434/v1")
    result = run(home, "config", "show")
    assert result.exit_code == 2 and "models.embedding_url" in result.stderr
    configure(home, "http://127.0.0.1:9/v1", embedding_key_env="sk-live-abc")
    result = run(home, "config", "show")
    assert result.exit_code == 2 and "name of an environment variable" in result.stderr
    configure(home, "http://127.0.0.1:9/v1", embedding_timeout=0)
    assert run(home, "config", "show").exit_code == 2
