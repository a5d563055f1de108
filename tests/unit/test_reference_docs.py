"""The generated references (docs/reference/) match the code: every command's --help and every
configuration key, as ``python -m tools.reference_docs`` writes them."""

from __future__ import annotations

import os
import subprocess
import sys

from tools import reference_docs


def test_the_generated_references_are_up_to_date() -> None:
    """Checked in a fresh interpreter with a plain environment, as a user's ``ferrex --help``
    prints it: in the suite's own process something an earlier test left behind once changed
    one command's help (a full CI run saw ``docs/reference/cli.md`` stale where the command
    alone did not; not found yet: ``--diff`` prints what differs)."""
    plain = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    done = subprocess.run(
        [sys.executable, "-m", "tools.reference_docs", "--check", "--diff"],
        cwd=reference_docs.ROOT,
        env=plain,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_key_and_command_is_in_them() -> None:
    from ferrex.cli import COMMANDS
    from ferrex.config import KEYS

    cli = reference_docs.cli_reference()
    config = reference_docs.configuration_reference()
    assert all(f"## `ferrex {name}`" in cli for name in COMMANDS)
    assert all(f"**`{key.name.rpartition('.')[2]}`**" in config for key in KEYS)
