"""The write side: the :class:`~ferrex.write.writer.Writer` (every memory command, measured
here, decided by :mod:`ferrex.core.decide`, run through :mod:`ferrex.core.runner`) and the
measuring it does for the decisions (:mod:`ferrex.write.measures`).

Nothing is imported here, so that naming the package loads no model or store library."""
