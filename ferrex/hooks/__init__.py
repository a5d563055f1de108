"""Client hooks: ferrex recalls and keeps memory at a client's lifecycle events, without the
agent calling a tool (``claude_code``: the settings entries and hook input/output; ``context``:
what is injected, within a budget). The commands are ``ferrex hooks`` and ``ferrex hook``."""
