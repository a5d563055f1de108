"""What the bare ``ferrex`` imports before it can answer ``initialize``, and the subcommands it
loads only when asked (issue #27). The end-to-end look at a live server is in
``tests/e2e/test_stdio_startup.py``; here the same promise is checked on the import graph."""

from __future__ import annotations

import json
import subprocess
import sys

import click

from ferrex.cli import COMMANDS, cli

# Everything ``ferrex`` with no subcommand imports before it serves (ferrex.cli.serve.run_server).
SERVING = ("ferrex.cli", "ferrex.cli.serve", "ferrex.server.hub", "ferrex.server.mcp_server",
           "ferrex.server.reload", "ferrex.server.mcp_stdio")  # fmt: skip
HEAVY = ("numpy", "apsw", "onnxruntime", "qdrant_edge", "tokenizers", "fastembed",
         "py_rust_stemmers", "ferrex.models", "ferrex.read", "ferrex.write", "ferrex.core",
         "ferrex.porting", "ferrex.server.service", "projections.sqlite", "projections.replay",
         "projections.qdrant_edge")  # fmt: skip


def test_serving_imports_nothing_the_tools_need_before_a_call() -> None:
    script = (
        "import importlib, json, sys\n"
        f"for name in {SERVING!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)  # fmt: skip
    modules = json.loads(done.stdout)
    heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert heavy == []


def test_every_subcommand_is_where_the_table_says() -> None:
    for name, (module, attribute) in COMMANDS.items():
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command), name
        assert command.name == name
        assert command.callback is not None
        assert command.callback.__module__ == f"ferrex.cli.{module}", attribute


def test_help_lists_every_subcommand_in_order() -> None:
    assert cli.list_commands(click.Context(cli)) == sorted(COMMANDS)
    assert cli.get_command(click.Context(cli), "no-such-command") is None
