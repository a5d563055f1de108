"""What an :class:`~ferrex.app.App` is assembled from, built from the configuration: the
rules the read model derives with (:func:`build_rules`), the encoders the projections embed
and index with (:func:`build_encoders`), and an embeddings server's settings
(:func:`remote_settings`).

Each imports what it builds where it builds it, so importing this module (as the bare
``ferrex`` stdio server does, through the App) loads no model, SQLite or vector store.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from ferrex.config import Config

if TYPE_CHECKING:
    from ferrex.models import Embedder
    from ferrex.models.remote import RemoteSettings
    from projections.readmodel.projector import Rules
    from projections.vector_sink import Encoders


def build_rules(config: Config) -> Rules:
    """What the read model derives with changeable rules: normalized predicates, and the
    object forms contradictions compare (``objects:1`` names that rule's version: bump it
    when ``object_form`` changes, and every read model is rebuilt)."""
    from ferrex.core.settings import build_synonyms
    from ferrex.rules.predicates import normalize_predicate
    from ferrex.rules.subjects import object_form
    from projections.readmodel.projector import Rules

    base, namespaces = build_synonyms(config)
    identity = hashlib.sha256(
        json.dumps([sorted(base.items()), sorted((n, sorted(m.items())) for n, m in
                    namespaces.items())]).encode()
    ).hexdigest()[:16]  # fmt: skip

    def predicate(namespace: str, recorded: str) -> str:
        return normalize_predicate(recorded, namespaces.get(namespace, base))

    return Rules(
        identity=f"predicates:{identity};objects:1", predicate=predicate, object_form=object_form
    )


def remote_settings(config: Config) -> RemoteSettings:
    """The embeddings server's ``[models]`` keys (``models.dense = "openai:MODEL"``)."""
    from ferrex.models.remote import RemoteSettings

    return RemoteSettings(
        url=config["models.embedding_url"],
        key_env=config["models.embedding_key_env"],
        query_prefix=config["models.query_prefix"],
        passage_prefix=config["models.passage_prefix"],
        input_type=config["models.embedding_input_type"],
        timeout=config["models.embedding_timeout"],
        batch=config["models.embedding_batch"],
    )


def build_encoders(embedder: Embedder, context_chars: int = 0) -> Encoders:
    """The dense model and the BM25 recipe, as the projections take them.

    The model loads when a text must be embedded, not before: opening caught-up projections
    (stats, reflect, forget, export) needs only its identity, which the default model's pinned
    hash gives without loading it. Another model is loaded now, to learn its identity.
    """
    from ferrex.models.sparse import Bm25Encoder
    from ferrex.rules.fusion import opens_with_speaker
    from projections.documents import TEXT_RECIPE
    from projections.vector_sink import Encoders

    identity = embedder.identity
    bm25 = Bm25Encoder()
    context = f"+ctx{context_chars}" if context_chars else ""
    return Encoders(
        identity=f"{identity.key}+{bm25.identity}{context}+{TEXT_RECIPE}",
        dim=identity.dim,
        dense=embedder.embed_many,
        sparse=bm25.encode_document,
        fits=embedder.fits,
        context_chars=context_chars,
        context_when=opens_with_speaker,
    )
