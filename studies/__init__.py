"""The studies: one folder per study, each holding its computation and its command (``configure``
and ``run``, which the console command in ``softrank.cli`` dispatches to).  Untrusted: every
claim a study reports as proved or validated comes from the trusted core.

- ``widths``         ``softrank study widths``: fixed rank budgets across block widths;
- ``constructions``  ``softrank study constructions``: each upper construction's rank against the best;
- ``heldout``        ``softrank study constructions --panel P``: the held-out construction benchmark;
- ``tighten_cells``  ``softrank study tighten-cells``: which end of a bracket is loose, on small cells;
- ``kappa``          ``softrank study kappa``: the theorem's own size against the validated rank bracket;
- ``theorem``        ``softrank theorem ...`` and ``softrank kappa``: sanity checks of the theory;
- ``attack``         ``softrank attack``: try to beat every validated lower end of a store.

Imports go one way: a study may import the front ends' shared helpers (``softrank.cli``), the
producer (``softrank.fastpath``), the search, the advisors and the trusted core; none of those
imports a study.
"""
