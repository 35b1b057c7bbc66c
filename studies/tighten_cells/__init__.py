"""``softrank study tighten-cells``: which end of a fast-path bracket is loose, on small cells decided
by the oracle (``command``: the sub-command; ``tighten_cells``: the study)."""
