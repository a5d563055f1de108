"""The OpenAI-compatible embeddings client against a real HTTP server on loopback, which
serves the bundled model (tests/embedding_server.py): probe, batching, prefixes, the key, a
clear coded error for every way the server can fail, the deadline of a call and the circuit
that spares later calls the wait."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ferrex.app import App
from ferrex.config import load
from ferrex.errors import BackendUnavailable, FerrexError, ModelUnavailable, UsageError
from ferrex.models import Embedder, choose_embedding_model
from ferrex.models import remote as remote_module
from ferrex.models.remote import PROBE_TEXT, RemoteSettings, ServerDown, fingerprint
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from tests.embedding_server import EmbeddingServer

AGENT = Caller(agent_id="agent-e")

KEY = "sk-test-Zq81-do-not-leak"


@pytest.fixture
def server(shared_embedder: Embedder) -> Iterator[EmbeddingServer]:
    with EmbeddingServer(shared_embedder) as running:
        yield running


def remote(home: Path, url: str, **settings: object) -> Embedder:
    options: dict[str, object] = {"url": url, "timeout": 5.0} | settings
    return Embedder(
        home,
        choose_embedding_model("openai:all-minilm", {}),
        remote=RemoteSettings(**options),  # type: ignore[arg-type]
    )


def test_probe_measures_dimension_and_fingerprint_then_vectors_match_the_local_model(
    server: EmbeddingServer, shared_embedder: Embedder, tmp_path: Path
) -> None:
    embedder = remote(tmp_path, server.url)
    identity = embedder.identity
    assert server.calls() == 1 and server.seen[0].inputs == [PROBE_TEXT]
    assert identity.name == "openai:all-minilm" and identity.dim == 384
    assert identity.file_sha256 == "probe-" + fingerprint(shared_embedder.embed(PROBE_TEXT))
    texts = ["the deploy moved to Friday", "bananas are rich in potassium", "a third one"]
    vectors = embedder.embed_many(texts)
    local = shared_embedder.embed_many(texts)
    # Normalised by ferrex (the server answers vectors of length 3), in the texts' order.
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors, local, atol=1e-5)
    assert server.seen[1].model == "all-minilm"
    embedder.embed_many(texts)  # cached: no call
    assert server.calls() == 2


def test_float_jitter_keeps_the_identity_other_weights_change_it(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    first = remote(tmp_path, server.url).identity
    server.transform = "jittered"
    jittered = remote(tmp_path, server.url)
    assert jittered.identity == first
    # Rounding alone would have flipped: the recorded probe settled it.
    probe = jittered.model().run([PROBE_TEXT], 1)[0]
    assert "probe-" + fingerprint(probe) != first.file_sha256
    server.transform = "rolled"
    rolled = remote(tmp_path, server.url).identity
    assert rolled.dim == first.dim and rolled.file_sha256 != first.file_sha256
    server.transform = "none"  # back to the first weights: the first identity again
    assert remote(tmp_path, server.url).identity == first
    assert (tmp_path / "models" / "remote-probes.json").stat().st_mode & 0o077 == 0


def test_batches_prefixes_and_the_key(
    server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", KEY)
    server.key = KEY
    embedder = remote(
        tmp_path, server.url, key_env="MY_EMBED_KEY", batch=2,
        query_prefix="query: ", passage_prefix="passage: ",
    )  # fmt: skip
    assert embedder.identity.name.startswith("openai:all-minilm+passage:")
    embedder.embed_many(["one", "two", "three", "four", "five"])
    embedder.embed_query("what was it?")
    batches = [s.inputs for s in server.seen[1:]]
    assert [len(b) for b in batches] == [2, 2, 1, 1]
    assert batches[0][0].startswith("passage: ") and batches[-1] == ["query: what was it?"]
    assert server.seen[0].inputs == [PROBE_TEXT]  # the probe is never prefixed
    assert all(s.authorization == f"Bearer {KEY}" for s in server.seen)


def test_input_type_tells_the_server_each_texts_kind_instead_of_a_prefix(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    embedder = remote(tmp_path, server.url, input_type="input_type")
    assert embedder.identity.name == "openai:all-minilm+input_type=passage"
    embedder.embed_many(["the deploy moved to Friday"])
    embedder.embed_query("the deploy moved to Friday")  # not the passage's vector, cached
    embedder.embed_query("the deploy moved to Friday")
    sent = [(s.inputs, s.body.get("input_type")) for s in server.seen]
    assert sent == [
        ([PROBE_TEXT], "passage"),  # the probe is a passage: the stored vectors are
        (["the deploy moved to Friday"], "passage"),
        (["the deploy moved to Friday"], "query"),
    ]
    with pytest.raises(UsageError) as both:  # the server's prefix and ferrex's: twice
        remote(tmp_path, server.url, input_type="input_type", query_prefix="query: ").model()
    assert "prefixed twice" in both.value.message


def test_a_refused_key_is_a_coded_error_that_never_shows_the_key(
    server: EmbeddingServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("FERREX_EMBEDDING_KEY", KEY)
    server.mode = "unauthorized"  # and it echoes the Authorization header in its body
    with pytest.raises(ModelUnavailable) as caught:
        remote(tmp_path, server.url).model()
    error = caught.value
    assert error.code == "model_unauthorized" and "401" in error.message
    assert "FERREX_EMBEDDING_KEY" in str(error.hint)
    assert KEY not in str(error) and KEY not in repr(error.as_dict())
    assert "***" in error.message  # the echo was scrubbed, not dropped silently
    assert KEY not in caplog.text


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("not_json", "not JSON"),
        ("wrong_count", "embeddings for"),
        ("non_numeric", "not a finite number"),
        ("ragged", "dimensions, not"),
        # Finite, but the norm overflows: divided by it, every value was 0.0, stored as such.
        ("huge", "too large or too small"),
        # A 400-digit integer: float() overflows (it was an internal error, 500).
        ("long_int", "not a finite number"),
    ],
)
def test_a_malformed_answer_is_a_coded_error(
    server: EmbeddingServer, tmp_path: Path, mode: str, words: str
) -> None:
    embedder = remote(tmp_path, server.url)
    embedder.model()
    server.mode = mode  # type: ignore[assignment]
    with pytest.raises(ModelUnavailable) as caught:
        embedder.embed_many(["alpha", "beta"])
    assert caught.value.code == "model_bad_response" and words in caught.value.message


def test_a_changed_dimension_after_the_probe_is_refused(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    embedder = remote(tmp_path, server.url)
    assert embedder.identity.dim == 384
    server.transform = "truncated"
    with pytest.raises(ModelUnavailable) as caught:
        embedder.embed_many(["alpha"])
    assert caught.value.code == "model_bad_response"
    assert "256 dimensions" in caught.value.message and "384" in caught.value.message


def test_a_redirect_is_not_followed(server: EmbeddingServer, tmp_path: Path) -> None:
    server.mode = "redirect"  # to another host: the key would go along
    with pytest.raises(ModelUnavailable) as caught:
        remote(tmp_path, server.url).model()
    assert caught.value.code == "model_bad_response" and "302" in caught.value.message
    assert "203.0.113.9" in caught.value.message


def test_a_wrong_path_is_a_coded_error(server: EmbeddingServer, tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable) as caught:
        remote(tmp_path, server.url.removesuffix("/v1")).model()
    assert caught.value.code == "model_bad_response" and "404" in caught.value.message
    assert "/embeddings" in str(caught.value.hint)


def test_refused_connection_and_timeout_are_backend_unavailable(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    url = server.url
    server.mode = "hang"
    with pytest.raises(ServerDown) as slow:
        remote(tmp_path, url, timeout=0.5).model()
    assert slow.value.code == "backend_unavailable"
    assert "did not answer within 0.5 s" in slow.value.message
    server.stop()
    embedder = remote(tmp_path, url)
    with pytest.raises(ServerDown) as refused:
        embedder.model()
    assert "refused the connection" in refused.value.message
    calls = server.calls()
    with pytest.raises(ServerDown):  # within the cooldown: no second wait for the timeout
        embedder.model()
    assert server.calls() == calls


@pytest.mark.parametrize(
    "url", ["", "127.0.0.1:11434/v1", "ftp://example.com/v1", "http://:80/v1", "http://h:99999"]
)
def test_a_bad_url_is_invalid_input(tmp_path: Path, url: str) -> None:
    with pytest.raises(UsageError) as caught:
        remote(tmp_path, url).model()
    assert caught.value.code == "invalid_input" and "models.embedding_url" in caught.value.message


def test_errors_are_ferrex_errors_with_hints(tmp_path: Path) -> None:
    with pytest.raises(FerrexError) as caught:
        remote(tmp_path, "http://127.0.0.1:9/v1").model()  # port 9: discard, closed
    assert caught.value.hint


def test_a_trickling_answer_is_cut_at_the_deadline(server: EmbeddingServer, tmp_path: Path) -> None:
    embedder = remote(tmp_path, server.url, timeout=1.0)
    embedder.model()
    server.mode = "trickle"  # 20 pieces 0.4 s apart: no read waits 1 s, the answer takes 8
    started = time.monotonic()
    with pytest.raises(ServerDown) as caught:
        embedder.embed_many(["the deploy moved to Friday"])
    waited = time.monotonic() - started
    assert caught.value.code == "backend_unavailable"
    assert "did not answer within 1 s" in caught.value.message
    assert 0.9 < waited < 2.0, waited


def test_a_hanging_server_is_waited_for_once_then_refused_at_once_until_tried_again(
    server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_module, "CIRCUIT_SECONDS", 1.5)
    server.mode = "hang"  # from the start: the probe itself hangs, and no model is kept
    embedder = remote(tmp_path, server.url, timeout=0.5)
    waits = []
    for _ in range(3):
        started = time.monotonic()
        with pytest.raises(ServerDown) as caught:
            embedder.embed_query("where did the deploy move?")
        waits.append(time.monotonic() - started)
    assert waits[0] >= 0.5 and max(waits[1:]) < 0.2, waits
    assert server.calls() == 1  # asked once
    error = caught.value
    assert error.code == "backend_unavailable" and "did not answer within 0.5 s" in error.message
    assert "retry in" in str(error.hint) and 1 <= error.details["retry_after_seconds"] <= 2
    server.mode = "ok"  # back: still refused until the circuit's time is over, then tried
    with pytest.raises(ServerDown):
        embedder.embed_query("where did the deploy move?")
    time.sleep(1.6)
    assert embedder.embed_query("where did the deploy move?").shape == (384,)
    assert server.calls() == 3  # the probe, the query


def _service(home: Path) -> Service:
    return Service(App(home=home, config=load(home, None)))


def test_while_the_server_hangs_recall_waits_once_then_goes_straight_to_bm25(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text(
        f'[models]\ndense = "openai:all-minilm"\nembedding_url = "{server.url}"\n'
        "embedding_timeout = 1.0\n"
    )
    service = _service(home)
    try:
        for content in ("The VPN certificate expires on 2027-01-15",
                        "Deploys are frozen during the holiday week"):  # fmt: skip
            assert service.call(decode("store", {"content": content}), AGENT)["status"] == "stored"
    finally:
        service.close()
    server.mode = "hang"
    service = _service(home)  # a server started while the embeddings server hangs
    try:
        waits = []
        for _ in range(3):
            started = time.monotonic()
            doc = service.call(decode("recall", {"query": "VPN certificate"}), AGENT)
            waits.append(time.monotonic() - started)
            assert doc["results"][0]["content"].startswith("The VPN certificate")
            assert "keyword (BM25) matching alone" in doc["warning"]
        # One timeout in all (the probe's), not one per recall nor two for the first.
        assert 1.0 <= waits[0] < 1.8 and max(waits[1:]) < 0.5, waits
        head = service.app.journal().refresh().position
        started = time.monotonic()
        with pytest.raises(BackendUnavailable) as refused:
            service.call(decode("store", {"content": "Something new while it hangs"}), AGENT)
        assert time.monotonic() - started < 0.5
        assert refused.value.code == "backend_unavailable"
        assert "retry in" in str(refused.value.hint)
        assert service.app.journal().refresh().position == head  # nothing written
    finally:
        service.close()


def test_numbers_no_float_holds_are_refused_on_store_and_recall(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "ferrex.toml").write_text(
        f'[models]\ndense = "openai:all-minilm"\nembedding_url = "{server.url}"\n'
    )
    service = _service(home)
    try:
        first = service.call(
            decode("store", {"content": "The VPN certificate expires soon"}), AGENT
        )
        assert first["status"] == "stored"
        head = service.app.journal().refresh().position
        for mode, tool, args in [
            ("huge", "store", {"content": "Scaled by 1e300 it was a zero vector"}),
            ("long_int", "store", {"content": "A 400-digit integer in its vector"}),
            ("long_int", "recall", {"query": "what expires?"}),
        ]:
            server.mode = mode  # type: ignore[assignment]
            with pytest.raises(ModelUnavailable) as caught:
                service.call(decode(tool, args), AGENT)
            assert caught.value.code == "model_bad_response", (mode, tool)
        assert service.app.journal().refresh().position == head  # nothing stored
    finally:
        service.close()
