"""``softrank study widths``: fixed rank budgets across common-prefix block widths (``command``: the
sub-command; ``widths``: the study)."""
