"""``softrank study STUDY``: the dispatch to each study's own command, ``softrank.studies.<study>.command``
with ``configure(sub)`` (its subparser) and ``run(args)``.

- ``widths``: fixed rank budgets across common-prefix block widths (``studies/widths/``);
- ``kappa``: the theorem's own size against the validated rank bracket (``studies/kappa/``);
- ``constructions``: each upper construction's rank relative to the best, from a ``bracket.csv``
  of ``softrank bracket --mode full`` (``studies/constructions/``; with ``--panel``, the held-out
  benchmark of ``studies/heldout/``);
- ``tighten-cells``: which end of a fast-path bracket is loose, on small cells decided by the
  oracle (``studies/tighten_cells/``);
- ``predictors``: does a head's geometry predict its validated rank bracket? (``studies/predictors/``,
  under the frozen protocol ``docs/predictors-protocol-2.md``).
"""

from __future__ import annotations

import importlib

from softrank.studies.kappa.command import MAX_BOOTSTRAP, _bootstrap  # noqa: F401  (re-exported)

STUDIES = {"widths": "softrank.studies.widths.command", "kappa": "softrank.studies.kappa.command",
           "constructions": "softrank.studies.constructions.command",
           "tighten-cells": "softrank.studies.tighten_cells.command",
           "predictors": "softrank.studies.predictors.command"}


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    for module in STUDIES.values():
        importlib.import_module(module).configure(sub)


def run(args) -> int:
    return importlib.import_module(STUDIES[args.study]).run(args)
