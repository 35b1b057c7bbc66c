"""``softrank study STUDY``: one module per study, each with ``configure(sub)`` (its subparser) and
``run(args)``.

- ``widths``: fixed rank budgets across common-prefix block widths (``widths.py``);
- ``kappa``: the theorem's own size against the validated rank bracket (``kappa.py``);
- ``constructions``: each upper construction's rank relative to the best, from a ``bracket.csv``
  of ``softrank bracket --mode full`` (``constructions.py``);
- ``tighten-cells``: which end of a fast-path bracket is loose, on small cells decided by the
  oracle (``tighten_cells.py``).
"""

from __future__ import annotations

import importlib

from softrank.cli.study.kappa import MAX_BOOTSTRAP, _bootstrap  # noqa: F401  (re-exported)

STUDIES = {"widths": "softrank.cli.study.widths", "kappa": "softrank.cli.study.kappa",
           "constructions": "softrank.cli.study.constructions", "tighten-cells": "softrank.cli.study.tighten_cells"}


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    for module in STUDIES.values():
        importlib.import_module(module).configure(sub)


def run(args) -> int:
    return importlib.import_module(STUDIES[args.study]).run(args)
