"""The generated references (docs/reference/) match the code: every command's --help and every
configuration key, as ``python -m tools.reference_docs`` writes them."""

from __future__ import annotations

from tools import reference_docs


def test_the_generated_references_are_up_to_date() -> None:
    stale = [str(path.relative_to(reference_docs.ROOT)) for path in reference_docs.stale()]
    assert not stale, f"run `python -m tools.reference_docs` and commit: {stale}"


def test_every_key_and_command_is_in_them() -> None:
    from ferrex.cli import COMMANDS
    from ferrex.config import KEYS

    cli = reference_docs.cli_reference()
    config = reference_docs.configuration_reference()
    assert all(f"## `ferrex {name}`" in cli for name in COMMANDS)
    assert all(f"**`{key.name.rpartition('.')[2]}`**" in config for key in KEYS)
