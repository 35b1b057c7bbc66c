"""``softrank study kappa``: does the theorem's own size track the validated rank bracket?
(``command``: the sub-command; ``kappa_study``: the study over a store; ``kappa_operator``: one
operator; ``kappa_full``: the full-rank kappa(C) bracket; ``kappa_corr``: correlations and
bootstrap).  The SDP and the records it shares live in ``softrank.studies.theorem``."""
