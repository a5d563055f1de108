"""Trials: scripts that reproduce an issue's conditions on real processes, bounded in count and
time, and print what they counted (run against the old code and the new)."""
