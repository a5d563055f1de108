"""ferrex: a local-first, event-sourced memory server for AI agents."""

__version__ = "0.1.0"
