"""The prompt hook's lean path: which command lines it takes, what it loads, and the
constants it shares with modules it does not load."""

from __future__ import annotations

import subprocess
import sys

from ferrex.hooks.context import PROMPT_HEAD, WRAP_TOKENS
from ferrex.hooks.lean import prompt_options
from ferrex.rules.conversation import CLOSE, OPEN


def test_only_hook_prompt_with_known_options_takes_the_lean_path() -> None:
    options = prompt_options(["--home", "/h", "--agent-id=cc", "--default-visibility",
                              "shared", "--namespace", "ns", "hook", "prompt"])  # fmt: skip
    assert options == {"home": "/h", "store.agent_id": "cc",
                       "store.default_visibility": "shared",
                       "store.default_namespace": "ns"}  # fmt: skip
    assert prompt_options(["hook", "prompt"]) == {}
    # Gemini CLI's hook names its client after the subcommand, as install writes it
    assert prompt_options(["--home", "/h", "hook", "prompt", "--client", "gemini-cli"]) == {
        "home": "/h", "client": "gemini-cli"}  # fmt: skip
    for argv in (["hook", "prompt", "--client", "vim"], ["hook", "prompt", "--client"],
                 ["hook", "capture", "--client", "gemini-cli"]):  # fmt: skip
        assert prompt_options(argv) is None, argv
    for argv in (["hook", "capture"], ["--verbose", "hook", "prompt"], ["--home", "hook",
                 "prompt"][:2], ["--qdrant-url", "x", "hook", "prompt"], ["prompt"]):  # fmt: skip
        assert prompt_options(argv) is None, argv


def test_the_lean_path_loads_none_of_the_stores_code() -> None:
    """What the lean path imports to answer (the entry, the configuration, the wire format,
    the typed request, the context): no click, no composition root, no hub, no msgspec or
    journal backend, no memory rules (``memory_input``, the secrets), no model runtime or
    tokenizer."""
    code = (
        "import sys\n"
        "import ferrex.entry, ferrex.hooks.lean, ferrex.config, ferrex.server.frames\n"
        "import ferrex.hooks.context, ferrex.home_safety, ferrex.server.tool_calls\n"
        "from ferrex.hooks.lean import prompt_request, context_request\n"
        "context_request(prompt_request('Which branch does billing deploy from?'))\n"
        "from ferrex.config import load\n"
        "from pathlib import Path\n"
        "load(Path('/nonexistent-home'), None, flags={'store.agent_id': 'a', "
        "'store.default_visibility': 'shared'})\n"
        "heavy = ['click', 'ferrex.app', 'ferrex.server.hub', 'msgspec', 'journal.log',"
        " 'journal.events', 'onnxruntime', 'tokenizers', 'numpy', 'apsw', 'ferrex.cli',"
        " 'ferrex.rules.memory_input', 'ferrex.rules.secrets', 'projections.vectors']\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    assert done.stdout.strip() == ""


def test_the_wrapping_fits_its_reserved_tokens() -> None:
    from ferrex.cli.hooks import _token_count

    count = _token_count()
    assert count(f"{OPEN}\n{PROMPT_HEAD}\n") + count(f"\n{CLOSE}") <= WRAP_TOKENS


def test_the_configuration_checks_visibility_against_the_rule() -> None:
    from ferrex.config import _vocabulary
    from ferrex.rules.memory_input import VISIBILITIES

    assert _vocabulary("store.default_visibility") == VISIBILITIES


def test_journal_names_load_on_first_use_and_verify_stays_the_function() -> None:
    """The package loads its names lazily; ``journal.verify`` is still the function after
    the submodule of that name loads (as the eager package had it)."""
    code = (
        "import sys, journal\n"
        "assert 'journal.log' not in sys.modules and 'msgspec' not in sys.modules\n"
        "import journal.verify\n"
        "from journal import Journal, verify\n"
        "assert journal.verify is verify and verify.__module__ == 'journal.verify'\n"
        "assert Journal.__module__ == 'journal.log' and journal.FORMAT_VERSION == 2\n"
    )
    subprocess.run([sys.executable, "-c", code], timeout=120, check=True)


def test_the_prompt_hook_asks_with_the_typed_request_the_owner_decodes() -> None:
    """Both paths build the same typed recalls; the lean path sends them as a peer's frame
    (``tool_calls.encode``), which the owner's port decodes back to the same request."""
    from ferrex.hooks.context import PROMPT_CANDIDATES, RECALL_TOKENS
    from ferrex.hooks.lean import context_request, prompt_request
    from ferrex.server.tool_calls import Recall, RecallArgs, decode, encode

    assert prompt_request("  ") is None
    judged = prompt_request("Which branch does billing deploy from?")
    assert judged == Recall(
        args=RecallArgs(query="Which branch does billing deploy from?",
                        limit=PROMPT_CANDIDATES, min_relevance=0, explain=True),
        count_access=False,
    )  # fmt: skip
    assert judged is not None
    injected = context_request(judged)
    assert injected == Recall(
        args=RecallArgs(query=judged.args.query, limit=PROMPT_CANDIDATES, min_relevance=0,
                        max_tokens=RECALL_TOKENS)
    )  # fmt: skip
    for request in (judged, injected):
        assert decode(request.tool, encode(request)) == request
