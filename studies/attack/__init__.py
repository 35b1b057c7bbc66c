"""``softrank attack STORE``: try to beat every validated lower end of a store (``command``: the
command; ``attack``: the search against one record)."""
