"""``softrank study constructions BRACKET_CSV``: each upper construction's rank relative to the best
one (``command``: the sub-command, which also starts the held-out benchmark; ``ratios``: the table)."""
