"""Client hooks: ferrex recalls and keeps memory at a client's lifecycle events, without the
agent calling a tool (``claude_code``, ``gemini_cli``, ``codex_cli``: each client's events and
settings files; ``command_hooks``: the settings entries and hook input/output they share;
``context``: what is injected, within a budget). The commands are ``ferrex hooks`` and
``ferrex hook``."""
