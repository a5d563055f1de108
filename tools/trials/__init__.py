"""Trials: scripts that run a scenario many times on real processes and report counts."""
