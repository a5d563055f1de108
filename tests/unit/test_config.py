"""Configuration: precedence, validation that names the key, and in-place edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from ferrex.config import KEYS, _from_text, load, set_in_file, staleness_config
from ferrex.errors import UsageError


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    (tmp_path / "ferrex.toml").write_text('[models]\ndense = "mid"\nreranker = "ms-marco-MiniLM"\n')
    config = load(tmp_path, env={"FERREX_RERANKER": "none", "FERREX_QDRANT_URL": "http://x:6333"},
                  flags={"qdrant.url": "http://flag:6333"})  # fmt: skip
    assert config["models.dense"] == "mid" and config.origin("models.dense").endswith("ferrex.toml")
    assert config["models.reranker"] == "none"
    assert config.origin("models.reranker") == "env FERREX_RERANKER"
    assert config["qdrant.url"] == "http://flag:6333" and config.origin("qdrant.url") == "flag"
    assert config["journal.segment_bytes"] == 64 * 1024 * 1024
    assert config.origin("journal.segment_bytes") == "default"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[models]\ndense = 3\n", "'models.dense'.*must be str"),
        ("[journal]\nsegment_bytes = true\n", "'journal.segment_bytes'.*must be int"),
        ('[modles]\ndense = "small"\n', "unknown configuration key 'modles.dense'"),
        ("[models\n", "not valid TOML"),
    ],
)
def test_bad_files_are_errors_that_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "ferrex.toml").write_text(text)
    with pytest.raises(UsageError, match=message):
        load(tmp_path, env={})


def test_bad_env_and_missing_config_file(tmp_path: Path) -> None:
    # No integer key has an environment variable yet; the parsing is checked directly.
    key = next(k for k in KEYS if k.name == "journal.segment_bytes")
    with pytest.raises(UsageError, match="env X must be an integer"):
        _from_text(key, "lots", "env X")
    with pytest.raises(UsageError, match="does not exist"):
        load(tmp_path, tmp_path / "nope.toml", env={})


def test_set_in_file_keeps_everything_else(tmp_path: Path) -> None:
    file = tmp_path / "ferrex.toml"
    set_in_file(file, "models.dense", "small")
    assert load(tmp_path, env={})["models.dense"] == "small"
    file.write_text('# my settings\n[models]\n# which model\ndense = "small"\n\n[qdrant]\n')
    set_in_file(file, "models.dense", "/opt/models/my model")
    text = file.read_text()
    assert "# my settings" in text and "# which model" in text
    assert load(tmp_path, env={})["models.dense"] == "/opt/models/my model"
    set_in_file(file, "qdrant.url", 'http://h:6333/"x"')
    assert load(tmp_path, env={})["qdrant.url"] == 'http://h:6333/"x"'
    with pytest.raises(UsageError, match="unknown configuration key"):
        set_in_file(file, "models.colour", "blue")


def test_staleness_in_the_design_form(tmp_path: Path) -> None:
    (tmp_path / "ferrex.toml").write_text(
        "[staleness.defaults]\nepisodic = { fresh = 30, aging = 90, stale = 90 }\n"
        '[staleness.namespaces."ci-infra"]\nprocedural = { fresh = 7, aging = 14, stale = 30.5 }\n'
    )
    staleness = staleness_config(load(tmp_path, env={}))
    assert staleness.for_namespace("ci-infra").procedural.stale == 30.5
    assert staleness.for_namespace("other") is staleness.base


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[staleness.defaults]\nepisodic.stale = 0.6\n",
         r"staleness.defaults: 'episodic.stale' = 0.6 reads as an old"),
        ("[staleness.namespaces.ops]\nsemantic = { fresh = 9, aging = 5, stale = 7 }\n",
         r"staleness.namespaces.ops: semantic: staleness ages need fresh <= aging <= stale"),
        ("[staleness.namespaces.ops]\nepisodic = { fresh = 1, stael = 7 }\n",
         r"staleness.namespaces.ops: unknown key 'episodic.stael'"),
    ],
)  # fmt: skip
def test_staleness_errors_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "ferrex.toml").write_text(text)
    config = load(tmp_path, env={})
    with pytest.raises(UsageError, match=message):
        staleness_config(config)


def test_recall_fusion_keys_reach_the_settings_and_are_checked(tmp_path: Path) -> None:
    from ferrex.read.request import RecallSettings

    (tmp_path / "ferrex.toml").write_text("[recall]\ndense_adapt = 0.75\ngraph_weight = 0.25\n")
    settings = RecallSettings.from_config(load(tmp_path, env={}))
    assert (settings.dense_adapt, settings.graph_weight) == (0.75, 0.25)
    assert RecallSettings.from_config(load(tmp_path / "none", env={})) == RecallSettings()
    (tmp_path / "ferrex.toml").write_text("[recall]\ngraph_weight = 1.5\n")
    with pytest.raises(UsageError, match=r"'recall\.graph_weight' must be between 0 and 1"):
        RecallSettings.from_config(load(tmp_path, env={}))
    (tmp_path / "ferrex.toml").write_text("[recall]\nnote_context_share = 0.1\n")
    assert RecallSettings.from_config(load(tmp_path, env={})).note_context_share == 0.1
    (tmp_path / "ferrex.toml").write_text("[recall]\nnote_context_share = -0.1\n")
    with pytest.raises(UsageError, match=r"'recall\.note_context_share' must be between 0 and 1"):
        RecallSettings.from_config(load(tmp_path, env={}))
    (tmp_path / "ferrex.toml").write_text("[recall]\nquery_adapter = 0.5\n")
    assert RecallSettings.from_config(load(tmp_path, env={})).query_adapter == 0.5
    (tmp_path / "ferrex.toml").write_text("[recall]\nquery_adapter = 2\n")
    with pytest.raises(UsageError, match=r"'recall\.query_adapter' must be between 0 and 1"):
        RecallSettings.from_config(load(tmp_path, env={}))


def test_the_recall_time_zone_is_a_known_zone(tmp_path: Path) -> None:
    from zoneinfo import ZoneInfo

    from ferrex.read.request import RecallSettings

    (tmp_path / "ferrex.toml").write_text('[recall]\ntime_zone = "Asia/Tokyo"\n')
    assert RecallSettings.from_config(load(tmp_path, env={})).time_zone == ZoneInfo("Asia/Tokyo")
    (tmp_path / "ferrex.toml").write_text('[recall]\ntime_zone = "Mars/Olympus"\n')
    with pytest.raises(UsageError, match=r"'recall\.time_zone' names no known time zone"):
        RecallSettings.from_config(load(tmp_path, env={}))
    assert RecallSettings.from_config(load(tmp_path, env={"FERREX_TIME_ZONE": "utc"})) == (
        RecallSettings()
    )


def test_every_default_written_beside_a_key_is_the_keys(tmp_path: Path) -> None:
    """A default that a settings class or a module repeats from :data:`ferrex.config.KEYS`
    (for callers that build it without a configuration: tests, tools) is the key's, so the
    two cannot drift: the store's and recall's settings as a whole (their fields read their
    defaults from the key table, ``config.default_of``), and the others by name."""
    from ferrex.core.settings import StoreSettings
    from ferrex.models.late import DEFAULT_WEIGHT
    from ferrex.models.remote import RemoteSettings
    from ferrex.models.rerank import DEFAULT_POOL
    from ferrex.read.request import RecallSettings
    from ferrex.rules.consolidation import DEFAULT_KEEP_RATIO
    from ferrex.server.dashboard.stream import STREAMS_PER_PRINCIPAL

    defaults = load(tmp_path / "none", env={})
    assert StoreSettings.from_config(defaults) == StoreSettings()
    assert RecallSettings.from_config(defaults) == RecallSettings()
    key = {k.name: k.default for k in KEYS}
    remote = RemoteSettings()
    repeated = {
        "models.embedding_url": remote.url,
        "models.embedding_key_env": remote.key_env,
        "models.query_prefix": remote.query_prefix,
        "models.passage_prefix": remote.passage_prefix,
        "models.embedding_input_type": remote.input_type,
        "models.embedding_timeout": remote.timeout,
        "models.embedding_batch": remote.batch,
        "server.max_streams_per_principal": STREAMS_PER_PRINCIPAL,
        "recall.rerank_pool": DEFAULT_POOL,
        "recall.late_weight": DEFAULT_WEIGHT,
        "consolidation.keep_ratio": DEFAULT_KEEP_RATIO,
    }
    assert {name: key[name] for name in repeated} == repeated
