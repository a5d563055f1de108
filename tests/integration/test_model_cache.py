"""The default model is assembled once per user, in a private cache directory, from the
installed weights and the tokenizer files that ship inside ferrex."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ferrex.errors import ModelUnavailable
from ferrex.models import BUNDLED_DIR_NAME, choose_embedding_model, load_model, models_dir
from ferrex.models.bundled import TOKENIZER_DATA, assemble_bundled_model, bundled_sources
from ferrex.models.identity import CACHE_ENV, shared_models_dir, user_cache_dir


def test_the_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    home = Path("~").expanduser()
    assert user_cache_dir({}) == home / ".cache" / "ferrex"
    assert user_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "ferrex"
    # A relative XDG_CACHE_HOME is invalid by the spec and ignored.
    assert user_cache_dir({"XDG_CACHE_HOME": "relative"}) == home / ".cache" / "ferrex"
    explicit = {CACHE_ENV: str(tmp_path / "mine"), "XDG_CACHE_HOME": str(tmp_path)}
    assert user_cache_dir(explicit) == tmp_path / "mine"
    assert shared_models_dir(explicit) == tmp_path / "mine" / "models"


def test_two_homes_share_one_private_copy(tmp_path: Path) -> None:
    shared = tmp_path / "cache" / "models"
    choice = choose_embedding_model("small", {})
    first = load_model(choice, tmp_path / "home-a", shared=shared)
    second = load_model(choice, tmp_path / "home-b", shared=shared)
    assert first.source == second.source == shared / BUNDLED_DIR_NAME
    assert first.identity == second.identity
    for home in ("home-a", "home-b"):
        assert not (models_dir(tmp_path / home) / BUNDLED_DIR_NAME).exists()
    for directory in (tmp_path / "cache", shared, shared / BUNDLED_DIR_NAME):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    # The tokenizer files' licence travels with them.
    licence = (shared / BUNDLED_DIR_NAME / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0" in licence


def test_the_tokenizer_files_ship_with_ferrex() -> None:
    sources = bundled_sources()
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "LICENSE"):
        assert sources[name] == TOKENIZER_DATA / name
        assert sources[name].is_file()
    assert sources["model.onnx"].name == "model.onnx"
    assert "ferrex" not in sources["model.onnx"].parts[-3:-1]


def test_an_altered_licence_is_refused_before_assembly(tmp_path: Path) -> None:
    copies = tmp_path / "sources"
    copies.mkdir()
    sources: dict[str, Path] = {}
    for name, path in bundled_sources().items():
        sources[name] = copies / name
        sources[name].write_bytes(path.read_bytes())
    sources["LICENSE"].write_text("All rights reserved.\n", encoding="utf-8")
    target = tmp_path / "models" / BUNDLED_DIR_NAME
    with pytest.raises(ModelUnavailable) as raised:
        assemble_bundled_model(target, sources)
    assert str(sources["LICENSE"]) in raised.value.message
    assert not target.exists()
