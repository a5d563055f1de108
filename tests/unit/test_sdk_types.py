"""The SDKs' types are those the server's schemas give: ``python -m tools.sdk_types`` wrote the
checked-in ones (Python's ``answers.py``, the generated part of TypeScript's ``.d.mts``), every
answer the OpenAPI document names is typed, and the names the SDKs had stay."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys

from ferrex.server.dashboard.schemas import ANSWERS
from tools import sdk_types

#: The public names of the SDKs' types before they were generated (their API: none may go).
PYTHON_NAMES = {
    "MemoryType", "Visibility", "StoreAnswer", "BatchItem", "BatchAnswer", "RecallHit",
    "RecallAnswer", "ConfirmAnswer", "ForgetAnswer", "Brief", "ListedMemory", "MemoryPage",
    "MemoryDetail", "MemoryVersion", "History", "EntityNames", "Entity", "Stats", "Reflect",
    "TagCount", "TagCounts", "ChangedMemory", "ChangeEvent",
}  # fmt: skip
TYPESCRIPT_NAMES = {
    "MemoryType", "StoreArguments", "RecallOptions", "WriteOptions", "ClientOptions", "Answer",
    "StoreAnswer", "BatchAnswer", "RecallHit", "RecallAnswer", "ConfirmAnswer", "ForgetAnswer",
    "ListOptions", "Brief", "ListedMemory", "MemoryPage", "MemoryDetail", "MemoryVersion",
    "History", "EntityNames", "Entity", "AttentionCounts", "Stats", "Reflect", "TagCounts",
    "Change", "ChangeEvent", "ChangesOptions", "ErrorDocument", "FerrexError", "Client",
}  # fmt: skip


def test_the_checked_in_sdk_types_are_generated_from_the_schemas() -> None:
    """In a fresh interpreter with a plain environment, as ``.ci/run`` would run it."""
    plain = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    done = subprocess.run(
        [sys.executable, "-m", "tools.sdk_types", "--check", "--diff"],
        cwd=sdk_types.ROOT,
        env=plain,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_changed_schema_changes_both_sdks() -> None:
    """A field added to an answer's schema is in both generated files, so the checked-in
    files would be stale (what the check above catches)."""
    document = sdk_types.published()
    changed = copy.deepcopy(document)
    store = changed["components"]["schemas"]["StoreAnswer"]
    store["properties"]["shelf_life"] = {"type": "integer", "description": "Seconds left."}
    store["required"].append("shelf_life")
    shared, requests = sdk_types.definitions(changed)
    typescript = sdk_types.typescript(shared, requests)
    python = sdk_types.python(shared)
    assert "  /** Seconds left. */\n  shelf_life: number;\n" in typescript
    assert "    #: Seconds left.\n    shelf_life: int\n" in python
    assert python != sdk_types.PY_FILE.read_text(encoding="utf-8")
    current = sdk_types.TS_FILE.read_text(encoding="utf-8")
    assert sdk_types.typescript_file(current, typescript) != current


def test_every_answer_the_document_names_is_typed() -> None:
    """A new answer schema without its SDK type fails here (the OpenAPI document itself is
    the one answer no SDK method returns)."""
    typed = set(sdk_types.ANSWERS)
    assert set(ANSWERS) - typed == {"OpenApiDocument"}


def test_the_sdks_keep_their_names() -> None:
    python = sdk_types.PY_FILE.read_text(encoding="utf-8")
    found = set(re.findall(r"^class (\w+)\(TypedDict\)", python, re.M))
    found |= set(re.findall(r"^(\w+) = Literal\[", python, re.M))
    assert found >= PYTHON_NAMES
    typescript = sdk_types.TS_FILE.read_text(encoding="utf-8")
    exported = set(re.findall(r"^export (?:interface|type|class) (\w+)", typescript, re.M))
    assert exported >= TYPESCRIPT_NAMES


def test_the_hand_written_declarations_are_kept() -> None:
    """Only the part between the markers is rewritten: the client's classes stay."""
    current = sdk_types.TS_FILE.read_text(encoding="utf-8")
    rewritten = sdk_types.typescript_file(current, sdk_types.BEGIN + "\n" + sdk_types.END)
    assert "export class Client {" in rewritten
    assert "export interface StoreAnswer" not in rewritten
