"""A running server follows its configuration file: hot keys apply, the others wait."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import anyio
import pytest

from ferrex.config import Config, load
from ferrex.server.reload import ConfigWatcher
from tests.e2e.mcp_helpers import call, stdio_client


def _watch(home: Path) -> tuple[ConfigWatcher, list[Config], threading.Event]:
    seen: list[Config] = []
    arrived = threading.Event()

    def apply(config: Config) -> None:
        seen.append(config)
        arrived.set()

    watcher = ConfigWatcher(home / "ferrex.toml", load(home, None), lambda: load(home, None),
                            apply)  # fmt: skip
    return watcher, seen, arrived


def test_hot_keys_apply_and_restart_keys_wait(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    watcher, seen, arrived = _watch(home)
    watcher.start()
    try:
        time.sleep(0.5)  # the watch is in place
        with caplog.at_level(logging.WARNING, logger="ferrex"):
            (home / "ferrex.toml").write_text(
                '[recall]\nlimit = 9\n[store]\ndedup_threshold = 0.9\n[models]\ndense = "best"\n'
            )
            assert arrived.wait(20), "the change was not noticed"
            # the warnings are logged before the new configuration is applied
            assert "restart the server for it to take effect" in caplog.text
            assert "models.dense" in caplog.text
        config = seen[-1]
        assert config["recall.limit"] == 9 and config["store.dedup_threshold"] == 0.9
        assert config["models.dense"] == "small"  # waits for a restart
    finally:
        watcher.stop()


def test_a_broken_file_changes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = tmp_path / "home"
    home.mkdir()
    watcher, seen, _ = _watch(home)
    (home / "ferrex.toml").write_text("[recall\nlimit = ")
    with caplog.at_level(logging.ERROR, logger="ferrex"):
        outcome = watcher.check()
    assert outcome.applied == [] and seen == []
    assert "keeping the running configuration" in caplog.text
    (home / "ferrex.toml").write_text('[recall]\nlimit = "many"\n')
    assert watcher.check().applied == [] and seen == []


def test_a_running_server_takes_a_new_default_namespace(tmp_path: Path) -> None:
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as server:
            first = await call(server, "store", {"content": "Namespaces test: first note"})
            assert first["namespace"] == "default"
            (home / "ferrex.toml").write_text('[store]\ndefault_namespace = "proj-x"\n')
            deadline = time.monotonic() + 30
            namespace = "default"
            while namespace != "proj-x" and time.monotonic() < deadline:
                await anyio.sleep(0.3)
                doc = await call(server, "stats", {})
                namespace = doc["namespace"]
            assert namespace == "proj-x", "the server did not reload its configuration"
            later = await call(server, "store", {"content": "Namespaces test: a later note"})
            assert later["namespace"] == "proj-x"

    anyio.run(main)


def test_staleness_defaults_apply_to_every_namespace(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ferrex.app import App
    from ferrex.cli import cli

    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text(
        "[staleness.defaults]\nweights.age = 0.5\nweights.count = 0.0\n"
        '[staleness.namespaces."ci-infra"]\nprocedural = { fresh = 7, aging = 14, stale = 30 }\n'
    )
    app = App(home=home, config=load(home, None))
    try:
        settings = app.reader().settings
        assert settings.staleness.base.weights.age == 0.5
        ci = settings.staleness.for_namespace("ci-infra")
        assert ci.weights.age == 0.5 and ci.procedural.stale == 30.0  # over the defaults
    finally:
        app.close()
    (home / "ferrex.toml").write_text("[staleness.defaults]\nweights.age = 0.9\n")
    done = CliRunner().invoke(cli, ["--home", str(home), "stats"])
    assert done.exit_code == 2 and "weights must sum to 1" in done.stderr
    (home / "ferrex.toml").write_text("[staleness.namespaces.ops]\nepisodic.stale = 0.9\n")
    for command in (["stats"], ["config", "show"]):
        done = CliRunner().invoke(cli, ["--home", str(home), *command])
        assert done.exit_code == 2, command
        assert "staleness.namespaces.ops: 'episodic.stale' = 0.9 reads as an old" in done.stderr
        assert "episodic.stale_score = 0.9" in done.stderr


def test_recall_tuning_keys_are_checked(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ferrex.app import App
    from ferrex.cli import cli

    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text("[recall]\ndense_weight = 0.7\ncontext_share = 0.0\n")
    app = App(home=home, config=load(home, None))
    try:
        settings = app.reader().settings
        assert settings.dense_weight == 0.7 and settings.context_share == 0.0
    finally:
        app.close()
    (home / "ferrex.toml").write_text("[recall]\ndense_weight = 1.5\n")
    done = CliRunner().invoke(cli, ["--home", str(home), "recall", "anything"])
    assert done.exit_code == 2 and "recall.dense_weight" in done.stderr
