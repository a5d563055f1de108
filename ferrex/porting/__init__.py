"""Getting memory in and out of ferrex: the git audit export, JSON-lines dumps, imports.

- :mod:`ferrex.porting.records`: one journal record as one canonical JSON line, and the
  layout of an audit export (which file holds which positions, the resume state).
- :mod:`ferrex.porting.git`: git plumbing (deterministic git runs, a repository, a
  ``git fast-import`` stream).
- :mod:`ferrex.porting.gitexport`: the audit export itself, written with one
  ``git fast-import``.
- :mod:`ferrex.porting.gitverify`: an export checked against the journal.
- :mod:`ferrex.porting.dump`: the portable dump of live memories, both directions.
- :mod:`ferrex.porting.restore`: re-importing a dump exactly (ids and times kept).
- :mod:`ferrex.porting.memory_server`: the reference MCP memory server's graph file.
"""
