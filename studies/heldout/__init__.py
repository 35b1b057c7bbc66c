"""The held-out construction benchmark, ``softrank study constructions --panel P`` (``command``: its
steps and printout; ``heldout``: sources, per-operator ratios, bootstrap intervals)."""
