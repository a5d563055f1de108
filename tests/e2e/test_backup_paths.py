"""A home built by each ordinary path backs up whole, and the restored home backs up to the
same file again.

The home: stores of every kind over MCP (a real server process on stdio: facts, a fact
possibly in conflict with another, one superseded under an abbreviated subject, a
multi-valued fact, a procedure, a long episode with ``split_long``, importance, a pin, a time
to live, a private memory, a flag settled by ``confirm differs_from``), a ChatGPT export and
a memory-server graph imported, the chat consolidated, entities merged, split and said to
differ, a memory forgotten. ``export jsonl`` → ``import`` into a fresh home → the two read
models equal row by row (but for what ``tests/rows.NOT_RESTORED`` names) → ``export jsonl``
of the restored home writes the same lines (but for ``ferrex.porting.dump.NOT_RESTORED``:
the header's journal position). Then the restored home works
as the first: a fold is undone, and the chat export imported again stores nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from click.testing import CliRunner

from ferrex.cli import cli
from journal import Journal, MemoryBody, MemoryStored
from tests.chat_exports import gpt_linear
from tests.dumps import comparable
from tests.e2e.mcp_helpers import call, stdio_client
from tests.rows import home_rows

LONG = " ".join(
    f"Paragraph {n}: the incident review covered the failover of the payments database, "
    f"the replication lag on replica {n}, and the alert thresholds we agreed to change."
    for n in range(20)
)

TRIP = [
    ("user", "I am flying to Lisbon on 12 May and staying in Alfama."),
    ("assistant", "Alfama is hilly: pack comfortable shoes and a light rain jacket."),
    ("user", "We booked the fado dinner at Clube de Fado for the 13th."),
    ("assistant", "Clube de Fado is near the cathedral; book a table by the stage."),
]

GRAPH = [
    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Graduated from MIT in 2019"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "John_Smith", "to": "Acme Corp", "relationType": "works_at"},
]  # fmt: skip


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def ok(home: Path, *args: str) -> Any:
    code, out, err = run(home, *args, "--json")
    assert code == 0, (args, out, err)
    return json.loads(out)


def mcp_stores(home: Path) -> dict[str, str]:
    """Stores of every kind over MCP; the ids the test needs by name."""
    ids: dict[str, str] = {}

    async def main() -> None:
        async with stdio_client(home) as client:

            async def store(**args: Any) -> dict[str, Any]:
                return await call(client, "store", args)

            def fact(subject: str, predicate: str, obj: str, **extra: Any) -> Any:
                return store(subject=subject, predicate=predicate, object=obj, **extra)

            atlas = await fact("billing service", "is owned by", "team Atlas")
            nova = await fact("billing", "owned by", "team Nova")
            assert nova["possible_conflict"] == [atlas["id"]]
            dba = await fact("billing database", "owned by", "team DBA")
            assert dba["possible_conflict"] == [nova["id"]]
            settled = await call(client, "confirm", {"ids": [dba["id"]],
                                                     "differs_from": nova["id"]})  # fmt: skip
            assert settled["differ"] == [[dba["id"], nova["id"]]], settled
            old = await fact("payments repository", "deployed to", "eu-west-1")
            new = await fact("payments repo", "deployed to", "eu-central-1",
                             valid_from="2026-03-01")  # fmt: skip
            assert new["superseded"] == [old["id"]]
            assert new["entities"][0]["match"] == "abbreviation"
            await fact("api server", "depends on", "tokio", multi_valued=True)
            await fact("api server", "depends on", "serde", multi_valued=True)
            await store(name="deploy the api", steps=["build", "push", "roll out"],
                        conditions=["on call"], importance=0.8)  # fmt: skip
            long = await store(content=LONG, split_long=True, source="review-7")
            pinned = await store(content="The prod cluster is called orca.", pinned=True)
            scratch = await store(content="Scratch: the build cache is warm.", ttl="7d")
            gone = await store(content="The old pager rota was weekly.")
            ids.update(long=long["id"], pinned=pinned["id"], scratch=scratch["id"],
                       gone=gone["id"], nova=nova["id"], dba=dba["id"])  # fmt: skip

    anyio.run(main)
    return ids


def backed_up_whole(home: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Export ``home``, import the dump into a fresh home, and check the fresh home holds the
    same rows and backs up the same again; (the fresh home, the dump)."""
    before = home_rows(home)
    dump = tmp_path / "backup.jsonl"
    ok(home, "export", "jsonl", str(dump))
    fresh = tmp_path / "restored"
    doc = ok(fresh, "import", str(dump))
    assert {line["status"] for line in doc["lines"]} == {"stored"}, doc["lines"]
    assert home_rows(fresh) == before
    again = tmp_path / "again.jsonl"
    ok(fresh, "export", "jsonl", str(again))
    assert comparable(again) == comparable(dump)
    return fresh, dump


def test_every_ordinary_path_backs_up_whole_and_backs_up_the_same_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = mcp_stores(home)
    chats = tmp_path / "conversations.json"
    chats.write_text(json.dumps([gpt_linear("conv-trip", "Lisbon trip", TRIP)]))
    assert ok(home, "import", str(chats))["counts"] == {"stored": 4}
    ok(home, "store", "--content", "Carol prefers morning standups.", "--agent-id", "agent-7",
       "--visibility", "private", "--entity", "Carol")  # fmt: skip
    graph = tmp_path / "memory.jsonl"
    graph.write_text("".join(json.dumps(line) + "\n" for line in GRAPH))
    assert ok(home, "import", str(graph))["counts"] == {"stored": 6}
    folded = ok(home, "consolidate", "--older-than", "0")["summaries"]
    (summary,) = [s for s in folded if "Lisbon trip" in s["group"]]
    ok(home, "entity", "merge", "Anthropic", "Acme Corp")
    ok(home, "entity", "split", "payments repository", "payments repo")
    ok(home, "entity", "differ", "John_Smith", "api server")
    ok(home, "forget", ids["gone"])
    before = home_rows(home)
    assert before["folds"] and before["possible_conflicts"] and before["entity_differs"]
    assert before["fact_differs"], "the confirm's differs_from is a pair a backup keeps"
    assert {(c["memory_id"], c["other_id"]) for c in before["possible_conflicts"]} == {
        (ids["nova"], next(m["memory_id"] for m in before["memories"]
                           if m["object"] == "team Atlas"))
    }, "the flag the confirm settled is gone, the other stays"  # fmt: skip
    marked = {m["memory_id"]: m for m in before["memories"]}
    assert marked[ids["pinned"]]["pinned"] and marked[ids["scratch"]]["expires_at"]
    assert sum(1 for m in before["memories"] if m["import_key"]) == 4, "the chat's keys"

    fresh, _ = backed_up_whole(home, tmp_path)

    # the restored home works as the first: the chat is imported already, and its fold undone
    assert ok(fresh, "import", str(chats))["counts"] == {"skipped": 4}
    code, out, err = run(fresh, "consolidate", "--undo", summary["summary_id"])
    assert code == 0 and f"{len(summary['memory_ids'])} memories back in recall" in out, err
    found = ok(fresh, "recall", "where is the fado dinner booked")["results"]
    assert found[0]["content"] == "user: We booked the fado dinner at Clube de Fado for the 13th."


def test_a_home_restored_long_after_its_stores_backs_up_the_same(tmp_path: Path) -> None:
    """The start of a memory (given, or only when it was learned) is said by the dump whatever
    ``created_at`` is: format 2 wrote ``valid_from_given`` only where ``created_at`` would
    misread it, so a home restored a minute or more after its stores dumped lines its first
    dump did not have."""
    home = tmp_path / "home"
    learned = datetime(2026, 1, 1, 9, 0, 30, tzinfo=UTC)
    with Journal.open(home / "journal", clock=lambda: learned) as journal:
        journal.append_batch([[
            MemoryStored(memory_id="mem_01KUNDATED0000000000000000", namespace="default",
                         memory_type="episodic", t_valid=learned - timedelta(seconds=20),
                         valid_from_given=False,
                         body=MemoryBody(content="The standup moved to 9:30.")),
            MemoryStored(memory_id="mem_01KGIVEN000000000000000000", namespace="default",
                         memory_type="episodic", t_valid=learned - timedelta(seconds=10),
                         valid_from_given=True,
                         body=MemoryBody(content="The release went out at 9:00.")),
        ]])  # fmt: skip
    backed_up_whole(home, tmp_path)


def test_an_entity_merged_then_split_off_again_backs_up_whole(tmp_path: Path) -> None:
    """User trial: "invoicer" merged into "billing service", then split off again (a new
    entity takes the spelling; the merged one keeps its id, merged, with no spelling). The
    restored home lost the merged entity's line (its name matched the split-off entity, so
    the line was skipped as already held); restored with its spelling, it would have made
    "invoicer" name the billing service again. Now the restore journals the history as it
    happened (created, merged, split) and both homes are the same, row by row."""
    home = tmp_path / "home"
    ok(home, "store", "--subject", "billing service", "--predicate", "runs on",
       "--object", "kubernetes")  # fmt: skip
    ok(home, "store", "--subject", "invoicer", "--predicate", "owned by",
       "--object", "platform team")  # fmt: skip
    merged = ok(home, "entity", "merge", "billing service", "invoicer")
    ok(home, "entity", "split", "billing service", "invoicer")
    before = home_rows(home)
    assert any(e["merged_into"] for e in before["entities"]), "the merged entity stays"

    fresh, dump = backed_up_whole(home, tmp_path)

    # Importing it again, into either home, adds nothing; "invoicer" is its own entity.
    for target in (fresh, home):
        assert {line["status"] for line in ok(target, "import", str(dump))["lines"]} == {"skipped"}
    assert home_rows(fresh) == before
    for target in (home, fresh):
        stored = ok(target, "store", "--subject", "invoicer", "--predicate", "written in",
                    "--object", "Go")  # fmt: skip
        (entity,) = stored["entities"]
        assert entity["entity_id"] != merged["entity"], stored
