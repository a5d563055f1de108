"""The golden journal of format v1: the commands it holds and how it was written.

``tests/golden/journal-v1/`` is frozen: it was written by the format 1 encoder, which no
longer exists (records of format 2 carry their version, see ``journal.record``). The test
proves every later ferrex still reads it. The same commands, written by today's encoder, are
the golden journal of the current format (``tests.golden.journal_v2``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from journal import (
    Access,
    EntityAliasAdded,
    EntityCreated,
    Event,
    MemoriesAccessed,
    MemoriesForgotten,
    MemoriesValidated,
    MemoryBody,
    MemoryStored,
    MemorySuperseded,
)

DIRECTORY = Path(__file__).parent / "journal-v1"
T0 = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)


def commands() -> list[list[Event]]:
    return [
        [
            EntityCreated(
                entity_id="ent_api", namespace="acme", name="api-server", normalized="api server"
            ),
            MemoryStored(
                memory_id="mem_01",
                namespace="acme",
                memory_type="semantic",
                t_valid=T0,
                confidence=0.9,
                entity_ids=("ent_api",),
                agent_id="claude-code",
                body=MemoryBody(
                    subject="api-server",
                    predicate="uses",
                    object="tokio 1.36",
                    predicate_normalized="depends_on",
                    source="Cargo.toml",
                ),
            ),
        ],
        [
            MemoryStored(
                memory_id="mem_02",
                namespace="acme",
                memory_type="semantic",
                t_valid=T0 + timedelta(days=30),
                entity_ids=("ent_api",),
                supersedes="mem_01",
                body=MemoryBody(
                    subject="api-server",
                    predicate="depends-on",
                    object="tokio 1.38",
                    predicate_normalized="depends_on",
                ),
            ),
            MemorySuperseded(
                memory_id="mem_01",
                namespace="acme",
                t_invalid=T0 + timedelta(days=30),
                superseded_by="mem_02",
                reason="conflict",
            ),
        ],
        [
            MemoryStored(
                memory_id="mem_03",
                namespace="acme",
                memory_type="procedural",
                t_valid=T0,
                procedure_version=2,
                visibility="private",
                body=MemoryBody(
                    procedure_name="deploy api-server",
                    conditions=("main is green",),
                    steps=("cargo build --release", "run migrations", "roll pods"),
                    context={"ticket": "INC-90312", "attempts": 2, "dry_run": False},
                ),
            ),
            EntityAliasAdded(
                entity_id="ent_api",
                namespace="acme",
                alias="API Server",
                normalized="api server",
                match="normalized",
                score=1.0,
            ),
        ],
        [MemoriesValidated(memory_ids=("mem_02",), at=T0 + timedelta(days=31), source="agent")],
        [MemoriesAccessed(accesses=(Access("mem_02", T0 + timedelta(days=32), 3),))],
        [MemoriesForgotten(memory_ids=("mem_03",), namespace="acme", reason="request")],
    ]


def salt(n: int) -> bytes:
    return bytes(range(n))
