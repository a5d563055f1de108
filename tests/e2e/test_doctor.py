"""``ferrex doctor`` through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ferrex.cli import cli

MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
FERREX = Path(sys.executable).parent / "ferrex"
MODEL_VARIABLES = ("FERREX_EMBEDDING_MODEL", "FERREX_RERANKER", "FERREX_ALLOW_DOWNLOAD")


def _invoke(home: Path, *args: str, **env: str) -> Any:
    # Unset the model variables unless a test sets them, whatever the outer shell has.
    environment: dict[str, str | None] = {name: None for name in MODEL_VARIABLES}
    environment.update(env)
    return CliRunner().invoke(cli, ["--home", str(home), *args], env=environment)


def _subprocess_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    env.update(overrides)
    return env


def test_doctor_json_reports_working_models(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "doctor", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["data_dir"] == str(tmp_path)
    assert report["qdrant"]["mode"] == "embedded (Qdrant Edge)"
    assert report["qdrant"]["path"] == str(tmp_path / "qdrant")
    dense = report["dense"]
    assert (dense["status"], dense["configured"], dense["origin"]) == ("ok", "small", "default")
    assert dense["identity"] == {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "dim": 384,
        "file_sha256": MINILM_ONNX_SHA256,
        "variant": "int8-activations-2",
    }
    # The assembled model is the user's (the tests' cache), shared by every data directory.
    assert dense["source"] == str(
        Path(os.environ["FERREX_CACHE_DIR"]) / "models" / "all-MiniLM-L6-v2-int8"
    )
    assert not (tmp_path / "models" / "all-MiniLM-L6-v2-int8").exists()
    assert dense["test_vector_norm"] == pytest.approx(1.0, abs=1e-3)
    assert report["sparse"]["status"] == "ok"
    assert report["sparse"]["test_query_terms_matched"] > 0
    assert (report["reranker"]["status"], report["reranker"]["configured"]) == ("off", "none")
    assert report["downloads"]["allowed"] is False


def test_doctor_text_names_the_external_qdrant(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--qdrant-url", "http://qdrant.internal:6333", "doctor")
    assert result.exit_code == 0, result.output
    assert "qdrant-client (external server)  http://qdrant.internal:6333" in result.stdout
    assert "dense      small (default)  ok" in result.stdout
    assert MINILM_ONNX_SHA256 in result.stdout


def test_an_invalid_model_setting_exits_2(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "doctor", "--json", FERREX_EMBEDDING_MODEL="enormous")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["dense"]["status"] == "invalid"
    assert "enormous" in report["dense"]["error"]
    assert "error [invalid_input]" in result.stderr


def test_doctor_as_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(FERREX), "--home", str(tmp_path), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=_subprocess_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["dense"]["identity"]["file_sha256"] == MINILM_ONNX_SHA256
    assert report["ok"] is True


def test_a_missing_model_exits_4_with_the_report_and_the_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(FERREX), "--home", str(tmp_path), "doctor", "--json"],
        capture_output=True,
        text=True,
        env=_subprocess_env(FERREX_EMBEDDING_MODEL="mid", FERREX_RERANKER="bge-reranker-base"),
        timeout=120,
    )
    assert done.returncode == 4, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["dense"]["status"] == "unavailable"
    assert "BAAI/bge-small-en-v1.5" in report["dense"]["error"]
    assert "FERREX_ALLOW_DOWNLOAD=1" in report["dense"]["hint"]
    assert report["reranker"]["status"].startswith("unavailable: BAAI/bge-reranker-base")
    assert report["reranker"]["fallback"] == "recall runs without reranking"
    assert "error [model_unavailable]" in done.stderr
