"""A turn embedded with the turn before it (``store.embed_context``), on real parts.

The dense vector of an episodic memory of an episode is that of its text followed by the
tail of the episode's previous turn; BM25 keeps the turn alone. The vector is derived from
the journal: a catch-up in a new process (a new sink, which has seen nothing) and a rebuild
give the same vectors as the first application.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ferrex.config import load
from ferrex.errors import UsageError
from ferrex.rules.fusion import opens_with_speaker
from journal import Journal, MemoriesForgotten, MemoryBody, MemoryStored
from journal.events import EpisodeRef
from projections.qdrant_edge import EdgeBackend
from projections.replay import Projections
from projections.vector_sink import Encoders, point_id, with_context
from tests.strategies import T0

CHARS = 40


def turn(mid: str, text: str, *, episode: str | None = None, index: int = 0,
         source: str | None = None) -> MemoryStored:  # fmt: skip
    return MemoryStored(
        memory_id=mid,
        namespace="default",
        memory_type="episodic",
        t_valid=T0,
        body=MemoryBody(content=text, source=source),
        episode=EpisodeRef(episode, index) if episode is not None else None,
    )


def vectors(p: Projections) -> dict[str, tuple[list[float], tuple[int, ...]]]:
    out = {}
    for mid in ("a0", "a1", "a2", "a3", "s0", "s1", "n0"):
        got = p.backend.retrieve(p.live.memories, [point_id(mid)])
        for dense, sparse, _ in got.values():
            out[mid] = ([round(x, 5) for x in dense], sparse.indices)
    return out


def embedded(encoders: Encoders, text: str) -> list[float]:
    return [round(float(x), 5) for x in next(iter(encoders.dense([text])))]


A0 = "We moved the user sessions out of Postgres into Redis last sprint."
A1 = "Yes, last Tuesday!"
A2 = "And the cache keys expire after a day."
A3 = "Good."


def test_a_turn_is_embedded_with_the_turn_before_it_and_replays_alike(
    tmp_path: Path, encoders: Encoders
) -> None:
    ctx = replace(encoders, identity=f"{encoders.identity}+ctx{CHARS}", context_chars=CHARS,
                  context_when=None)  # fmt: skip
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    try:
        journal.append([turn("a0", A0, episode="a0", index=0)])
        journal.append([turn("a1", A1, episode="a0", index=1)])
        journal.append([turn("s0", "Sam: the build is red", source="chat/1")])
        journal.append([turn("s1", "Ana: on it", source="chat/1"), turn("n0", "a note alone")])
        p = Projections.open(tmp_path, journal, backend, ctx)
        first = vectors(p)
        p.close()
        # A new process: its sink has seen none of the episode; the read model knows it.
        journal.append([turn("a2", A2, episode="a0", index=2)])
        journal.append([MemoriesForgotten(memory_ids=("a2",), namespace="default")])
        journal.append([turn("a3", A3, episode="a0", index=3)])
        p = Projections.open(tmp_path, journal, backend, ctx)
        caught_up = vectors(p)
        p.rebuild()
        rebuilt = vectors(p)
        p.close()
    finally:
        backend.close()
        journal.close()

    assert first["a0"][0] == embedded(encoders, A0)  # the first turn has no neighbour
    assert first["a1"][0] == embedded(encoders, with_context(A1, A0[-CHARS:]))
    assert first["a1"][1] == tuple(encoders.sparse(A1).indices)  # BM25: the turn alone
    assert first["s1"][0] == embedded(encoders, with_context("Ana: on it", "Sam: the build is red"))
    assert first["n0"][0] == embedded(encoders, "a note alone")  # no episode: no context
    # a2 was forgotten: a3's neighbour is a1, in the catch-up and in the rebuild alike.
    assert "a2" not in caught_up
    assert caught_up["a3"][0] == embedded(encoders, with_context(A3, A1[-CHARS:]))
    assert first == {k: caught_up[k] for k in first}
    assert rebuilt == caught_up


def test_embed_context_is_off_by_default_and_refused_out_of_range(tmp_path: Path) -> None:
    assert load(tmp_path, env={})["store.embed_context"] == 0
    assert load(tmp_path, env={"FERREX_EMBED_CONTEXT": "300"})["store.embed_context"] == 300
    (tmp_path / "ferrex.toml").write_text("[store]\nembed_context = 5000\n")
    with pytest.raises(UsageError) as refused:
        load(tmp_path, env={})
    assert "store.embed_context" in str(refused.value)


def test_with_context_puts_the_turn_first() -> None:
    assert with_context("Yes!", "Did you go?") == "Yes!\nDid you go?"
    assert with_context("Yes!", None) == "Yes!"
    assert with_context("Yes!", "") == "Yes!"


def test_only_a_labelled_turn_gets_its_neighbour_when_asked(
    tmp_path: Path, encoders: Encoders
) -> None:
    ctx = replace(encoders, context_chars=CHARS, context_when=opens_with_speaker)
    journal = Journal.open(tmp_path / "journal")
    backend = EdgeBackend(tmp_path / "qdrant")
    try:
        journal.append([turn("a0", A0, episode="a0", index=0)])
        journal.append([turn("a1", A1, episode="a0", index=1)])  # a note: no label
        journal.append([turn("a2", "Ana: " + A2, episode="a0", index=2)])
        p = Projections.open(tmp_path, journal, backend, ctx)
        got = {m: v[0] for m, v in vectors(p).items()}
        p.close()
    finally:
        backend.close()
        journal.close()
    assert got["a1"] == embedded(encoders, A1)
    assert got["a2"] == embedded(encoders, with_context("Ana: " + A2, A1[-CHARS:]))
