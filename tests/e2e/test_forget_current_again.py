"""Forgetting the value that replaced another makes the older one current again.

A user trial stored a fact, then a newer value of it, then forgot the newer one (a mistake):
the older fact stayed superseded by an id that no longer existed, and recall had no current
value. Now the forget's event says which memory is current again (``current_again``), so the
read model, the vectors, a replay and the dump agree, and the answer says so. A real server
on stdio, the SDK's client, the bundled model; and the ``ferrex forget`` command.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from tests.e2e.mcp_helpers import call, ferrex, stdio_client, store_fact


def _hit(doc: dict[str, Any], memory_id: str) -> dict[str, Any] | None:
    return next((r for r in doc["results"] if r["id"] == memory_id), None)


def _export(home: Path) -> list[str]:
    done = ferrex(home, "export", "jsonl", "-")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_forgetting_the_newer_value_over_mcp_makes_the_older_current(tmp_path: Path) -> None:
    home = tmp_path / "home"
    query = {"query": "what does the auth gateway run on", "types": ["semantic"]}

    async def main() -> tuple[str, str, str]:
        async with stdio_client(home) as client:
            older = await store_fact(client, "auth gateway", "runs on", "k8s-node-07")
            newer = await store_fact(
                client, "auth gateway", "runs on", "k8s-node-12", supersedes=older["id"]
            )
            assert newer["superseded"] == [older["id"]], newer
            stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")  # the newer one holds
            before = await call(client, "recall", {**query, "as_of": stamp})
            assert _hit(before, newer["id"]) is not None

            gone = await call(client, "forget", {"ids": [newer["id"]]})
            assert gone["forgotten"] == [newer["id"]]
            (again,) = gone["current_again"]
            assert again["id"] == older["id"] and again["replaced_by"] == newer["id"]
            assert again["note"].startswith('"auth gateway runs on k8s-node-07"')
            assert "is current again" in again["note"]

            found = await call(client, "recall", query)
            hit = _hit(found, older["id"])
            assert hit is not None and not hit.get("superseded_by"), found
            assert _hit(found, newer["id"]) is None
            # As of when the newer value held, the older one is what holds now:
            # the newer one is forgotten, the older was never really replaced.
            then = await call(client, "recall", {**query, "as_of": stamp})
            assert _hit(then, older["id"]) is not None and _hit(then, newer["id"]) is None

            # Forgetting an id again revives nothing more: it is not found.
            twice = await call(client, "forget", {"ids": [newer["id"]]})
            assert twice["not_found"] == [newer["id"]] and "current_again" not in twice
            return older["id"], newer["id"], json.dumps(hit)

    older_id, _, _ = anyio.run(main)

    # The read model and the vectors agree with the journal; a replay gives the same state.
    done = ferrex(home, "reconcile", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["clean"], done.stdout
    exported = _export(home)
    (line,) = [json.loads(x) for x in exported if older_id in x and '"type":"semantic"' in x]
    assert "t_invalid" not in line and "superseded_by" not in line
    done = ferrex(home, "replay")
    assert done.returncode == 0, done.stderr
    assert _export(home) == exported
    done = ferrex(home, "reconcile", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["clean"], done.stdout


def test_ferrex_forget_says_the_older_value_is_current_again(tmp_path: Path) -> None:
    home = tmp_path / "home"

    def store(obj: str, *replacing: str) -> dict[str, Any]:
        done = ferrex(home, "store", "--subject", "billing-api", "--predicate", "deploys to",
                      "--object", obj, *replacing, "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    older = store("eu-west-1")
    newer = store("eu-central-1", "--supersedes", older["id"])
    assert newer["superseded"] == [older["id"]], newer
    done = ferrex(home, "forget", newer["id"])
    assert done.returncode == 0, done.stderr
    assert f"forgot {newer['id']}" in done.stdout
    assert f'"billing-api deploys to eu-west-1" ({older["id"]}) is current again' in done.stdout
    done = ferrex(home, "recall", "where does billing-api deploy to", "--json")
    hit = _hit(json.loads(done.stdout), older["id"])
    assert hit is not None and not hit.get("superseded_by")

    # Forgetting a value and the one it replaced together (for privacy, say) leaves the
    # slot empty: nothing is current again.
    third = store("us-east-2", "--supersedes", older["id"])
    assert third["superseded"] == [older["id"]], third
    done = ferrex(home, "forget", third["id"], older["id"], "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert sorted(doc["forgotten"]) == sorted([third["id"], older["id"]])
    assert "current_again" not in doc
    done = ferrex(home, "recall", "where does billing-api deploy to", "--json")
    assert not [r for r in json.loads(done.stdout)["results"] if r.get("subject") == "billing-api"]


def test_forgetting_a_newer_value_under_another_spelling_makes_the_older_current(
    tmp_path: Path,
) -> None:
    """The newer value was stored under another spelling of the subject and set to replace
    the older one with ``confirm``; forgetting it makes the older one current again all the
    same (a user trial found the slot left empty)."""
    home = tmp_path / "home"

    async def main() -> None:
        async with stdio_client(home) as client:
            older = await store_fact(client, "invoice service", "database", "MySQL 5.7")
            newer = await store_fact(client, "the invoice service", "uses database",
                                     "MySQL 8.0")  # fmt: skip
            await call(client, "confirm", {"ids": [newer["id"]], "supersedes": older["id"]})
            gone = await call(client, "forget", {"ids": [newer["id"]]})
            (again,) = gone["current_again"]
            assert again["id"] == older["id"] and again["replaced_by"] == newer["id"]
            found = await call(client, "recall", {"query": "invoice service database",
                                                  "types": ["semantic"]})  # fmt: skip
            hit = _hit(found, older["id"])
            assert hit is not None and not hit.get("superseded_by"), found

    anyio.run(main)
