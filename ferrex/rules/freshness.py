"""Freshness: the recency boost and the staleness of a memory, as pure functions of its times.

Every function takes ``now`` (float epoch seconds) as a parameter and reads no clock, so a
replay of the journal, which restores every time, reproduces every score exactly. Times are
float epoch seconds, as in the read model; parameters are in days, as people write them.

Recency boost (recall ranks by ``boosted(score, recency_boost(type, now - t_valid))``)::

    episodic    1 + 0.30 · 2^(-age / 30 d)
    semantic    1 + 0.15 · 2^(-age / 180 d)
    procedural  1                          a procedure does not get better for being new

``age`` is measured from the event time ``t_valid`` and clamped at 0 for future times. The
boost is at least 1; :func:`boosted` divides a negative score by it instead of multiplying,
so a boost never pushes a memory down.

Staleness is a score in [0, 1] (1 = stale), the weighted sum of four components in [0, 1]::

    age         1 - 2^(-(now - max(t_valid, created_at)) / age half-life)
    access      1 - 2^(-(now - last_accessed, or created_at if never) / access half-life)
    validation  1 - 2^(-(now - last_validated, or created_at if never) / validation half-life)
    count       1 - min(1, log1p(access_count) / log1p(count_saturation))

Default weights 0.40 / 0.25 / 0.25 / 0.10 (they must sum to 1); ``count_saturation`` 10: ten
recalls are enough evidence that a memory is in use, and the logarithm makes the first few
count most. Half-lives per type, the same for the three clocks by default so that an
untouched memory crosses the thresholds at one predictable age: episodic 30 d (the recency
boost's half-life), semantic 180 d (facts about a project change over months), procedural
90 d (procedures drift with tooling, faster than facts, slower than events). Each can be
tuned alone. Labels: ``fresh`` below ``aging`` (0.35), ``aging`` from there, ``stale`` from
``stale`` (0.60), thresholds per type; ``superseded`` whenever ``t_invalid <= now``, whatever
the score. A memory stored at ``t`` and never touched again scores ``0.1 + 0.9 · (1 - 2^(-a/h))``
at age ``a``: it turns aging at ``h · log2(0.9/0.65)`` ≈ 0.47 h and stale at
``h · log2(0.9/0.4)`` ≈ 1.17 h, that is at 14 d and 35 d (episodic), 42 d and 105 d
(procedural), 85 d and 211 d (semantic).

The age clock starts when ferrex learned the memory: at its event time, or at the store if
that came later. A back-dated memory (an imported conversation from last year, a fact valid
since 2025) is as fresh as any new one on the day it is stored and then ages like it; counting
from the event time would label a whole deliberate import stale within days of storing it
and hide it. The recency boost and ``age_days`` still use the event time.

Access is not validation. A recall hit moves ``last_accessed`` and ``access_count``, which feed
the access and count components only; only ``last_validated`` (an agent or an operator
confirming the memory) resets the validation component. A memory recalled every day but never
confirmed still goes stale, at 0.40 + 0.25 = 0.65 once its age and validation clocks run out.

Per-namespace overrides (:func:`params_for`) use flat dotted keys, one per field of
:class:`StalenessParams` (:data:`OVERRIDE_KEYS`): ``weights.age``, ``weights.access``,
``weights.validation``, ``weights.count``; ``<type>.age_half_life_days``,
``<type>.access_half_life_days``, ``<type>.validation_half_life_days``, ``<type>.aging``,
``<type>.stale`` for ``<type>`` in episodic, semantic, procedural; and ``count_saturation``.
Nested tables are flattened first, so TOML's ``episodic.stale = 0.7`` and an
``[... .episodic]`` table both mean the key ``episodic.stale``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from ferrex.errors import UsageError

DAY: Final = 86_400.0

StalenessLabel = Literal["fresh", "aging", "stale", "superseded"]

_TYPES_HINT: Final = "use episodic, semantic or procedural"


def _unknown_type(memory_type: str) -> UsageError:
    return UsageError(f"unknown memory type {memory_type!r}", hint=_TYPES_HINT)


def _check_half_life(name: str, days: float) -> None:
    if not (math.isfinite(days) and days > 0):
        raise UsageError(f"{name} must be a positive number of days, got {days!r}")


def _decay(elapsed_seconds: float, half_life_days: float) -> float:
    """0 at no time elapsed, 0.5 at one half-life, towards 1 after; 0 for times in the future."""
    return 1.0 - math.exp2(-max(0.0, elapsed_seconds) / (half_life_days * DAY))


# --- Recency boost -------------------------------------------------------------------------


@dataclass(frozen=True)
class RecencyRule:
    """One type's boost: ``1 + weight · 2^(-age / half_life_days)``."""

    weight: float
    half_life_days: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise UsageError(f"a recency weight must be a number >= 0, got {self.weight!r}")
        _check_half_life("a recency half-life", self.half_life_days)


@dataclass(frozen=True)
class RecencyParams:
    episodic: RecencyRule = RecencyRule(0.30, 30.0)
    semantic: RecencyRule = RecencyRule(0.15, 180.0)
    # Weight 0: the half-life is never used, but a rule needs one.
    procedural: RecencyRule = RecencyRule(0.0, 90.0)

    def for_type(self, memory_type: str) -> RecencyRule:
        match memory_type:
            case "episodic":
                return self.episodic
            case "semantic":
                return self.semantic
            case "procedural":
                return self.procedural
            case _:
                raise _unknown_type(memory_type)


DEFAULT_RECENCY: Final = RecencyParams()


def recency_boost(
    memory_type: str, age_seconds: float, params: RecencyParams = DEFAULT_RECENCY
) -> float:
    """The multiplicative boost (>= 1) of a memory whose event time is ``age_seconds`` old."""
    rule = params.for_type(memory_type)
    return 1.0 + rule.weight * math.exp2(-max(0.0, age_seconds) / (rule.half_life_days * DAY))


def boosted(score: float, boost: float) -> float:
    """``score`` with a boost (>= 1, as :func:`recency_boost` returns) applied.

    A non-negative score is multiplied by the boost; a negative one (a cross-encoder logit can
    be negative) is *divided* by it, moving it towards 0. Multiplying a negative score would
    push the more recent of two equally scored memories below the older one. With this rule,
    for any score, a larger boost never ranks a memory lower (``boosted(s, b) >= s`` for
    ``b >= 1``, non-decreasing in ``b``), and for one boost the order of scores is kept.
    """
    return score * boost if score >= 0 else score / boost


# --- Staleness -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StalenessWeights:
    """How much each component counts; each >= 0, together 1."""

    age: float = 0.40
    access: float = 0.25
    validation: float = 0.25
    count: float = 0.10

    def __post_init__(self) -> None:
        values = {
            "age": self.age,
            "access": self.access,
            "validation": self.validation,
            "count": self.count,
        }
        for name, value in values.items():
            if not (math.isfinite(value) and value >= 0):
                raise UsageError(f"staleness weight {name!r} must be a number >= 0, got {value!r}")
        total = math.fsum(values.values())
        # A tolerance, so that weights written as decimals in a config file add up.
        if abs(total - 1.0) > 1e-9:
            raise UsageError(
                f"staleness weights must sum to 1, got {total:g} "
                f"(age {self.age:g} + access {self.access:g} + validation {self.validation:g}"
                f" + count {self.count:g})",
                hint="change the weights together, e.g. weights.age = 0.5 with weights.count = 0",
            )


@dataclass(frozen=True)
class TypeStaleness:
    """One memory type's half-lives (days) and label thresholds."""

    age_half_life_days: float
    access_half_life_days: float
    validation_half_life_days: float
    aging: float = 0.35
    stale: float = 0.60

    def __post_init__(self) -> None:
        _check_half_life("age_half_life_days", self.age_half_life_days)
        _check_half_life("access_half_life_days", self.access_half_life_days)
        _check_half_life("validation_half_life_days", self.validation_half_life_days)
        if not 0.0 <= self.aging <= self.stale <= 1.0:
            raise UsageError(
                f"staleness thresholds need 0 <= aging <= stale <= 1, "
                f"got aging {self.aging!r} and stale {self.stale!r}"
            )


@dataclass(frozen=True)
class StalenessParams:
    weights: StalenessWeights = StalenessWeights()
    episodic: TypeStaleness = TypeStaleness(30.0, 30.0, 30.0)
    semantic: TypeStaleness = TypeStaleness(180.0, 180.0, 180.0)
    procedural: TypeStaleness = TypeStaleness(90.0, 90.0, 90.0)
    count_saturation: int = 10

    def __post_init__(self) -> None:
        if isinstance(self.count_saturation, bool) or not (
            isinstance(self.count_saturation, int) and self.count_saturation >= 1
        ):
            raise UsageError(
                f"count_saturation must be an integer >= 1, got {self.count_saturation!r}"
            )

    def for_type(self, memory_type: str) -> TypeStaleness:
        match memory_type:
            case "episodic":
                return self.episodic
            case "semantic":
                return self.semantic
            case "procedural":
                return self.procedural
            case _:
                raise _unknown_type(memory_type)


DEFAULT_STALENESS: Final = StalenessParams()


@dataclass(frozen=True)
class FreshnessInput:
    """What staleness reads of a memory: its type and its times (float epoch seconds)."""

    type: str
    t_valid: float
    t_invalid: float | None
    created_at: float
    last_accessed: float | None
    last_validated: float | None
    access_count: int


@dataclass(frozen=True)
class Staleness:
    """A staleness score in [0, 1], its label, and the unweighted components (for explain)."""

    score: float
    label: StalenessLabel
    components: dict[str, float]


def staleness(
    m: FreshnessInput, now: float, params: StalenessParams = DEFAULT_STALENESS
) -> Staleness:
    """The staleness of ``m`` at ``now`` (see the module docstring for the formula)."""
    rules = params.for_type(m.type)
    weights = params.weights
    accessed = m.last_accessed if m.last_accessed is not None else m.created_at
    validated = m.last_validated if m.last_validated is not None else m.created_at
    uses = math.log1p(max(0, m.access_count)) / math.log1p(params.count_saturation)
    components = {
        "age": _decay(now - max(m.t_valid, m.created_at), rules.age_half_life_days),
        "access": _decay(now - accessed, rules.access_half_life_days),
        "validation": _decay(now - validated, rules.validation_half_life_days),
        "count": 1.0 - min(1.0, uses),
    }
    score = (
        weights.age * components["age"]
        + weights.access * components["access"]
        + weights.validation * components["validation"]
        + weights.count * components["count"]
    )
    # The weights may sum to 1 within a tolerance; keep the promise of [0, 1] exactly.
    score = min(1.0, max(0.0, score))
    label: StalenessLabel
    if m.t_invalid is not None and m.t_invalid <= now:
        label = "superseded"
    elif score >= rules.stale:
        label = "stale"
    elif score >= rules.aging:
        label = "aging"
    else:
        label = "fresh"
    return Staleness(score, label, components)


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def freshness(
    m: FreshnessInput, now: float, params: StalenessParams = DEFAULT_STALENESS
) -> dict[str, Any]:
    """The freshness block of a recall result: ages in days, times in ISO 8601 UTC."""
    result = staleness(m, now, params)
    return {
        "age_days": round(max(0.0, now - m.t_valid) / DAY, 2),
        "last_accessed": _iso(m.last_accessed),
        "last_validated": _iso(m.last_validated),
        "access_count": m.access_count,
        "staleness": round(result.score, 4),
        "label": result.label,
    }


# --- Per-namespace overrides ---------------------------------------------------------------

_TYPE_SECTIONS: Final = ("episodic", "semantic", "procedural")
# Every override key and the type its value must have (an int is accepted for a float).
_KEY_TYPES: Final[dict[str, type]] = {
    **{f"weights.{f.name}": float for f in fields(StalenessWeights)},
    **{f"{section}.{f.name}": float for section in _TYPE_SECTIONS for f in fields(TypeStaleness)},
    "count_saturation": int,
}
OVERRIDE_KEYS: Final[tuple[str, ...]] = tuple(_KEY_TYPES)


def _flatten(table: Mapping[Any, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{name}.")
        else:
            yield name, value


def _fits(value: Any, wanted: type) -> bool:
    # bool is an int in Python, but `stale = true` is a mistake, not 1.
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if wanted is int else isinstance(value, int | float)


def params_for(
    namespace: str,
    overrides: Mapping[str, Mapping[str, Any]],
    base: StalenessParams = DEFAULT_STALENESS,
) -> StalenessParams:
    """``base`` with ``overrides[namespace]`` applied (keys: see the module docstring).

    A namespace without overrides gets ``base`` itself. Unknown keys, values of the wrong type
    and values the parameters refuse (weights that no longer sum to 1, aging above stale)
    raise :class:`UsageError` naming the namespace and the key.
    """
    given = overrides.get(namespace)
    if given is None:
        return base
    where = f"staleness overrides for namespace {namespace!r}"
    if not isinstance(given, Mapping):
        raise UsageError(f"{where} must be a table of key = value, got {type(given).__name__}")
    sections: dict[str, dict[str, float]] = {}
    top: dict[str, Any] = {}
    for key, value in _flatten(given):
        wanted = _KEY_TYPES.get(key)
        if wanted is None:
            raise UsageError(
                f"{where}: unknown key {key!r}",
                hint="known keys: " + ", ".join(OVERRIDE_KEYS),
                details={"namespace": namespace, "key": key},
            )
        if not _fits(value, wanted):
            kind = "an integer" if wanted is int else "a number"
            raise UsageError(
                f"{where}: {key!r} must be {kind}, got {type(value).__name__} {value!r}",
                details={"namespace": namespace, "key": key},
            )
        section, dot, leaf = key.partition(".")
        if dot:
            sections.setdefault(section, {})[leaf] = float(value)
        else:
            top[key] = value
    changes: dict[str, Any] = dict(top)
    try:
        for section, leaves in sections.items():
            changes[section] = replace(getattr(base, section), **leaves)
        return replace(base, **changes)
    except UsageError as exc:
        raise UsageError(
            f"{where}: {exc.message}", hint=exc.hint, details={"namespace": namespace}
        ) from exc
