"""The pipelined import: the next chunk is embedded on a worker thread while one is decided
and written; outcomes stay in input order, a refused line in the middle stays that line's,
and an import killed part way (SIGKILL) and run again stores every line exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ferrex.app import App
from ferrex.cli import cli
from ferrex.config import load
from ferrex.errors import FerrexError, Refused
from ferrex.models import Embedder, choose_embedding_model
from ferrex.rules.memory_input import StoreRequest
from ferrex.write.writer import StoreResult

TOPICS = [
    "deploy",
    "ledger",
    "backup",
    "invoice",
    "rota",
    "laptop",
    "vendor",
    "roadmap",
    "outage",
    "survey",
]


def _note(i: int) -> str:
    return f"note {i}: the {TOPICS[i % 10]} item number {i * 7919 % 10007} moved to week {i % 52}"


def test_outcomes_stay_in_input_order_across_pipelined_chunks(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer = app.writer()
        requests = [StoreRequest(content=_note(i)) for i in range(30)]
        requests[13] = StoreRequest(content="")  # invalid: refused before any chunk
        requests[17] = StoreRequest(content=_note(4))  # a duplicate of line 4: refused
        threads: set[str] = set()
        embed_many = shared_embedder.embed_many

        def watched(texts: object) -> object:
            threads.add(threading.current_thread().name)
            return embed_many(texts)  # type: ignore[arg-type]

        shared_embedder.embed_many = watched  # type: ignore[assignment,method-assign]
        try:
            seen: list[tuple[int, int]] = []
            outcomes = writer.store_many(
                requests, chunk=4, progress=lambda done, total: seen.append((done, total))
            )
        finally:
            del shared_embedder.embed_many
        assert any(name.startswith("ferrex-embed") for name in threads), threads
        assert len(outcomes) == len(requests)
        assert isinstance(outcomes[13], FerrexError) and outcomes[13].code == "invalid_input"
        assert isinstance(outcomes[17], Refused) and outcomes[17].code == "duplicate"
        projections = app.projections()
        for i, outcome in enumerate(outcomes):
            if i in (13, 17):
                continue
            assert isinstance(outcome, StoreResult) and outcome.status == "stored", (i, outcome)
            memory = projections.read_model.get(outcome.id)
            assert memory is not None and memory.content == _note(i), i
        positions = [o.position for o in outcomes if isinstance(o, StoreResult)]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        assert projections.read_model.count() == 28
        assert seen[-1] == (30, 30) and [d for d, _ in seen] == sorted(d for d, _ in seen)
    finally:
        app.close()


def _import_file(tmp_path: Path, count: int, bad_at: int) -> Path:
    lines = [json.dumps({"content": _note(i)}) for i in range(count)]
    lines[bad_at] = json.dumps({"content": _note(1), "confidence": 7})  # invalid, mid-file
    path = tmp_path / "notes.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout


def test_an_import_with_a_bad_line_reports_each_line_in_place(tmp_path: Path) -> None:
    count, bad = 600, 301  # three chunks of the writer: the bad line in the second
    source = _import_file(tmp_path, count, bad)
    code, out = _run(tmp_path / "home", "import", str(source), "--json")
    assert code == 2, out
    report = json.loads(out)
    assert [line["line"] for line in report["lines"]] == list(range(1, count + 1))
    assert report["counts"] == {"stored": count - 1, "invalid": 1}
    assert report["lines"][bad]["status"] == "invalid"
    app = App(home=tmp_path / "home", config=load(tmp_path / "home", None))
    try:
        model = app.projections().read_model
        for number in (1, bad, bad + 2, count):
            line = report["lines"][number - 1]
            memory = model.get(line["id"])
            assert memory is not None and memory.content == _note(number - 1), number
    finally:
        app.close()


def test_an_import_killed_part_way_stores_every_line_once_when_run_again(
    tmp_path: Path,
) -> None:
    count = 1500
    source = _import_file(tmp_path, count, bad_at=700)
    home = tmp_path / "home"
    victim = subprocess.Popen(
        [sys.executable, "-c", "from ferrex.cli import main; main()", "--home", str(home),
         "import", str(source), "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ),
    )  # fmt: skip
    journal = home / "journal"
    try:
        # Killed once its first group commit is on disk, while later chunks are still to go.
        while victim.poll() is None:
            if journal.is_dir() and sum(p.stat().st_size for p in journal.rglob("*.seg")) > 16:
                break
            threading.Event().wait(0.05)
        finished_first = victim.poll() is not None
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.wait()
    code, out = _run(home, "import", str(source), "--json")
    assert code == 2, out
    report = json.loads(out)
    counts = report["counts"]
    assert counts["invalid"] == 1
    assert counts.get("stored", 0) + counts.get("skipped", 0) == count - 1
    if not finished_first:
        assert counts.get("skipped", 0) > 0, counts  # the first run's lines were kept
    app = App(home=home, config=load(home, None))
    try:
        model = app.projections().read_model
        assert model.count() == count - 1
        contents = [m.content for m in model.memories()]
        assert sorted(contents) == sorted(_note(i) for i in range(count) if i != 700)
    finally:
        app.close()
    _, again = _run(home, "import", str(source), "--json")  # and a third run adds nothing
    assert json.loads(again)["counts"] == {"skipped": count - 1, "invalid": 1}


def test_an_import_loads_the_model_while_validating_and_never_leaves_the_load_running(
    tmp_path: Path,
) -> None:
    embedder = Embedder(tmp_path, choose_embedding_model("small", {}))
    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=embedder)
    try:
        writer = app.writer()
        outcomes = writer.store_many([StoreRequest(content=""), StoreRequest(type="nope")])
        assert all(isinstance(o, FerrexError) for o in outcomes)
        # Every line was bad, yet the load begun for them has ended before the answer.
        assert embedder.loaded
        assert not any(t.name == "ferrex-model-load" for t in threading.enumerate())
        one = Embedder(tmp_path, choose_embedding_model("small", {}))
        single = App(home=tmp_path / "one", config=load(tmp_path / "one", None), _embedder=one)
        try:
            bad = single.writer().store_many([StoreRequest(content="")])
            assert isinstance(bad[0], FerrexError) and not one.loaded  # one store: no load
        finally:
            single.close()
    finally:
        app.close()


def test_an_import_loads_the_model_while_it_opens_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _import_file(tmp_path, 5, bad_at=2)
    seen: list[bool] = []
    opened = App.projections

    def projections(self: App, *args: Any, **kwargs: Any) -> Any:
        # The first open of the projections (SQLite, Qdrant): the model is on its way.
        if not seen:
            loader = self.embedder()._loader
            seen.append(self.embedder().loaded or (loader is not None and loader.is_alive()))
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(App, "projections", projections)
    code, out = _run(tmp_path / "home", "import", str(source), "--json")
    assert code == 2, out
    assert json.loads(out)["counts"] == {"stored": 4, "invalid": 1}
    assert seen == [True]
    assert not any(t.name == "ferrex-model-load" for t in threading.enumerate())
    # A chat export of the wrong shape is refused, and the load begun for it has ended.
    bad = tmp_path / "bad.json"
    bad.write_text('[{"neither": "claude nor chatgpt"}]')
    code, out = _run(tmp_path / "home", "import", str(bad), "--json")
    assert code != 0
    assert not any(t.name == "ferrex-model-load" for t in threading.enumerate())


def test_the_first_chunk_is_embedded_while_the_rest_are_validated(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import of more than one chunk hands its first chunk's texts to the model as soon
    as they are validated (on ``ferrex-embed-first``), before the later lines are; the
    pipeline then finds them cached and stores what it stored before."""
    from ferrex.write import pipeline

    app = App(home=tmp_path, config=load(tmp_path, None), _embedder=shared_embedder)
    try:
        writer = app.writer()
        requests = [StoreRequest(content=f"{_note(i)} (first chunk test)") for i in range(10)]
        requests[1] = StoreRequest(content="")  # invalid: not in the first chunk's texts
        validated: list[str] = []
        real_validate = pipeline.validate

        def counted(request: StoreRequest, *args: Any, **kwargs: Any) -> Any:
            validated.append(request.content or "")
            return real_validate(request, *args, **kwargs)

        monkeypatch.setattr(pipeline, "validate", counted)
        started: list[int] = []
        ahead = pipeline.StorePipeline._embedding_ahead

        def starting(self: pipeline.StorePipeline, valid: Any) -> Any:
            started.append(len(validated))
            return ahead(self, valid)

        monkeypatch.setattr(pipeline.StorePipeline, "_embedding_ahead", starting)
        calls: list[tuple[str, list[str]]] = []
        embed_many = shared_embedder.embed_many

        def watched(texts: Any) -> Any:
            calls.append((threading.current_thread().name, list(texts)))
            return embed_many(texts)

        monkeypatch.setattr(shared_embedder, "embed_many", watched)
        outcomes = writer.store_many(requests, chunk=4)
        assert started == [4]  # once the first chunk's four lines were validated, not later
        first_texts = [r.content for r in (requests[0], requests[2], requests[3])]
        assert calls[0] == ("ferrex-embed-first", first_texts)
        statuses = [o.status if isinstance(o, StoreResult) else o.code for o in outcomes]
        assert statuses == ["stored", "invalid_input", *["stored"] * 8]
    finally:
        app.close()
