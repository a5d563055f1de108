"""``ferrex doctor``: what is configured, what is loaded, what is missing, and whether it works.

Every model is actually loaded and run on a test string; a report is printed even when
something fails. Exit codes: 0 when the dense model works (a missing reranker only degrades
recall, so it is reported, not failed), 4 when the dense model is unavailable, 5 when the
embeddings server of an ``openai:`` model cannot be reached, 2 when a setting is invalid.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

import click
import numpy as np

from ferrex.app import App
from ferrex.cli.render import count_of
from ferrex.errors import FerrexError
from ferrex.home_safety import free_bytes, inspect_modes
from ferrex.models import (
    BUNDLED_DIR_NAME,
    DOWNLOAD_ENV,
    MODEL_ENV,
    Embedder,
    cache_path,
    choose_embedding_model,
    downloads_allowed,
    models_dir,
)
from ferrex.models.identity import ModelIdentity, shared_models_dir
from ferrex.models.remote import recorded_identity
from ferrex.models.rerank import RERANKER_ENV, choose_reranker, load_reranker
from ferrex.models.sparse import Bm25Encoder
from ferrex.parts import remote_settings
from ferrex.server.hub import owner_status
from journal.pg_connect import redacted
from projections.generations import read_pointer

_TEST_TEXT = "ferrex doctor: the deploy of INC-90312 moved to v2.3.1 on Friday."
_TEST_QUERY = "when was INC-90312 deployed?"
_TEST_DOCS = (_TEST_TEXT, "Bananas are rich in potassium.")


@click.command()
@click.option(
    "--quick",
    is_flag=True,
    help="Check the configuration, paths and permissions only; load no model (fast).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.pass_obj
def doctor(app: App, quick: bool, as_json: bool) -> None:
    """Show the configured models, load each one and run it on a test string.

    Also shows the data directory, the Qdrant mode and the server process that owns the
    stores, if one runs. Exits 4 when the dense embedding model
    is unavailable (the report says why and how to fix it), 0 otherwise. With --quick no
    model is loaded (their status is "not loaded"): only an invalid setting fails (exit 2).
    """
    allow_download = downloads_allowed(os.environ)
    failures: list[FerrexError] = []
    report: dict[str, Any] = {
        "data_dir": str(app.home),
        "permissions": _permissions(app),
        "qdrant": _qdrant(app),
        "server": owner_status(app.home),
        "downloads": {
            "allowed": allow_download,
            "switch": DOWNLOAD_ENV,
            "fastembed_cache": str(models_dir(app.home) / "fastembed"),
        },
        "dense": _dense(app, allow_download, failures, quick),
        "sparse": _sparse(),
        "reranker": _reranker(app, allow_download, failures, quick),
        "embedding_cache": _cache(app),
    }
    report["ok"] = not failures
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print_text(report)
    if failures:
        raise failures[0]


def _qdrant(app: App) -> dict[str, Any]:
    url = app.config["qdrant.url"]
    if url:
        return {"mode": "qdrant-client (external server)", "url": url, "path": None}
    if app.config["qdrant.binary"]:
        return {
            "mode": f"sidecar ({app.config['qdrant.binary']})",
            "url": f"http://127.0.0.1:{app.config['qdrant.port']}",
            "path": str(app.home / "qdrant-server"),
        }
    return {"mode": "embedded (Qdrant Edge)", "url": None, "path": str(app.home / "qdrant")}


_NOT_LOADED = "not loaded (--quick)"


class _Choice(Protocol):
    @property
    def setting(self) -> str: ...


_C = TypeVar("_C", bound=_Choice)


def _chosen(
    app: App,
    key: str,
    env: str,
    choose: Callable[[str | None, Mapping[str, str]], _C],
    failures: list[FerrexError],
) -> tuple[dict[str, Any], _C | None]:
    """A model's section as far as its setting goes (the config key ``key``, else the
    environment variable ``env``), and the model it chooses; None when the setting is
    invalid (a failure, the section says so)."""
    section: dict[str, Any] = {"setting_from": f"{key} in ferrex.toml, or {env}"}
    try:
        choice = choose(app.config[key], {})
    except FerrexError as exc:
        return _failed(section, "invalid", exc, failures), None
    section.update(configured=choice.setting, origin=app.config.origin(key))
    return section, choice


def _failed(
    section: dict[str, Any], status: str, exc: FerrexError, failures: list[FerrexError]
) -> dict[str, Any]:
    """A model's section that ends at ``exc`` (counted among the failures)."""
    failures.append(exc)
    return {**section, "status": status, "error": exc.message, "hint": exc.hint}


def _dense(
    app: App, allow_download: bool, failures: list[FerrexError], quick: bool = False
) -> dict[str, Any]:
    home = app.home
    section, choice = _chosen(app, "models.dense", MODEL_ENV, choose_embedding_model, failures)
    if choice is None:
        return section
    section.update(kind=choice.kind, model=choice.model_name)
    remote = remote_settings(app.config)
    if choice.kind == "remote":
        section["server"] = {
            "url": redacted(remote.url) if remote.url else None,
            "key_env": remote.key_env,
            "key_set": bool(os.environ.get(remote.key_env, "").strip()),
            "timeout_seconds": remote.timeout,
            "batch": remote.batch,
            "query_prefix": remote.query_prefix,
            "passage_prefix": remote.passage_prefix,
            "input_type": remote.input_type,
        }
    # The cache is bypassed on purpose: the point is to run the model itself.
    embedder = Embedder(home, choice, allow_download=allow_download, use_cache=False, remote=remote)
    if quick:
        known = embedder.known_identity()
        source = shared_models_dir(os.environ) / BUNDLED_DIR_NAME
        section.update(
            status=_NOT_LOADED,
            identity=None if known is None else _identity(known),
            source=str(source) if choice.kind == "bundled" else None,
            assembled=source.is_dir() if choice.kind == "bundled" else None,
        )  # fmt: skip
        return section
    try:
        loaded = embedder.model()
        started = time.perf_counter()
        vector = embedder.embed(_TEST_TEXT)
        embed_ms = (time.perf_counter() - started) * 1000.0
    except FerrexError as exc:
        return _failed(section, "unavailable", exc, failures)
    finally:
        embedder.close()
    identity = loaded.identity
    recorded = _recorded(home)
    if recorded is not None:
        # What the live collection was built with: another identity is refused at open
        # (a server's model) or rebuilt (a local one).
        section["collection"] = {"model": recorded.key, "matches": recorded == identity}
    section.update(
        status="ok",
        source=str(loaded.source) if loaded.source is not None else None,
        identity=_identity(identity),
        load_seconds=round(loaded.load_seconds, 3),
        test_embed_ms=round(embed_ms, 2),
        test_vector_norm=round(float(np.linalg.norm(vector)), 4),
    )
    return section


def _identity(identity: ModelIdentity) -> dict[str, Any]:
    return {
        "name": identity.name,
        "dim": identity.dim,
        "file_sha256": identity.file_sha256,
        "variant": identity.variant or None,
    }


def _echo_variant(identity: dict[str, Any]) -> None:
    if identity.get("variant"):
        click.echo(f"           runs    {identity['variant']} (its own vectors)")


def _recorded(home: Path) -> ModelIdentity | None:
    live = read_pointer(home)
    return None if live is None else recorded_identity(live.encoders)


def _sparse() -> dict[str, Any]:
    encoder = Bm25Encoder()
    document = encoder.encode_document(_TEST_TEXT)
    query = encoder.encode_query(_TEST_QUERY)
    shared = len(set(document.indices) & set(query.indices))
    return {
        "encoder": encoder.identity,
        "source": "computed by ferrex (Qdrant's BM25 recipe plus identifier tokens)",
        "status": "ok" if shared else "broken",
        "test_document_terms": len(document),
        "test_query_terms_matched": shared,
    }


def _reranker(
    app: App, allow_download: bool, failures: list[FerrexError], quick: bool = False
) -> dict[str, Any]:
    home = app.home
    section, choice = _chosen(app, "models.reranker", RERANKER_ENV, choose_reranker, failures)
    if choice is None:
        return section
    section["model"] = choice.model_name
    if quick:
        section["status"] = _NOT_LOADED if choice.model_name else "off"
        return section
    stage = load_reranker(choice, home, allow_download=allow_download)
    section["status"] = stage.status
    if stage.state == "unavailable":
        section["fallback"] = "recall runs without reranking"
    encoder = stage.encoder
    if encoder is not None:
        started = time.perf_counter()
        scores = encoder.rerank(_TEST_QUERY, list(_TEST_DOCS))
        section.update(
            source=str(encoder.source) if encoder.source is not None else None,
            file_sha256=encoder.file_sha256,
            load_seconds=round(encoder.load_seconds, 3),
            test_scores=[round(score, 4) for score in scores],
            test_rerank_ms=round((time.perf_counter() - started) * 1000.0, 2),
        )
    return section


def _permissions(app: App) -> dict[str, Any]:
    """The home's mode and whether anything under it is group- or other-accessible (the App
    tightened what it could when it opened the home, so what is left could not be changed)."""
    modes = inspect_modes(app.home)
    return {**modes.as_dict(), "free_bytes": free_bytes(app.home),
            "reserve_bytes": app.config["storage.reserve_bytes"]}  # fmt: skip


def _cache(app: App) -> dict[str, Any]:
    entries: int | None = None
    cache = app.open_cache()  # None on a read-only home: SQLite cannot open its WAL there
    if cache is not None:
        try:
            entries = cache.count()
        finally:
            cache.close()
    return {"path": str(cache_path(app.home)), "entries": entries}


def _print_text(report: dict[str, Any]) -> None:
    dense, sparse, reranker = report["dense"], report["sparse"], report["reranker"]
    click.echo(f"data dir   {report['data_dir']}")
    perms = report["permissions"]
    if perms["home_mode"] is None:
        click.echo("           not created yet (it will be mode 0700)")
    else:
        others = perms["accessible_to_others"]
        state = (
            "private"
            if not others
            else f"{count_of(others, 'entry', 'entries')} group/other-accessible"
        )
        ro = ", read-only file system" if perms["read_only"] else ""
        click.echo(f"           mode {perms['home_mode']}, {state}{ro}; "
                   f"{perms['free_bytes'] // (1024 * 1024)} MiB free "
                   f"(reserve {perms['reserve_bytes'] // (1024 * 1024)} MiB)")  # fmt: skip
    qdrant = report["qdrant"]
    click.echo(f"qdrant     {qdrant['mode']}  {qdrant['url'] or qdrant['path']}")
    server = report["server"]
    if server["running"]:
        click.echo(f"server     running: pid {server['pid']} owns the stores, "
                   f"port {server['port']} on 127.0.0.1")  # fmt: skip
    else:
        click.echo("server     none running on this data directory")
    downloads = report["downloads"]
    state = "allowed" if downloads["allowed"] else f"off (set {downloads['switch']}=1 to allow)"
    click.echo(f"downloads  {state}")
    click.echo(
        f"dense      {dense.get('configured', '?')} ({dense.get('origin', '?')})  {dense['status']}"
    )
    if dense.get("server"):
        remote = dense["server"]
        key = "set" if remote["key_set"] else "not set"
        click.echo(f"           server  {remote['url']}  key from ${remote['key_env']} ({key}), "
                   f"timeout {remote['timeout_seconds']:g} s, batch {remote['batch']}")  # fmt: skip
    if dense.get("collection"):
        built = dense["collection"]
        same = "same model" if built["matches"] else "ANOTHER model: run `ferrex reembed`"
        click.echo(f"           stores  built with {built['model']} ({same})")
    if dense["status"] == _NOT_LOADED:
        if dense.get("identity"):
            click.echo(f"           sha256  {dense['identity']['file_sha256']}")
            _echo_variant(dense["identity"])
        if dense.get("source"):
            state = "assembled" if dense["assembled"] else "assembled at first use"
            click.echo(f"           source  {dense['source']} ({state})")
    elif dense["status"] == "ok":
        identity = dense["identity"]
        click.echo(f"           model   {identity['name']}  dim {identity['dim']}")
        if dense.get("kind") == "remote":  # a fingerprint of the probe text's vector
            click.echo(f"           probe   {identity['file_sha256']}")
        else:
            click.echo(f"           sha256  {identity['file_sha256']}")
            _echo_variant(identity)
            click.echo(f"           source  {dense['source']}")
        click.echo(
            f"           loaded in {dense['load_seconds']:.2f} s, "
            f"test string embedded in {dense['test_embed_ms']:.1f} ms"
        )
    else:
        click.echo(f"           {dense['error']}")
        if dense.get("hint"):
            click.echo(f"           hint: {dense['hint']}")
    click.echo(f"sparse     {sparse['encoder']}  {sparse['status']}")
    click.echo(
        f"reranker   {reranker.get('configured', '?')} ({reranker.get('origin', '?')})  "
        f"{reranker['status']}"
    )
    if "error" in reranker:
        click.echo(f"           {reranker['error']}")
    if "fallback" in reranker:
        click.echo(f"           {reranker['fallback']}")
    if "source" in reranker:
        click.echo(f"           source  {reranker['source']}")
    cache = report["embedding_cache"]
    entries = (
        "not created yet" if cache["entries"] is None else count_of(cache["entries"], "vector")
    )
    click.echo(f"cache      {cache['path']}  {entries}")
