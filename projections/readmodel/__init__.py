"""The read model's parts, each with one job; ``projections.sqlite.ReadModel`` composes them."""
