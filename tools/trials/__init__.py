"""Trials: scripts that reproduce an issue's conditions, bounded in count and time, and print what
they measured (run against the old code and the new)."""
