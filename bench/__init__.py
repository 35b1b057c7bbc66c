"""``softrank bench NAME``: benchmarks that print ratios measured in one run (``command``: the
command and the table of benchmarks; one module per benchmark)."""
