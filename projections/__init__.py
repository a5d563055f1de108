"""Projectors: turn journal events into the SQLite read model and Qdrant points.

Imports ``journal`` only (DESIGN.md section 1). Built by later issues.
"""
