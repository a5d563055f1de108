"""What an agent pays to use ferrex: characters and tokens of the schemas and the answers.

    python -m tools.bench_tokens [--json]

Builds the MCP server in-process over a fresh home holding a fixed set of memories (facts,
events, a procedure; the same every run), talks to it through the SDK's own client and
measures what crosses the wire:

- ``tools/list``: the five tools as compact JSON;
- a typical ``recall`` (5 results), ``stats`` and ``reflect``: the text content an agent reads
  and the structured content, each in characters and in tokens of the bundled model's
  tokenizer (a stand-in for an agent's tokenizer: the counts are deterministic, not exact);
- with the resources in place, ``ferrex://stats`` and ``ferrex://recent`` as well.

Sizes are deterministic; they are reported here and asserted as ceilings in
``tests/integration/test_mcp_lean.py``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_types import CallToolResult

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.models.choice import choose_embedding_model
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import build_server
from ferrex.server.service import Caller
from tools import harness

MEMORIES: list[dict[str, Any]] = [
    {"content": "On 2026-11-28 the nightly backup of billing-db failed because the disk on "
     "db-03 was full; Priya cleared old WAL files and reran it at 09:40 UTC.",
     "entities": ["billing-db", "db-03", "Priya"]},
    {"content": "The 2026-12-02 incident INC-4417: the search cluster lost two nodes after "
     "a kernel upgrade; we rolled back to 6.1.84 and opened a ticket with the vendor.",
     "entities": ["search", "INC-4417"]},
    {"content": "Decision 2026-12-05: api-server moves from REST polling to server-sent "
     "events for the dashboard, because polling cost 40% of its CPU.",
     "entities": ["api-server", "dashboard"]},
    {"subject": "api-server", "predicate": "uses", "object": "tokio 1.38"},
    {"subject": "billing-db", "predicate": "runs on", "object": "PostgreSQL 16.4"},
    {"subject": "search", "predicate": "owned by", "object": "team discovery"},
    {"subject": "the build", "predicate": "written in", "object": "Rust"},
    {"name": "deploy api-server", "steps": [
        "run the test suite with make check", "tag the release as vX.Y.Z",
        "push the tag; CI builds the image", "roll out with kubectl rollout restart"],
     "conditions": ["only on weekdays before 16:00"]},
    {"content": "Priya prefers design reviews on Tuesdays and written notes over meetings.",
     "entities": ["Priya"]},
    {"content": "On 2026-12-09 the billing-db backup succeeded again after moving WAL "
     "archives to the object store.", "entities": ["billing-db"]},
]  # fmt: skip

RECALL = {"query": "what happened with the billing-db backup and what does it run on?"}


def _size(text: str, count: Any) -> dict[str, int]:
    return {"chars": len(text), "tokens": int(count(text) or 0)}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def _measure(client: Client, count: Any) -> dict[str, Any]:
    tools = [
        t.model_dump(mode="json", by_alias=True, exclude_none=True)
        for t in (await client.list_tools()).tools
    ]
    out: dict[str, Any] = {"tools/list": _size(_compact(tools), count)}
    for memory in MEMORIES:
        result = await client.call_tool("store", memory)
        assert isinstance(result, CallToolResult) and not result.is_error, result.content
    for name, args in (
        ("recall", RECALL),
        ("stats", {}),
        ("stats detailed", {"detailed": True}),
        ("reflect", {}),
    ):
        tool = name.split()[0]
        extra = {"detailed": True} if name.endswith("detailed") else {}
        result = await client.call_tool(tool, {**args, **extra})
        assert isinstance(result, CallToolResult) and not result.is_error, result.content
        text = "".join(getattr(c, "text", "") for c in result.content)
        out[name] = {
            "results": len((result.structured_content or {}).get("results", [])),
            "text": _size(text, count),
            "structured": _size(_compact(result.structured_content), count),
        }
    templates = []
    try:
        listed = (await client.list_resources()).resources
        templates = [str(r.uri) for r in listed]
    except Exception:  # a server without resources
        listed = []
    for uri in templates:
        read = await client.read_resource(uri)
        text = "".join(getattr(c, "text", "") for c in read.contents)
        out[uri] = {"text": _size(text, count)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    harness.add_arguments(parser)
    opts = parser.parse_args()
    harness.begin(opts)
    with tempfile.TemporaryDirectory(prefix="ferrex-tokens-") as tmp:
        home = Path(tmp) / "home"
        embedder = Embedder(Path(tmp) / "models", choose_embedding_model("small", {}))
        count = embedder.model().count_tokens
        app = App(home=home, config=load_config(home, None), _embedder=embedder)
        hub = Hub(home, lambda: app, Caller(), flush_every=None)
        server = build_server(hub)

        async def run() -> dict[str, Any]:
            async with Client(server) as client:
                return await _measure(client, count)

        try:
            numbers = anyio.run(run)
        finally:
            hub.close()
            embedder.close()
    if opts.json:
        print(json.dumps(numbers, indent=2))
        return
    print(f"{'answer':<22} {'part':<11} {'chars':>7} {'tokens':>7}")
    for name, parts in numbers.items():
        if "chars" in parts:
            parts = {"schemas": parts}
        for part, size in parts.items():
            if isinstance(size, dict):
                print(f"{name:<22} {part:<11} {size['chars']:>7} {size['tokens']:>7}")


if __name__ == "__main__":
    main()
