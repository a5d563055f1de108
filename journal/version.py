"""The record format version, alone so that a process can name it without loading the
journal's code (a hub peer says it in its hello, :mod:`ferrex.server.frames`)."""

FORMAT_VERSION = 2
"""The record format this code writes, and the newest it understands. 1: the payload without
a version; 2: the version as the payload's fourth element. (The segment file header has its
own version, ``journal.segment.FORMAT_VERSION``, unchanged at 1.)"""
