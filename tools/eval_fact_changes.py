"""Fact changes over the real MCP path: does the slot end with the right current answer?

    python -m tools.eval_fact_changes [--half tuning|held-out|both] [--show N] [--only OUTCOME]
                                      [--json] [--limit N] [--set FILE] [--totals-only]
    python -m tools.eval_fact_changes --unrelated N [--seed S] [--dated | --dated-share P]
                                      [--worded-share P] [--json]

Each scenario of ``golden_set/fact_changes.jsonl`` (its format and time rule are in
``golden_set/fact_changes.md``) is stored step by step through one ``ferrex`` stdio server on
a fresh temporary home, spoken to with the ``mcp`` SDK's client, each scenario in a namespace
of its own (``namespace`` on every call) so scenarios never meet. A step is a ``store`` of its
``subject``/``predicate``/``object``, with its ``content`` and ``multi_valued`` when given and
``valid_from`` = the moment of that store less ``valid_from_days_ago`` days (ISO 8601, UTC, to
the microsecond: ``0`` days ago is *now*, never a moment before an undated fact stored just
earlier).

After the steps, every memory the answers named is read back as ``ferrex://memory/{id}``: a
fact is *current* while its ``t_invalid`` is empty (or still ahead). A *flag* is anything
ferrex raises that names two facts of the scenario: a store answer's ``possible_conflict``,
recall's ``contradicts`` / ``possible_conflict`` marks (one recall of the namespace with
``include_invalidated``), reflect's ``contradictions`` / ``possible_conflicts`` for the
namespace. A refusal (``conflict_ambiguous``: ferrex asks the agent which fact it means) is
a store status, not a flag: the value was not stored.

Outcomes:

- ``change``: *resolved*, one current fact and its object the expected value (``expect_current``
  or an ``equivalent`` wording); *flagged*, more than one current, the expected value among
  them and each current fact flagged against another current one; *silent*, more than one
  current without such flags; *wrong*, the expected value is not current (superseded,
  refused, stored as history, or only an older value current).
- ``restatement``: the same, where one current fact of either wording, or the repeat answered
  as a ``duplicate``, is *resolved*, and *wrong* means the value was lost.
- ``negative``: *clean*, every value current and no flag; a *false flag* is a flag between
  them; a *wrong supersede* is a value no longer current (superseded, refused, merged).

The set is split by ``sha256(id)``'s first byte: even, tuning; odd, held-out. Rules are tuned
on the tuning half only: the held-out half is reported as totals, never scenario by scenario
nor by category (``--show`` and the per-category table are the tuning half's).

``--set FILE`` reads another set of the same format (default ``golden_set/fact_changes.jsonl``).
A set held out as a whole (``golden_set/fact_changes_fresh.jsonl``) is run with
``--totals-only``: both halves are then reported as the held-out half always is, totals only
(no per-category table, no scenario in ``--json``, no ``--show``).

``--open`` reads a set of one's own that is not blind (``tools/fact_probes.jsonl``: probes
written against the rules, to find what they wrongly join): every scenario is reported and
shown as the tuning half is.

``--unrelated N`` measures false flags instead: N facts of a made-up project (services and
their databases, workers and front ends, people, tools; a seeded vocabulary) in one
namespace, every subject+predicate slot distinct, so any flag, supersede or refusal is a
false one; reported per 100 stores.

Progress goes to stderr. The server runs on loopback stdio only and stops with the run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextResourceContents

from tools import harness
from tools.harness import ROOT

DEFAULT_SET: Final = ROOT / "golden_set" / "fact_changes.jsonl"
KINDS: Final = ("change", "restatement", "negative")
CATEGORIES: Final = ("config", "host", "limit", "location", "other", "owner", "people",
                     "schedule", "status", "uses", "version")  # fmt: skip
#: Seconds one scenario may take before the run gives up (a hung server must not hang it).
SCENARIO_TIMEOUT: Final = 300.0
Half = Literal["tuning", "held-out"]


# --- The set -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    subject: str
    predicate: str
    object: str
    days_ago: float | None = None
    content: str | None = None
    multi_valued: bool = False


@dataclass(frozen=True)
class Scenario:
    id: str
    kind: str
    category: str
    steps: tuple[Step, ...]
    expect_current: tuple[str, ...]
    equivalent: tuple[str, ...]
    note: str
    open: bool = False
    """A set of one's own, not blind (``--open``): every scenario is reported as tuning."""

    @property
    def half(self) -> Half:
        return "tuning" if self.open else half_of(self.id)


def half_of(scenario_id: str) -> Half:
    """The half a scenario belongs to: ``sha256(id)``'s first byte even is tuning."""
    return "tuning" if hashlib.sha256(scenario_id.encode()).digest()[0] % 2 == 0 else "held-out"


def one_subject(scenario: Scenario) -> Scenario:
    """The scenario with every step under its first step's subject: what the slot rules do
    when the subject is resolved (a diagnostic, ``--one-subject``). Negatives keep theirs: two
    subjects (staging, production) are what makes many of them negatives."""
    if scenario.kind == "negative":
        return scenario
    first = scenario.steps[0].subject
    steps = tuple(replace(s, subject=first) for s in scenario.steps)
    return replace(scenario, steps=steps)


def load_set(path: Path) -> list[Scenario]:
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            steps = tuple(
                Step(str(s["subject"]), str(s["predicate"]), str(s["object"]),
                     None if s.get("valid_from_days_ago") is None
                     else float(s["valid_from_days_ago"]),
                     s.get("content"), bool(s.get("multi_valued", False)))
                for s in doc["steps"]
            )  # fmt: skip
            scenario = Scenario(
                id=str(doc["id"]), kind=str(doc["kind"]), category=str(doc["category"]),
                steps=steps, expect_current=tuple(map(str, doc["expect_current"])),
                equivalent=tuple(map(str, doc.get("equivalent", ()))),
                note=str(doc.get("note", "")),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError) as exc:
            raise SystemExit(f"{path}:{number}: not a scenario ({exc})") from exc
        if scenario.kind not in KINDS:
            raise SystemExit(f"{path}:{number}: unknown kind {scenario.kind!r}")
        if scenario.id in seen:
            raise SystemExit(f"{path}:{number}: id {scenario.id} twice")
        if len(steps) < 2 or not scenario.expect_current:
            raise SystemExit(f"{path}:{number}: needs two steps and an expected value")
        seen.add(scenario.id)
        scenarios.append(scenario)
    return scenarios


def same_value(a: str, b: str) -> bool:
    """Objects compared as an answer is read: case and spacing aside."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# --- Talking to the server -----------------------------------------------------------------


def server(home: Path) -> Client:
    # The SDK passes the server only a minimal environment: no FERREX_* reaches it.
    params = StdioServerParameters(command=harness.FERREX, args=["--home", str(home)])
    return Client(params, read_timeout_seconds=120)


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(is_error, structured answer) of a tool call; a tool error's text when it has none."""
    result = await client.call_tool(tool, args)
    doc = dict(result.structured_content or {})
    if not doc and result.content:
        text = getattr(result.content[0], "text", "")
        doc = {"error": {"code": "unstructured", "message": text}}
    return bool(result.is_error), doc


async def read_memory(client: Client, memory_id: str) -> dict[str, Any] | None:
    """The ``ferrex://memory/{id}`` document, or None when the server does not know it."""
    try:
        result = await client.read_resource(f"ferrex://memory/{memory_id}", cache_mode="bypass")
    except Exception:  # the SDK raises for a resource error: an unknown id
        return None
    for part in result.contents:
        if isinstance(part, TextResourceContents):
            doc: dict[str, Any] = json.loads(part.text)
            return doc
    return None


# --- One scenario --------------------------------------------------------------------------


@dataclass
class StoreOutcome:
    step: int
    status: str
    """``stored``, ``stored_as_history`` (a back-dated fact kept as already ended),
    ``duplicate``, ``refused:<code>`` (a tool error), ``error:<kind>``."""
    id: str | None
    answer: dict[str, Any]


@dataclass
class FactState:
    id: str
    object: str
    current: bool
    t_invalid: str | None
    replaced_by: str | None


@dataclass
class Outcome:
    scenario: Scenario
    stores: list[StoreOutcome]
    facts: dict[str, FactState]
    flags: dict[frozenset[str], set[str]]
    """Flagged pairs of the scenario's facts and where each was seen (store, recall, reflect)."""
    outcome: str = ""
    detail: str = ""
    hints: list[str] = field(default_factory=list)


def store_args(step: Step, namespace: str) -> dict[str, Any]:
    args: dict[str, Any] = {"subject": step.subject, "predicate": step.predicate,
                            "object": step.object, "namespace": namespace}  # fmt: skip
    if step.content:
        args["content"] = step.content
    if step.multi_valued:
        args["multi_valued"] = True
    if step.days_ago is not None:
        args["valid_from"] = iso(datetime.now(UTC) - timedelta(days=step.days_ago))
    return args


def store_outcome(index: int, is_error: bool, answer: dict[str, Any]) -> StoreOutcome:
    if is_error:
        error = answer.get("error", {})
        kind = "refused" if error.get("kind") == "Refused" else "error"
        return StoreOutcome(index, f"{kind}:{error.get('code', '?')}", None, answer)
    status = str(answer.get("status", "?"))
    if status == "stored" and answer.get("superseded_by"):
        status = "stored_as_history"
    return StoreOutcome(index, status, answer.get("id"), answer)


def pairs(ids: Iterable[str]) -> list[frozenset[str]]:
    listed = sorted(set(ids))
    return [frozenset((a, b)) for i, a in enumerate(listed) for b in listed[i + 1 :]]


def flags_of(
    stores: Sequence[StoreOutcome], recall: dict[str, Any], reflect: dict[str, Any]
) -> dict[frozenset[str], set[str]]:
    """Every pair of memories some answer flags, with the places it was seen."""
    found: dict[frozenset[str], set[str]] = {}

    def add(a: str, b: str, where: str) -> None:
        if a != b:
            found.setdefault(frozenset((a, b)), set()).add(where)

    for s in stores:
        for other in s.answer.get("possible_conflict", []) if s.id else []:
            add(s.id or "", str(other), "store")
    for r in recall.get("results", []):
        for mark in ("contradicts", "possible_conflict"):
            for other in r.get(mark, []) or []:
                add(str(r["id"]), str(other), "recall")
    for section in ("contradictions", "possible_conflicts"):
        for group in reflect.get(section, []):
            for pair in pairs(str(f["id"]) for f in group.get("facts", [])):
                a, b = sorted(pair)
                add(a, b, "reflect")
    return found


def is_current(doc: dict[str, Any], now: datetime) -> bool:
    ended = doc.get("t_invalid")
    if not ended:
        return True
    return datetime.fromisoformat(str(ended).replace("Z", "+00:00")) > now


def replaced_by(doc: dict[str, Any]) -> str | None:
    """The memory after this one in its supersede chain (``history`` is oldest first)."""
    chain = [str(h["id"]) for h in doc.get("history", [])]
    if doc.get("id") in chain:
        at = chain.index(str(doc["id"]))
        if at + 1 < len(chain):
            return chain[at + 1]
    return None


async def run_scenario(client: Client, scenario: Scenario, namespace: str) -> Outcome:
    stores: list[StoreOutcome] = []
    for index, step in enumerate(scenario.steps):
        is_error, answer = await call(client, "store", store_args(step, namespace))
        stores.append(store_outcome(index, is_error, answer))
    ids: list[str] = []
    for s in stores:
        for memory_id in [s.id, *s.answer.get("superseded", []), s.answer.get("superseded_by")]:
            if memory_id and memory_id not in ids:
                ids.append(str(memory_id))
    facts: dict[str, FactState] = {}
    read_at = datetime.now(UTC)
    for memory_id in ids:
        doc = await read_memory(client, memory_id)
        if doc is None:
            continue
        body = doc.get("body") or {}
        facts[memory_id] = FactState(
            memory_id, str(body.get("object", "")), is_current(doc, read_at), doc.get("t_invalid"),
            replaced_by(doc),
        )  # fmt: skip
    query = " ".join(dict.fromkeys(f"{s.subject} {s.predicate}" for s in scenario.steps))
    _, recall = await call(client, "recall", {
        "query": query, "namespace": namespace, "types": ["semantic"],
        "include_invalidated": True, "limit": 20,
    })  # fmt: skip
    _, reflect = await call(client, "reflect", {"namespace": namespace, "limit": 100})
    flags = {p: w for p, w in flags_of(stores, recall, reflect).items() if p <= facts.keys()}
    outcome = Outcome(scenario, stores, facts, flags)
    outcome.outcome, outcome.detail = classify(scenario, stores, facts, flags)
    outcome.hints = [str(s.answer["similar"]["id"]) for s in stores if "similar" in s.answer]
    return outcome


# --- Classification ------------------------------------------------------------------------


def classify(
    scenario: Scenario,
    stores: Sequence[StoreOutcome],
    facts: dict[str, FactState],
    flags: dict[frozenset[str], set[str]],
) -> tuple[str, str]:
    """(outcome, a few words on why) of a scenario, by the definitions in the module doc."""
    current = [f for f in facts.values() if f.current]
    if scenario.kind == "negative":
        return _negative(scenario, stores, current, flags)
    accepted = (*scenario.expect_current, *scenario.equivalent)
    right = [f for f in current if any(same_value(f.object, v) for v in accepted)]
    refused = [s for s in stores if s.id is None]
    if not right:
        if not current:
            return "wrong", "nothing current"
        expected = [s for s in stores if any(same_value(scenario.steps[s.step].object, v)
                                             for v in accepted)]  # fmt: skip
        if expected and all(s.id is None for s in expected):
            return "wrong", f"expected value refused ({expected[-1].status})"
        if any(s.status == "stored_as_history" for s in expected):
            return "wrong", "expected value stored as history"
        return "wrong", "expected value superseded" if expected else "an older value current"
    if len(current) == 1:
        how = "one current"
        if any(s.status == "duplicate" for s in stores):
            how += ", repeat answered as duplicate"
        if refused:
            how += f", {len(refused)} store(s) refused"
        return "resolved", how
    flagged = {i for pair in flags if pair <= {f.id for f in current} for i in pair}
    if all(f.id in flagged for f in current):
        return "flagged", f"{len(current)} current, flagged"
    if len(right) == len(current):
        return "silent", f"{len(current)} current, all acceptable wordings"
    return "silent", f"{len(current)} current, no flag"


def _negative(
    scenario: Scenario,
    stores: Sequence[StoreOutcome],
    current: Sequence[FactState],
    flags: dict[frozenset[str], set[str]],
) -> tuple[str, str]:
    missing = [v for v in scenario.expect_current
               if not any(same_value(f.object, v) for f in current)]  # fmt: skip
    why: list[str] = []
    if missing:
        statuses = sorted({s.status for s in stores if s.status != "stored"})
        why.append(f"not current: {', '.join(missing)}"
                   + (f" ({', '.join(statuses)})" if statuses else ""))  # fmt: skip
    if flags:
        places = sorted({w for where in flags.values() for w in where})
        why.append(f"flagged in {'/'.join(places)}")
    if missing and flags:
        return "false flag+wrong supersede", "; ".join(why)
    if missing:
        return "wrong supersede", "; ".join(why)
    if flags:
        return "false flag", "; ".join(why)
    return "clean", "all current, no flag"


# --- Reports -------------------------------------------------------------------------------


CHANGE_OUTCOMES: Final = ("resolved", "flagged", "silent", "wrong")
NEGATIVE_OUTCOMES: Final = ("clean", "false flag", "wrong supersede", "false flag+wrong supersede")


def totals(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Counts per kind and outcome, the wrong/silent details, the stores' statuses."""
    doc: dict[str, Any] = {"scenarios": len(outcomes)}
    for kind in KINDS:
        mine = [o for o in outcomes if o.scenario.kind == kind]
        names = NEGATIVE_OUTCOMES if kind == "negative" else CHANGE_OUTCOMES
        counts = Counter(o.outcome for o in mine)
        entry: dict[str, Any] = {"n": len(mine), **{name: counts.get(name, 0) for name in names}}
        if kind == "negative":
            entry["false flags"] = counts["false flag"] + counts["false flag+wrong supersede"]
            entry["wrong supersedes"] = (
                counts["wrong supersede"] + counts["false flag+wrong supersede"]
            )
        else:
            entry["why"] = dict(sorted(Counter(
                f"{o.outcome}: {o.detail}" for o in mine if o.outcome in ("wrong", "silent")
            ).items()))  # fmt: skip
            entry["silent with a similar note"] = sum(
                1 for o in mine if o.outcome == "silent" and o.hints
            )
        doc[kind] = entry
    doc["store statuses"] = dict(Counter(s.status for o in outcomes for s in o.stores))
    doc["flags by source"] = dict(Counter(
        w for o in outcomes for where in o.flags.values() for w in where
    ))  # fmt: skip
    return doc


def per_category(outcomes: Sequence[Outcome]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for category in sorted({o.scenario.category for o in outcomes}):
        row: Counter[str] = Counter()
        for o in outcomes:
            if o.scenario.category == category:
                row[o.scenario.kind] += 1
                row[f"{o.scenario.kind} {o.outcome}"] += 1
        table[category] = dict(row)
    return table


def pct(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.1f}%)" if whole else "0"


def print_totals(name: str, doc: dict[str, Any], seconds: float, *, details: bool) -> None:
    print(f"\n## {name} half: {doc['scenarios']} scenarios ({seconds:.0f} s)")
    for kind in ("change", "restatement"):
        e = doc[kind]
        print(f"{kind} ({e['n']}): " + " | ".join(
            f"{o} {pct(e[o], e['n'])}" for o in CHANGE_OUTCOMES))  # fmt: skip
        if details:
            for why, n in e["why"].items():
                print(f"    {n:4d}  {why}")
            print(f"    silent ones whose store answer carried a `similar` note: "
                  f"{e['silent with a similar note']}")  # fmt: skip
    e = doc["negative"]
    print(f"negative ({e['n']}): clean {pct(e['clean'], e['n'])} | false flag "
          f"{pct(e['false flags'], e['n'])} | wrong supersede {pct(e['wrong supersedes'], e['n'])}"
          f" (both: {e['false flag+wrong supersede']})")  # fmt: skip
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(doc["store statuses"].items()))
    print(f"store statuses: {statuses}")
    sources = ", ".join(f"{k} {v}" for k, v in sorted(doc["flags by source"].items())) or "none"
    print(f"flagged pairs seen by: {sources}")


def print_categories(table: dict[str, dict[str, int]]) -> None:
    print(
        "\n| category | change n | resolved | flagged | silent | wrong | restatement n | "
        "resolved | flagged | silent | wrong | negative n | false flag | wrong supersede |"
    )
    print("|---|" + "---:|" * 13)
    for category, row in table.items():
        cells = [str(row.get("change", 0))]
        cells += [str(row.get(f"change {o}", 0)) for o in CHANGE_OUTCOMES]
        cells += [str(row.get("restatement", 0))]
        cells += [str(row.get(f"restatement {o}", 0)) for o in CHANGE_OUTCOMES]
        both = row.get("negative false flag+wrong supersede", 0)
        cells += [str(row.get("negative", 0)), str(row.get("negative false flag", 0) + both),
                  str(row.get("negative wrong supersede", 0) + both)]  # fmt: skip
        print(f"| {category} | " + " | ".join(cells) + " |")


def failing(o: Outcome) -> bool:
    return o.outcome not in ("resolved", "clean")


def show(o: Outcome) -> None:
    s = o.scenario
    print(f"\n### {s.id} {s.kind}/{s.category}: {o.outcome} ({o.detail})")
    print(f"    note: {s.note}; expect: {' / '.join(s.expect_current)}"
          + (f" (or {' / '.join(s.equivalent)})" if s.equivalent else ""))  # fmt: skip
    for step, done in zip(s.steps, o.stores, strict=True):
        when = "" if step.days_ago is None else f" [{step.days_ago:g} days ago]"
        multi = " [multi_valued]" if step.multi_valued else ""
        print(f"  {done.step + 1}. {step.subject} | {step.predicate} | {step.object}{when}{multi}")
        a = done.answer
        said = [done.status, *([done.id] if done.id else [])]
        for key in ("superseded", "superseded_by", "possible_conflict", "replaced_multi_valued"):
            if a.get(key):
                said.append(f"{key}={a[key]}")
        if "similar" in a:
            said.append(f"similar={a['similar'].get('id')} ({a['similar'].get('similarity')})")
        if "error" in a:
            said.append(str(a["error"].get("message", ""))[:200])
        print("     -> " + "; ".join(str(x) for x in said))
    for f in o.facts.values():
        state = "current" if f.current else f"ended {f.t_invalid} by {f.replaced_by}"
        print(f"     {f.id} {f.object!r}: {state}")
    for pair, where in o.flags.items():
        print(f"     flag {' ~ '.join(sorted(pair))} in {'/'.join(sorted(where))}")


def outcome_doc(o: Outcome) -> dict[str, Any]:
    return {"id": o.scenario.id, "kind": o.scenario.kind, "category": o.scenario.category,
            "outcome": o.outcome, "detail": o.detail,
            "statuses": [s.status for s in o.stores]}  # fmt: skip


# --- The unrelated facts -------------------------------------------------------------------


DOMAINS: Final = (
    "payments", "ledger", "checkout", "search", "auth", "inventory", "notifications",
    "billing", "reporting", "ingest", "pricing", "catalog", "shipping", "returns", "loyalty",
    "fraud", "identity", "media", "chat", "feed", "recommendations", "analytics", "onboarding",
    "geo", "tax", "invoices", "subscriptions", "audit", "exports", "webhooks",
)  # fmt: skip
TEAMS: Final = ("team Atlas", "team Nova", "platform team", "core infra", "growth squad",
                "data eng", "SRE", "team Kestrel", "mobile team", "payments squad")  # fmt: skip
PEOPLE: Final = (
    "Ana Souza", "Bilal Haddad", "Chen Wei", "Dana Kowalski", "Emeka Obi", "Freya Lund",
    "Gaurav Mehta", "Hana Sato", "Ivan Petrov", "Julia Romero", "Kofi Mensah", "Lea Schmidt",
    "Mateo Silva", "Nora Berg", "Omar Farouk", "Priya Nair", "Quinn Walsh", "Rosa Diaz",
    "Sven Olsen", "Tariq Aziz", "Uma Rao", "Victor Hugo Lima", "Wen Li", "Yara Haddad",
    "Zoe Martin", "Arjun Das", "Birgit Holm", "Carlos Vega", "Dmitri Orlov", "Elif Kaya",
)  # fmt: skip
TOOLS: Final = (
    "Terraform", "GitHub Actions", "Sentry", "Grafana", "Datadog", "PagerDuty", "Renovate",
    "pre-commit", "Poetry", "Docker Compose", "Argo CD", "Helm", "Vault", "Jira", "Linear",
    "Snyk", "SonarQube", "Metabase", "Airflow", "dbt", "Kafka Connect", "Nginx", "Envoy",
    "Buildkite", "Storybook",
)  # fmt: skip
REGIONS: Final = ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1",
                  "ap-northeast-1", "sa-east-1", "ca-central-1")  # fmt: skip
CITIES: Final = ("Lisbon", "Berlin", "Lagos", "Bangalore", "Toronto", "Osaka", "Warsaw",
                 "Nairobi", "Austin", "Madrid", "Oslo", "Seoul")  # fmt: skip


#: Values a relation takes, by kind: drawn from these (the others are made up in ``_value``).
CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "team": TEAMS, "person": PEOPLE, "region": REGIONS, "city": CITIES, "tool": TOOLS,
    "lang": ("Go 1.22", "Python 3.12", "Kotlin", "TypeScript", "Rust", "Java 21", "Elixir"),
    "seconds": ("2s", "5s", "10s", "15s", "30s", "45s", "60s", "90s", "120s"),
    "cron": ("every night at 02:00 UTC", "hourly", "every 15 minutes", "Mondays at 06:00",
             "0 */6 * * *", "weekdays at 18:30"),
    "port": ("8080", "8443", "9000", "3000", "5000", "7070", "50051"),
    "memory": ("256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"),
    "level": ("debug", "info", "warn", "error"),
    "db": ("Postgres 16", "MySQL 8", "DynamoDB", "MongoDB 7", "CockroachDB", "SQLite"),
    "cache": ("Redis 7", "Memcached", "Valkey", "in-process LRU"),
    "queue": ("SQS", "RabbitMQ", "Kafka", "NATS", "Pub/Sub"),
    "lib": ("gRPC", "Stripe SDK", "OpenTelemetry", "Celery", "Flask", "Spring Boot", "Next.js",
            "React Query", "Tokio"),
    "days": ("7 days", "14 days", "30 days", "90 days", "365 days"),
    "percent": ("99.0%", "99.5%", "99.9%", "99.95%"),
    "rate": ("50 requests per second", "100 requests per second", "200 requests per second",
             "500 requests per second", "1000 requests per second"),
    "path": ("/healthz", "/status", "/ready", "/livez", "/ping"),
    "role": ("backend engineer", "SRE", "engineering manager", "data engineer",
             "product designer", "staff engineer"),
    "tz": ("UTC", "CET", "WAT", "IST", "EST", "JST"),
    "area": ("checkout flow", "query planner", "mobile releases", "billing migrations",
             "search relevance", "observability"),
    "license": ("MIT", "Apache-2.0", "enterprise licence", "BSD-3-Clause", "MPL-2.0"),
    "file": ("infra/main.tf", ".github/workflows/ci.yml", "config.yaml", "deploy/values.yaml",
             ".pre-commit-config.yaml"),
    "tier": ("free tier", "team plan", "business plan", "enterprise"),
    "format": ("Parquet", "CSV", "JSON lines", "Avro"),
}  # fmt: skip


def _value(rng: random.Random, kind: str) -> str:
    """A value of ``kind`` (a key of :data:`CHOICES`, or one made up here)."""
    if kind in CHOICES:
        return rng.choice(CHOICES[kind])
    r, domain = rng.randrange, rng.choice(DOMAINS)
    if kind == "host":
        return rng.choice((f"k8s-node-{r(1, 40):02d}", f"ip-10-{r(10)}-{r(1, 250)}-{r(1, 250)}",
                           f"ecs cluster {domain}-prod"))  # fmt: skip
    if kind == "version":
        return f"{r(10)}.{r(31)}.{r(21)}"
    if kind == "count":
        return str(r(2, 65))
    if kind == "size":
        return f"{r(10, 900)} GB"
    if kind == "channel":
        return f"#{domain}-{rng.choice(('alerts', 'oncall', 'dev'))}"
    if kind == "repo":
        return f"github.com/acme/{domain}-{rng.choice(('svc', 'app', 'infra'))}"
    if kind == "handle":
        return f"@{rng.choice(PEOPLE).split()[0].lower()}{r(1, 100)}"
    if kind == "date":
        return (datetime(2027, 1, 1) + timedelta(days=r(365))).strftime("%Y-%m-%d")
    if kind == "bucket":
        return f"s3://acme-{domain}-{rng.choice(('raw', 'exports'))}"
    raise ValueError(f"no values of kind {kind!r}")


#: Per kind of subject: (relation as an agent words it, the kind of value it takes). The
#: relations of one kind are distinct (no synonyms), so every slot is a fact of its own.
RELATIONS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "api": (("owned by", "team"), ("runs on", "host"), ("written in", "lang"),
            ("version", "version"), ("request timeout", "seconds"), ("region", "region"),
            ("deploy schedule", "cron"), ("listens on port", "port"), ("replicas", "count"),
            ("memory limit", "memory"), ("log level", "level"), ("database", "db"),
            ("cache", "cache"), ("uses", "lib"), ("alerts channel", "channel"),
            ("repository", "repo"), ("SLA", "percent"), ("rate limit", "rate"),
            ("health check path", "path"), ("on-call", "person")),
    "worker": (("owned by", "team"), ("runs on", "host"), ("written in", "lang"),
               ("version", "version"), ("job timeout", "seconds"), ("region", "region"),
               ("schedule", "cron"), ("concurrency", "count"), ("memory limit", "memory"),
               ("consumes from", "queue"), ("max retries", "count"), ("log level", "level")),
    "db": (("engine", "db"), ("hosted on", "host"), ("region", "region"),
           ("storage size", "size"), ("backup schedule", "cron"), ("backup retention", "days"),
           ("max connections", "count"), ("owned by", "team"), ("read replicas", "count")),
    "frontend": (("built with", "lib"), ("owned by", "team"), ("version", "version"),
                 ("deployed to", "host"), ("release schedule", "cron"),
                 ("repository", "repo"), ("error tracking", "tool")),
    "person": (("team", "team"), ("role", "role"), ("timezone", "tz"), ("based in", "city"),
               ("reports to", "person"), ("GitHub handle", "handle"),
               ("focus area", "area")),
    "tool": (("version", "version"), ("license", "license"), ("config file", "file"),
             ("admin", "person"), ("plan", "tier"), ("renewal date", "date")),
    "dataset": (("format", "format"), ("retention", "days"), ("stored in", "bucket"),
                ("refresh schedule", "cron"), ("owned by", "team"), ("size", "size")),
}  # fmt: skip
KIND_NAMES: Final = {"api": ("api", "API", "service"), "worker": ("worker", "consumer"),
                     "db": ("db", "database"), "frontend": ("frontend", "web app"),
                     "dataset": ("events table", "daily export")}  # fmt: skip


def unrelated_facts(n: int, seed: int) -> list[tuple[str, str, str]]:
    """``n`` facts of a made-up project, each in a subject+predicate slot of its own."""
    rng = random.Random(seed)
    subjects: list[tuple[str, str]] = []
    for domain in DOMAINS:
        for kind, names in KIND_NAMES.items():
            name = rng.choice(names)
            style = rng.randrange(3)
            subjects.append((kind, f"{domain}-{name}" if style == 0 and " " not in name
                             else f"{domain} {name}" if style == 1 else
                             f"{domain.capitalize()} {name}"))  # fmt: skip
    subjects += [("person", p) for p in PEOPLE] + [("tool", t) for t in TOOLS]
    slots = [(subject, predicate, kind_of) for kind, subject in subjects
             for predicate, kind_of in RELATIONS[kind]]  # fmt: skip
    if n > len(slots):
        raise SystemExit(f"--unrelated: at most {len(slots)} distinct slots in the vocabulary")
    rng.shuffle(slots)
    facts = []
    for subject, predicate, kind_of in slots[:n]:
        facts.append((subject, predicate, _value(rng, kind_of)))
    return facts


#: Notes telling of a change, stored with a share of the unrelated facts (``--worded-share``):
#: each fact is still a slot of its own, so whatever such a note makes ferrex flag is false.
CHANGE_NOTES: Final = (
    "moved it over last week",
    "we switched to this after the incident",
    "changed in the last sprint",
    "migrated during the cleanup",
    "upgraded on Monday",
)


async def run_unrelated(
    client: Client, n: int, seed: int, *, dated: float = 0.0, worded: float = 0.0
) -> dict[str, Any]:
    namespace = "unrelated"
    facts = unrelated_facts(n, seed)
    # ``dated`` is the share of facts told with a start (``valid_from``, 1 to 400 days ago).
    # All of them: an agent that dates everything it stores, so a date is no news of a
    # change. Some: an agent that dates what it knows the start of, beside undated facts.
    # ``worded`` is the share told with a note of change (:data:`CHANGE_NOTES`): news in
    # words of a slot no other fact holds.
    days = random.Random(seed + 1)
    some = random.Random(seed + 2)
    told = random.Random(seed + 3)
    statuses: Counter[str] = Counter()
    flagged: dict[frozenset[str], set[str]] = {}
    superseding = similar = 0
    examples: list[str] = []
    stored: dict[str, tuple[str, str, str]] = {}
    for i, (subject, predicate, obj) in enumerate(facts, 1):
        args = {"subject": subject, "predicate": predicate, "object": obj, "namespace": namespace}
        if dated >= 1.0 or (dated > 0.0 and some.random() < dated):
            args["valid_from"] = iso(datetime.now(UTC) - timedelta(days=days.randint(1, 400)))
        if worded > 0.0 and told.random() < worded:
            args["content"] = f"{subject} {predicate} {obj}: {told.choice(CHANGE_NOTES)}"
        is_error, answer = await call(client, "store", args)
        done = store_outcome(i, is_error, answer)
        statuses[done.status] += 1
        if done.id:
            stored.setdefault(done.id, (subject, predicate, obj))
        if answer.get("superseded"):
            superseding += 1
        similar += "similar" in answer
        for other in answer.get("possible_conflict", []) if done.id else []:
            flagged.setdefault(frozenset((done.id or "", str(other))), set()).add("store")
        if (done.status != "stored" or answer.get("superseded") or answer.get("possible_conflict")
                ) and len(examples) < 10:  # fmt: skip
            what = {k: answer[k] for k in ("superseded", "possible_conflict") if answer.get(k)}
            message = str(answer.get("error", {}).get("message", ""))[:160]
            examples.append(f"{subject} | {predicate} | {obj} -> {done.status} {what} {message}")
        if i % 100 == 0:
            print(f"  unrelated {i}/{n}", file=sys.stderr, flush=True)
    _, reflect = await call(client, "reflect", {"namespace": namespace, "limit": 100})
    for section in ("contradictions", "possible_conflicts"):
        for group in reflect.get(section, []):
            for pair in pairs(str(f["id"]) for f in group.get("facts", [])):
                flagged.setdefault(pair, set()).add("reflect")
    named = sorted({i for pair in flagged for i in pair})
    return {
        "stores": n,
        "dated": dated,
        "worded": worded,
        "subjects": len({f[0] for f in facts}),
        "predicates": len({f[1] for f in facts}),
        "statuses": dict(statuses),
        "stores_that_superseded": superseding,
        "similar_notes": similar,
        "flagged_pairs": len(flagged),
        "flags_per_100_stores": 100 * len(flagged) / n,
        "supersedes_per_100_stores": 100 * superseding / n,
        "refusals_per_100_stores": 100
        * sum(v for k, v in statuses.items() if k.startswith("refused"))
        / n,
        "reflect_counts": reflect.get("counts", {}),
        "examples": examples,
        "flagged_examples": [
            " ~ ".join(" | ".join(stored.get(i, (i, "", ""))) for i in sorted(pair))
            for pair in list(flagged)[:10]
        ],
        "flagged_memories": len(named),
    }


# --- Main ----------------------------------------------------------------------------------


def head() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return done.stdout.strip() or "?"


async def run_scenarios(home: Path, scenarios: Sequence[Scenario]) -> tuple[list[Outcome], float]:
    outcomes: list[Outcome] = []
    began = time.monotonic()
    async with server(home) as client:
        for n, scenario in enumerate(scenarios, 1):
            with anyio.fail_after(SCENARIO_TIMEOUT):
                outcomes.append(await run_scenario(client, scenario, scenario.id))
            if n % 25 == 0 or n == len(scenarios):
                print(f"  {n}/{len(scenarios)} scenarios, {time.monotonic() - began:.0f} s",
                      file=sys.stderr, flush=True)  # fmt: skip
    return outcomes, time.monotonic() - began


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set",
        type=Path,
        default=DEFAULT_SET,
        help=f"the scenarios (JSONL; default {DEFAULT_SET.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--totals-only",
        action="store_true",
        help="report every half as totals only (a set held out as a whole)",
    )
    parser.add_argument("--half", choices=("tuning", "held-out", "both"), default="tuning")
    parser.add_argument(
        "--open",
        action="store_true",
        help="a set of one's own, not blind (tools/fact_probes.jsonl): every scenario is "
        "reported and shown as the tuning half",
    )
    parser.add_argument(
        "--show",
        type=int,
        default=0,
        metavar="N",
        help="print up to N failing tuning scenarios with ferrex's answers",
    )
    parser.add_argument(
        "--only",
        metavar="OUTCOME",
        help="with --show: only this outcome (silent, wrong, flagged, ...)",
    )
    parser.add_argument("--limit", type=int, help="only the first N scenarios of the half")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--unrelated",
        type=int,
        metavar="N",
        help="instead: the false-flag rate over N unrelated facts",
    )
    parser.add_argument("--seed", type=int, default=7, help="the unrelated facts' seed")
    parser.add_argument(
        "--dated",
        action="store_true",
        help="with --unrelated: every fact stored with a valid_from (a date is no news then)",
    )
    parser.add_argument(
        "--dated-share",
        type=float,
        metavar="P",
        help="with --unrelated: a share P (0 to 1) of the facts stored with a valid_from, the "
        "rest undated",
    )
    parser.add_argument(
        "--worded-share",
        type=float,
        metavar="P",
        help="with --unrelated: a share P (0 to 1) of the facts stored with a note telling of "
        "a change (news in words of a slot no other fact holds)",
    )
    parser.add_argument(
        "--one-subject",
        action="store_true",
        help="diagnostic: every step under its scenario's first subject (the slot side alone)",
    )
    args = parser.parse_args(argv)
    if args.totals_only and args.show:
        parser.error("--show lists scenarios; --totals-only reports totals only")
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ferrex-fact-changes-") as tmp:
        home = Path(tmp) / "home"
        if args.unrelated is not None:
            if args.unrelated < 1:
                parser.error("--unrelated needs a positive count")
            if args.dated_share is not None and not 0.0 <= args.dated_share <= 1.0:
                parser.error("--dated-share is a share from 0 to 1")
            if args.dated and args.dated_share is not None:
                parser.error("--dated is --dated-share 1: give one of them")
            share = 1.0 if args.dated else args.dated_share or 0.0
            worded = args.worded_share or 0.0
            if not 0.0 <= worded <= 1.0:
                parser.error("--worded-share is a share from 0 to 1")

            async def unrelated() -> dict[str, Any]:
                async with server(home) as client:
                    return await run_unrelated(client, args.unrelated, args.seed, dated=share,
                                               worded=worded)  # fmt: skip

            doc = anyio.run(unrelated)
            doc["seconds"] = time.monotonic() - began
            print_unrelated(doc, args.json)
            return 0
        scenarios = load_set(args.set)
        if args.open:
            if args.totals_only:
                parser.error("--open shows every scenario; --totals-only shows none")
            scenarios = [replace(s, open=True) for s in scenarios]
        halves: list[Half] = ["tuning", "held-out"] if args.half == "both" else [args.half]
        chosen = [s for s in scenarios if s.half in halves]
        if args.limit is not None:
            chosen = chosen[: args.limit]
        if args.one_subject:
            chosen = [one_subject(s) for s in chosen]
        print(f"{len(chosen)} scenarios of {args.set.name} ({args.half}) through one ferrex "
              f"stdio server, head {head()}", file=sys.stderr)  # fmt: skip
        outcomes, seconds = anyio.run(run_scenarios, home, chosen)
    report(args, outcomes, halves, seconds)
    return 0


def report(args: argparse.Namespace, outcomes: list[Outcome], halves: list[Half],
           seconds: float) -> None:  # fmt: skip
    by_half = {h: [o for o in outcomes if o.scenario.half == h] for h in halves}
    # The tuning half is the only one shown by scenario and category, and not even it when the
    # whole set is held out.
    tuning = [] if args.totals_only else by_half.get("tuning", [])
    shown = [o for o in tuning if failing(o) and (not args.only or o.outcome == args.only)]
    if args.json:
        doc: dict[str, Any] = {"set": str(args.set), "head": head(), "seconds": seconds,
                               "halves": {}}  # fmt: skip
        for h, mine in by_half.items():
            doc["halves"][h] = totals(mine)
        if tuning:
            doc["halves"]["tuning"]["per_category"] = per_category(tuning)
            doc["halves"]["tuning"]["outcomes"] = [outcome_doc(o) for o in tuning]
        print(json.dumps(doc, indent=1))
        return
    print(
        f"# fact changes over MCP: {args.set.name}, head {head()}, {seconds:.0f} s "
        f"({seconds / max(len(outcomes), 1):.2f} s a scenario); {harness.load_line()}"
    )
    for h, mine in by_half.items():
        detailed = h == "tuning" and not args.totals_only
        print_totals(h, totals(mine), seconds * len(mine) / max(len(outcomes), 1),
                     details=detailed)  # fmt: skip
        if detailed:
            print_categories(per_category(mine))
    for o in shown[: args.show]:
        show(o)


def _dated_label(share: float) -> str:
    if share >= 1.0:
        return " (dated)"
    return f" ({share:.0%} dated)" if share > 0.0 else ""


def _worded_label(share: float) -> str:
    return f" ({share:.0%} told as a change in words)" if share > 0.0 else ""


def print_unrelated(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    print(
        f"# unrelated facts{_dated_label(doc['dated'])}{_worded_label(doc['worded'])}: "
        f"{doc['stores']} stores in "
        f"one namespace, {doc['subjects']} "
        f"subjects, {doc['predicates']} predicates, head {head()}, {doc['seconds']:.0f} s"
    )
    print(f"store statuses: {', '.join(f'{k} {v}' for k, v in sorted(doc['statuses'].items()))}")
    print(f"false flags: {doc['flagged_pairs']} flagged pairs "
          f"({doc['flags_per_100_stores']:.2f} per 100 stores; {doc['flagged_memories']} "
          f"memories named); reflect counts {doc['reflect_counts']}")  # fmt: skip
    print(
        f"false supersedes: {doc['stores_that_superseded']} stores superseded something "
        f"({doc['supersedes_per_100_stores']:.2f} per 100); refusals "
        f"{doc['refusals_per_100_stores']:.2f} per 100; `similar` notes {doc['similar_notes']}"
    )
    for line in doc["examples"]:
        print(f"  {line}")
    for line in doc["flagged_examples"]:
        print(f"  flagged: {line}")


if __name__ == "__main__":
    raise SystemExit(main())
