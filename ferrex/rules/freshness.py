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

**Labels by age.** A memory nobody touched since it was stored is ``fresh`` below ``fresh``
days, ``aging`` from there and ``stale`` from ``stale`` days, per type (:class:`TypeStaleness`)::

    episodic    fresh < 30 d    aging < 90 d     stale >= 90 d
    semantic    fresh < 90 d    aging < 180 d    stale >= 180 d
    procedural  fresh < 180 d   aging < 365 d    stale >= 365 d

``aging`` is the third number of the design's form ``{ fresh = 30, aging = 90, stale = 90 }``:
the day the aging label ends at the latest, ``fresh <= aging <= stale``. The aging label in
fact runs until ``stale``; where the two differ (``{ fresh = 7, aging = 14, stale = 30 }``)
the days between are still aging, because a memory that is no longer aging but not yet stale
has no other label to take. ``superseded`` is the label whenever ``t_invalid <= now``.

**The score behind them.** Staleness is a score in [0, 1] (1 = stale), the weighted sum of
four components in [0, 1], which orders memories and explains a label (its terms, the three
clocks then the count, are ``projections.readmodel.predicates.STALENESS_CLOCKS``, which the
read model renders to SQL too, ``STALENESS_SCORE``)::

    age         1 - 2^(-(now - max(t_valid, created_at)) / age half-life)
    access      1 - 2^(-(now - last_accessed, or created_at if never) / access half-life)
    validation  1 - 2^(-(now - last_validated, or created_at if never) / validation half-life)
    count       1 - min(1, log1p(access_count) / log1p(count_saturation))

Default weights 0.40 / 0.25 / 0.25 / 0.10 (they must sum to 1, and the three clocks must
weigh something); ``count_saturation`` 10. The half-lives default to the type's ``stale``
age. The label thresholds are *derived*: ``aging_score`` is the score of an untouched memory
at ``fresh`` days and ``stale_score`` its score at ``stale`` days, computed by the same
formula with the same weights and half-lives, so the boundaries above hold exactly for an
untouched memory (its score only grows with age) whatever the parameters. With the defaults
an untouched memory scores ``0.1 + 0.9 · (1 - 2^(-a/stale))``: 0.55 at the stale age for
every type; ``aging_score`` is 0.286 (episodic), 0.364 (semantic), 0.361 (procedural).
``aging_score`` and ``stale_score`` may also be set by hand (then the day boundaries no longer
hold exactly for an untouched memory).

The age clock starts when ferrex learned the memory: at its event time, or at the store if
that came later. A back-dated memory (an imported conversation from last year, a fact valid
since 2025) is as fresh as any new one on the day it is stored and then ages like it; counting
from the event time would label a whole deliberate import stale within days of storing it
and hide it. The recency boost and ``age_days`` still use the event time.

Access is not validation. A recall hit moves ``last_accessed`` and ``access_count``, which feed
the access and count components only; only ``last_validated`` (an agent or an operator
confirming the memory) resets the validation component. A memory recalled every day but never
confirmed still goes stale, at 0.40 + 0.25 = 0.65 > 0.55 once its age and validation clocks run
out; one confirmed and recalled lately scores at most 0.40 and is never stale.

Configuration (:class:`StalenessConfig`, :func:`params_for`) uses flat dotted keys, one per
field (:data:`OVERRIDE_KEYS`): ``weights.age``, ``weights.access``, ``weights.validation``,
``weights.count``; ``<type>.fresh``, ``<type>.aging``, ``<type>.stale`` (days),
``<type>.aging_score``, ``<type>.stale_score``, ``<type>.age_half_life_days``,
``<type>.access_half_life_days``, ``<type>.validation_half_life_days`` for ``<type>`` in
episodic, semantic, procedural; and ``count_saturation``. Nested tables are flattened first,
so TOML's ``episodic = { fresh = 30, aging = 90, stale = 90 }`` and ``episodic.fresh = 30``
mean the same keys. A table that gives ``aging`` or ``stale`` at most 1 without ``fresh``
is an old-style score threshold and is refused with a hint.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Final, Literal

from ferrex.errors import UsageError
from ferrex.times import rfc3339
from projections.readmodel.predicates import STALENESS_CLOCKS, clock_start

DAY: Final = 86_400.0

StalenessLabel = Literal["fresh", "aging", "stale", "superseded"]

_TYPES_HINT: Final = "use episodic, semantic or procedural"
_TYPE_SECTIONS: Final = ("episodic", "semantic", "procedural")


def _unknown_type(memory_type: str) -> UsageError:
    return UsageError(f"unknown memory type {memory_type!r}", hint=_TYPES_HINT)


def _of_type(holder: Any, memory_type: str) -> Any:
    """``holder``'s setting for one memory type (its ``episodic``, ``semantic`` or
    ``procedural`` attribute); an unknown type is a usage error."""
    if memory_type not in ("episodic", "semantic", "procedural"):
        raise _unknown_type(memory_type)
    return getattr(holder, memory_type)


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
        rule: RecencyRule = _of_type(self, memory_type)
        return rule


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
        if self.age + self.access + self.validation <= 0:
            raise UsageError(
                "staleness weights age, access and validation are all 0: nothing would age",
                hint="give at least one of weights.age, weights.access, weights.validation",
            )

    @cached_property
    def in_order(self) -> tuple[float, ...]:
        """The weights in the order of the score's components: the clocks of
        ``STALENESS_CLOCKS``, then the count."""
        return (*(getattr(self, c.name) for c in STALENESS_CLOCKS), self.count)


def _check_days(name: str, days: float) -> None:
    if not (math.isfinite(days) and days >= 0):
        raise UsageError(f"{name} must be a number of days >= 0, got {days!r}")


def _check_score(name: str, score: float | None) -> None:
    if score is not None and not (math.isfinite(score) and 0.0 <= score <= 1.0):
        raise UsageError(f"{name} must be a staleness score from 0 to 1, got {score!r}")


@dataclass(frozen=True)
class TypeStaleness:
    """One memory type's label ages (days), the clocks' half-lives and the score thresholds.

    A half-life left at None is the ``stale`` age; a score threshold left at None is derived
    from the ages (see the module docstring).
    """

    fresh: float
    aging: float
    stale: float
    age_half_life_days: float | None = None
    access_half_life_days: float | None = None
    validation_half_life_days: float | None = None
    aging_score: float | None = None
    stale_score: float | None = None

    def __post_init__(self) -> None:
        for name in ("fresh", "aging", "stale"):
            _check_days(name, getattr(self, name))
        if not self.fresh <= self.aging <= self.stale:
            raise UsageError(
                f"staleness ages need fresh <= aging <= stale, got fresh {self.fresh:g}, "
                f"aging {self.aging:g} and stale {self.stale:g}",
                hint="fresh: the day aging starts; stale: the day stale starts; aging: between",
            )
        if self.stale <= 0:
            raise UsageError(f"stale must be more than 0 days, got {self.stale!r}")
        for name in ("age_half_life_days", "access_half_life_days", "validation_half_life_days"):
            value = getattr(self, name)
            if value is not None:
                _check_half_life(name, value)
        _check_score("aging_score", self.aging_score)
        _check_score("stale_score", self.stale_score)

    def half_lives(self) -> tuple[float, ...]:
        """The clocks' half-lives in days, in the order of ``STALENESS_CLOCKS`` (age, access,
        validation)."""
        return self._half_lives

    @cached_property
    def _half_lives(self) -> tuple[float, ...]:  # read once: staleness asks for every memory
        given = (getattr(self, f"{c.name}_half_life_days") for c in STALENESS_CLOCKS)
        return tuple(self.stale if days is None else days for days in given)


def _components(
    rules: TypeStaleness, count_saturation: int, since: Sequence[float], access_count: int
) -> dict[str, float]:
    """The score's components: one per clock of ``STALENESS_CLOCKS`` (``since``: how long
    ago each started, in their order), then the count."""
    components: dict[str, float] = {}
    for clock, elapsed, half_life in zip(STALENESS_CLOCKS, since, rules.half_lives(), strict=True):
        components[clock.name] = _decay(elapsed, half_life)
    uses = math.log1p(max(0, access_count)) / math.log1p(count_saturation)
    components["count"] = 1.0 - min(1.0, uses)
    return components


def _weighted(weights: StalenessWeights, components: Mapping[str, float]) -> float:
    score = 0.0
    for weight, value in zip(weights.in_order, components.values(), strict=True):
        score += weight * value  # in order, as SQL adds them (not sum(): 3.12+ compensates)
    # The weights may sum to 1 within a tolerance; keep the promise of [0, 1] exactly.
    return min(1.0, max(0.0, score))


@dataclass(frozen=True)
class StalenessParams:
    weights: StalenessWeights = StalenessWeights()
    episodic: TypeStaleness = TypeStaleness(fresh=30.0, aging=90.0, stale=90.0)
    semantic: TypeStaleness = TypeStaleness(fresh=90.0, aging=180.0, stale=180.0)
    procedural: TypeStaleness = TypeStaleness(fresh=180.0, aging=365.0, stale=365.0)
    count_saturation: int = 10
    _thresholds: dict[str, tuple[float, float]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        if isinstance(self.count_saturation, bool) or not (
            isinstance(self.count_saturation, int) and self.count_saturation >= 1
        ):
            raise UsageError(
                f"count_saturation must be an integer >= 1, got {self.count_saturation!r}"
            )
        for name in _TYPE_SECTIONS:
            rules: TypeStaleness = getattr(self, name)
            aging = rules.aging_score
            stale = rules.stale_score
            if aging is None:
                aging = self.untouched_score(name, rules.fresh * DAY)
            if stale is None:
                stale = self.untouched_score(name, rules.stale * DAY)
            if aging > stale:
                raise UsageError(
                    f"{name}: the aging score threshold {aging:.4g} is above the stale one "
                    f"{stale:.4g}",
                    hint="set aging_score <= stale_score, or leave them to the ages",
                )
            self._thresholds[name] = (aging, stale)

    def for_type(self, memory_type: str) -> TypeStaleness:
        rule: TypeStaleness = _of_type(self, memory_type)
        return rule

    def untouched_score(self, memory_type: str, age_seconds: float) -> float:
        """The score of a memory ``age_seconds`` after it was stored, never touched since."""
        rules = self.for_type(memory_type)
        since = [age_seconds] * len(STALENESS_CLOCKS)
        components = _components(rules, self.count_saturation, since, 0)
        return _weighted(self.weights, components)

    def thresholds(self, memory_type: str) -> tuple[float, float]:
        """The scores from which a memory of this type is aging and stale."""
        if memory_type not in self._thresholds:
            raise _unknown_type(memory_type)
        return self._thresholds[memory_type]


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
    pinned: bool = False
    """Pinned by an agent (``ferrex.rules.lifecycle``): its score is still computed, but it
    is labelled fresh until superseded, so nothing hides, flags or evicts it as stale."""


@dataclass(frozen=True)
class Staleness:
    """A staleness score in [0, 1], its label, and the unweighted components (for explain)."""

    score: float
    label: StalenessLabel
    components: dict[str, float]


# ``now - created_at`` of a memory exactly 30 days old can miss 30 days by a rounding error
# (epoch seconds are large floats); this keeps such a memory on the boundary's later side. A
# second of age moves a score by more than 1e-8, so no real difference is blurred.
_AT_THE_BOUNDARY: Final = 1e-12


def staleness(
    m: FreshnessInput, now: float, params: StalenessParams = DEFAULT_STALENESS
) -> Staleness:
    """The staleness of ``m`` at ``now`` (see the module docstring for the formula)."""
    rules = params.for_type(m.type)
    since = [now - clock_start(clock, m) for clock in STALENESS_CLOCKS]
    components = _components(rules, params.count_saturation, since, m.access_count)
    score = _weighted(params.weights, components)
    aging, stale = params.thresholds(m.type)
    label: StalenessLabel
    if m.t_invalid is not None and m.t_invalid <= now:
        label = "superseded"
    elif m.pinned:
        label = "fresh"
    elif score >= stale - _AT_THE_BOUNDARY:
        label = "stale"
    elif score >= aging - _AT_THE_BOUNDARY:
        label = "aging"
    else:
        label = "fresh"
    return Staleness(score, label, components)


def freshness(
    m: FreshnessInput, now: float, params: StalenessParams = DEFAULT_STALENESS
) -> dict[str, Any]:
    """The freshness block of a recall result: ages in days, times in RFC 3339 UTC."""
    result = staleness(m, now, params)
    days = max(0.0, now - m.t_valid) / DAY
    return {
        # Hundredths of a day from a day on; under a day finer (about 9 s), so the short age
        # an answer shows ("7m", "3h") is not off by up to 14 minutes.
        "age_days": round(days, 2 if days >= 1 else 4),
        "last_accessed": rfc3339(m.last_accessed),
        "last_validated": rfc3339(m.last_validated),
        "access_count": m.access_count,
        "staleness": round(result.score, 4),
        "label": result.label,
    }


# --- Configuration -------------------------------------------------------------------------

# Every key and the type its value must have (an int is accepted for a float).
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


def apply_table(
    base: StalenessParams, table: Mapping[str, Any], where: str, namespace: str | None = None
) -> StalenessParams:
    """``base`` with the keys of ``table`` (see the module docstring) applied.

    ``where`` names the table in errors (``staleness.defaults``). Unknown keys, values of the
    wrong type, old-style score thresholds and values the parameters refuse raise
    :class:`UsageError` naming the key.
    """
    details: dict[str, Any] = {} if namespace is None else {"namespace": namespace}
    if not isinstance(table, Mapping):
        raise UsageError(
            f"{where} must be a table of key = value, got {type(table).__name__}",
            details=details,
        )
    sections: dict[str, dict[str, float]] = {}
    top: dict[str, Any] = {}
    for key, value in _flatten(table):
        wanted = _KEY_TYPES.get(key)
        if wanted is None:
            raise UsageError(
                f"{where}: unknown key {key!r}",
                hint="known keys: " + ", ".join(OVERRIDE_KEYS),
                details={**details, "key": key},
            )
        if not _fits(value, wanted):
            kind = "an integer" if wanted is int else "a number"
            raise UsageError(
                f"{where}: {key!r} must be {kind}, got {type(value).__name__} {value!r}",
                details={**details, "key": key},
            )
        section, dot, leaf = key.partition(".")
        if dot:
            sections.setdefault(section, {})[leaf] = float(value)
        else:
            top[key] = value
    for section, leaves in sections.items():
        if section == "weights" or "fresh" in leaves:
            continue
        for leaf in ("aging", "stale"):
            if leaf in leaves and leaves[leaf] <= 1.0:
                key = f"{section}.{leaf}"
                raise UsageError(
                    f"{where}: {key!r} = {leaves[leaf]:g} reads as an old staleness score "
                    f"threshold; {key!r} is now a number of days",
                    hint=f"for the score threshold write {key}_score = {leaves[leaf]:g}; for "
                    f"days give {section}.fresh as well, e.g. {section} = "
                    "{ fresh = 30, aging = 90, stale = 90 }",
                    details={**details, "key": key},
                )
    changes: dict[str, Any] = dict(top)
    for section, leaves in sections.items():
        try:
            changes[section] = replace(getattr(base, section), **leaves)
        except UsageError as exc:
            raise UsageError(
                f"{where}: {section}: {exc.message}",
                hint=exc.hint,
                details={**details, "key": section},
            ) from exc
    try:
        return replace(base, **changes)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}", hint=exc.hint, details=details) from exc


def params_for(
    namespace: str,
    overrides: Mapping[str, Mapping[str, Any]],
    base: StalenessParams = DEFAULT_STALENESS,
) -> StalenessParams:
    """``base`` with ``overrides[namespace]`` applied; ``base`` itself when it has none."""
    given = overrides.get(namespace)
    if given is None:
        return base
    where = f"staleness.namespaces.{_toml_key(namespace)}"
    return apply_table(base, given, where, namespace)


def _toml_key(name: str) -> str:
    bare = name.replace("-", "").replace("_", "").isalnum() and name.isascii()
    return name if bare else '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class StalenessConfig:
    """The one staleness configuration of recall, reflect, stats and eviction."""

    base: StalenessParams = DEFAULT_STALENESS
    namespaces: dict[str, StalenessParams] = field(default_factory=dict)

    def for_namespace(self, namespace: str | None) -> StalenessParams:
        """The parameters of ``namespace`` (None, or one without overrides: the base)."""
        if namespace is None:
            return self.base
        return self.namespaces.get(namespace, self.base)

    @classmethod
    def from_tables(
        cls, defaults: Mapping[str, Any], namespaces: Mapping[str, Any]
    ) -> StalenessConfig:
        """From ``[staleness.defaults]`` and ``[staleness.namespaces.NS]`` (every namespace's
        table applies over the defaults). Errors name the key."""
        base = (
            apply_table(DEFAULT_STALENESS, defaults, "staleness.defaults")
            if defaults
            else DEFAULT_STALENESS
        )
        return cls(base, {str(ns): params_for(str(ns), namespaces, base) for ns in namespaces})
