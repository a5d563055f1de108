"""Settings of the write side, built once from the configuration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from ferrex.config import Config, default_of, staleness_config
from ferrex.errors import UsageError
from ferrex.rules.consolidation import Unit
from ferrex.rules.freshness import StalenessConfig, StalenessParams
from ferrex.rules.memory_input import DEFAULT_LIMITS, Limits
from ferrex.rules.predicates import DEFAULT_SYNONYMS, merge_synonyms, synonym_map
from ferrex.rules.secrets import SecretsMode
from ferrex.rules.short_forms import DEFAULT_ABBREVIATIONS, abbreviation_map


def build_synonyms(config: Config) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The global synonym map and each namespace's, from the built-ins and the config."""
    extra = config["predicates.synonyms"]
    base = merge_synonyms(DEFAULT_SYNONYMS, synonym_map(extra)) if extra else dict(DEFAULT_SYNONYMS)
    return base, _per_namespace(
        config["predicates.namespaces"], "predicates", "synonym groups",
        'write [predicates.namespaces.NAME] canonical = ["variant", ...]',
        lambda groups: merge_synonyms(base, synonym_map(groups)),
    )  # fmt: skip


def build_abbreviations(
    config: Config,
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The global subject abbreviation table and each namespace's (its own over it)."""
    base = abbreviation_map(config["subjects.abbreviations"])
    return base, _per_namespace(
        config["subjects.namespaces"], "subjects", "abbreviations",
        'write [subjects.namespaces.NAME] short = "long"',
        lambda table: {**base, **abbreviation_map(table)},
    )  # fmt: skip


def _per_namespace(
    tables: Mapping[str, object],
    section: str,
    what: str,
    hint: str,
    build: Callable[[dict[str, Any]], dict[str, str]],
) -> dict[str, dict[str, str]]:
    """``[SECTION.namespaces.NAME]`` tables, each built over the global one; a value that is
    not a table is a coded error naming it."""
    built: dict[str, dict[str, str]] = {}
    for namespace, table in tables.items():
        if not isinstance(table, dict):
            raise UsageError(
                f"{section}.namespaces.{namespace} must be a table of {what}", hint=hint
            )
        built[str(namespace)] = build(table)
    return built


@dataclass(frozen=True)
class StoreSettings:
    """The thresholds and defaults the store rules use (from the configuration)."""

    default_namespace: str = default_of("store.default_namespace")
    dedup_threshold: float = default_of("store.dedup_threshold")
    near_threshold: float = default_of("store.near_threshold")
    """At or above it (and below ``dedup_threshold``) a store is kept with a note naming the
    similar memory."""
    conflict_duplicate: float = default_of("store.conflict_duplicate")
    conflict_different: float = default_of("store.conflict_different")
    entity_fuzzy: float = default_of("store.entity_fuzzy")
    entity_embedding: float = default_of("store.entity_embedding")
    predicate_fuzzy: float = default_of("store.predicate_fuzzy")
    synonyms: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_SYNONYMS))
    namespace_synonyms: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    abbreviations: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ABBREVIATIONS))
    """Per-word abbreviations of subjects (``ferrex.rules.subjects``)."""
    namespace_abbreviations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    limits: Limits = DEFAULT_LIMITS
    budget_bytes: int | None = default_of("store.budget_bytes")
    """Memory text beyond this is evicted after a store, in the documented priority."""
    staleness: StalenessConfig = field(default_factory=StalenessConfig)
    """The staleness the eviction priority uses: the one configuration recall, reflect and
    stats use too."""
    episode_gap: float = 1800.0
    """Seconds after an agent's last episodic store (without a source) within which its
    next one continues the same derived episode."""
    episode_max_chars: int = 1000
    """Longer episodic texts are documents, not turns: they get no derived episode."""
    secrets: SecretsMode = default_of("store.secrets")
    """What a store whose text carries a likely secret does (:mod:`ferrex.rules.secrets`)."""
    consolidation_keep_ratio: float = default_of("consolidation.keep_ratio")
    """The share of a group's text a consolidation summary keeps (``consolidation.keep_ratio``)."""
    consolidation_unit: Unit = default_of("consolidation.unit")
    """What a summary selects: sentences, or whole episodes (``consolidation.unit``)."""

    def staleness_for(self, namespace: str) -> StalenessParams:
        return self.staleness.for_namespace(namespace)

    @classmethod
    def from_config(cls, config: Config) -> StoreSettings:
        c = config
        synonyms, namespace_synonyms = build_synonyms(c)
        abbreviations, namespace_abbreviations = build_abbreviations(c)
        return cls(
            synonyms=synonyms,
            namespace_synonyms=namespace_synonyms,
            abbreviations=abbreviations,
            namespace_abbreviations=namespace_abbreviations,
            default_namespace=c["store.default_namespace"],
            dedup_threshold=c["store.dedup_threshold"],
            near_threshold=c["store.near_threshold"],
            conflict_duplicate=c["store.conflict_duplicate"],
            conflict_different=c["store.conflict_different"],
            entity_fuzzy=c["store.entity_fuzzy"],
            entity_embedding=c["store.entity_embedding"],
            predicate_fuzzy=c["store.predicate_fuzzy"],
            budget_bytes=c["store.budget_bytes"],
            staleness=staleness_config(c),
            secrets=cast(SecretsMode, c["store.secrets"]),  # checked by config
            consolidation_keep_ratio=c["consolidation.keep_ratio"],
            consolidation_unit=cast(Unit, c["consolidation.unit"]),  # checked by config
        )

    def synonyms_for(self, namespace: str) -> Mapping[str, str]:
        """The predicate synonyms of ``namespace`` (its own groups over the global ones)."""
        return self.namespace_synonyms.get(namespace, self.synonyms)

    def abbreviations_for(self, namespace: str) -> Mapping[str, str]:
        """The subject abbreviations of ``namespace`` (its own over the global ones)."""
        return self.namespace_abbreviations.get(namespace, self.abbreviations)
