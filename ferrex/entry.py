"""The ``ferrex`` console script: the prompt hook's lean path when the command line is
``ferrex [OPTIONS] hook prompt`` and a server answers (:mod:`ferrex.hooks.lean`), else the
command line interface (:mod:`ferrex.cli`). Imports nothing heavy itself."""

from __future__ import annotations

import io
import os
import sys


def main() -> None:
    options = _lean_options(sys.argv[1:])
    if options is not None:
        from ferrex.hooks.lean import prompt

        text = sys.stdin.read()
        if prompt(options, text):
            sys.stdout.flush()
            os._exit(0)  # as the full hook does: nothing left to tear down
        sys.stdin = io.StringIO(text)  # the full command reads the same input
    from ferrex.cli import main as cli_main

    cli_main()


def _lean_options(argv: list[str]) -> dict[str, str] | None:
    if "prompt" not in argv[-3:] or os.environ.get("FERREX_HOOK_LEAN") == "0":
        return None  # (``hook prompt``, maybe ``--client NAME`` after it: read exactly there)
    from ferrex.hooks.lean import prompt_options

    return prompt_options(argv)
