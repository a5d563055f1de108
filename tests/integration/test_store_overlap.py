"""A single store embeds its text on the writer's ahead thread while it takes the lock and
catches up; the outcomes stay those of embedding first (``Writer._overlapped``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import FerrexError
from ferrex.models import Embedder
from ferrex.models.remote import ServerDown
from ferrex.rules.memory_input import StoreRequest


def _app(home: Path, embedder: Embedder) -> App:
    return App(home=home, config=load(home, None), _embedder=embedder)


def test_a_store_takes_the_lock_while_its_text_is_embedded(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(tmp_path, shared_embedder)
    try:
        writer = app.writer()
        writer.store(StoreRequest(content="the first store opens everything"))
        text = "the backup job moved to the night shift"
        locked = threading.Event()
        seen: list[tuple[str, bool]] = []
        embed_many = shared_embedder.embed_many

        def watched(texts: Sequence[str]) -> Any:
            if text in texts and not seen:
                # The model waits here until the store holds the writer lock: without the
                # overlap the lock comes after the embedding, and this times out.
                seen.append((threading.current_thread().name, locked.wait(timeout=10)))
            return embed_many(texts)

        exclusive = writer.journal.exclusive

        def exclusive_noted() -> Any:
            held = exclusive()

            class Noted:
                def __enter__(self) -> Any:
                    got = held.__enter__()
                    locked.set()
                    return got

                def __exit__(self, *exc: object) -> Any:
                    return held.__exit__(*exc)

            return Noted()

        monkeypatch.setattr(shared_embedder, "embed_many", watched)
        monkeypatch.setattr(writer.journal, "exclusive", exclusive_noted)
        result = writer.store(StoreRequest(content=text))
        assert result.status == "stored"
        assert seen == [("ferrex-embed-ahead", True)]
        memory = app.projections().read_model.get(result.id)
        assert memory is not None and memory.content == text
    finally:
        app.close()


def test_a_failure_to_embed_is_the_outcome_whatever_the_decision_would_say(
    tmp_path: Path, shared_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = _app(tmp_path, shared_embedder)
    try:
        writer = app.writer()
        first = writer.store(StoreRequest(content="the deploy window is on Thursday"))
        before = writer.journal.refresh().position
        embed_many = shared_embedder.embed_many

        def down(texts: Sequence[str]) -> Any:
            if threading.current_thread().name == "ferrex-embed-ahead":
                raise ServerDown("the embeddings server did not answer")
            return embed_many(texts)

        monkeypatch.setattr(shared_embedder, "embed_many", down)
        # A duplicate would be refused as one; with the embedding failed first, it is not.
        outcomes = writer.store_many([StoreRequest(content="the deploy window is on Thursday")])
        assert len(outcomes) == 1 and isinstance(outcomes[0], ServerDown), outcomes
        assert outcomes[0].code == "backend_unavailable"
        assert writer.journal.refresh().position == before  # nothing written

        def broken(texts: Sequence[str]) -> Any:
            if threading.current_thread().name == "ferrex-embed-ahead":
                raise RuntimeError("the model broke")
            return embed_many(texts)

        monkeypatch.setattr(shared_embedder, "embed_many", broken)
        with pytest.raises(RuntimeError, match="the model broke"):
            writer.store(StoreRequest(content="a text the model cannot take"))
        assert writer.journal.refresh().position == before
        monkeypatch.setattr(shared_embedder, "embed_many", embed_many)
        with pytest.raises(FerrexError) as refused:  # the model back: refused as a duplicate
            writer.store(StoreRequest(content="the deploy window is on Thursday"))
        assert refused.value.code == "duplicate"
        assert first.status == "stored"
    finally:
        app.close()
