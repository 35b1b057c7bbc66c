"""``softrank study constructions BRACKET_CSV [--eps 0.25]``: the rank each upper construction needs
relative to the best one, per family, from the ``bracket.csv`` of a store bracketed with
``softrank bracket --mode full`` (``softrank.studies.constructions.ratios``).

``softrank study constructions --panel full --out DIR [--limit N] [--resume]``: the held-out benchmark
(``softrank.studies.heldout.heldout``): the panel's heads on sources disjoint from the main panel's,
every construction at eps 0.25, rank / validated lower end per family with 95% source-bootstrap
intervals, written to ``DIR/heldout.json``."""

from __future__ import annotations

import csv

from softrank.cli.args import check_count, max_jobs, path_arg
from softrank.cli.paths import read_text_file
from softrank.cli.output import print_json
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError


def configure(sub) -> None:
    p = sub.add_parser("constructions", help="each upper construction's rank relative to the best one, from a "
                                             "bracket.csv of softrank bracket --mode full",
                       description=__doc__.splitlines()[0])
    p.add_argument("table", metavar="BRACKET_CSV", type=path_arg, nargs="?", default=None,
                   help="bracket.csv of a store bracketed with --mode full (not with --panel)")
    p.add_argument("--eps", default="0.25", help="the tolerance, an exact rational (default 0.25)")
    p.add_argument("--panel", choices=("default", "full"), default=None,
                   help="the held-out benchmark on this panel's heads (sources disjoint from softrank run's)")
    p.add_argument("--out", default="softrank-heldout", type=path_arg, help="with --panel: output folder")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="with --panel: N operators per family")
    p.add_argument("--jobs", type=int, default=2, help="with --panel: worker processes (default 2)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="with --panel: bracket and replay on this running Dask scheduler")
    p.add_argument("--resume", action="store_true",
                   help="with --panel: continue a killed run in OUT (extraction, bracket and replay journals)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print one JSON object: {\"eps\", \"families\": {family: "
                                                       "{construction: median ratio, best_share_C, operators}}}; "
                                                       "with --panel: {\"eps\", \"sources\", \"families\": {family: "
                                                       "{operators, sources, best|C: {median, ci95}}}}")


def run(args) -> int:
    from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
    from softrank.studies.constructions.ratios import construction_ratios

    if args.panel is not None:
        return _held_out(args)
    if args.table is None:
        raise InputError("arguments", "table", "give a BRACKET_CSV, or --panel for the held-out benchmark")
    tol = Tolerance.parse(args.eps)
    rows = list(csv.DictReader(read_text_file(args.table, "table").splitlines()))
    res = construction_ratios(rows, tol)
    if args.json:
        print_json({"eps": tol.text, "families": res})
        return 0
    print(f"median rank / best construction's rank at eps {tol}")
    print("family".ljust(10) + "ops".rjust(5) + "".join(c.rjust(10) for c in ALL_CONSTRUCTIONS))
    for fam, d in res.items():
        print(fam.ljust(10) + str(d["operators"]).rjust(5) + "".join(f"{d[c]:10.2f}" for c in ALL_CONSTRUCTIONS))
        print("  best in".ljust(15) + "".join(f"{100 * d['best_share_' + c]:9.0f}%" for c in ALL_CONSTRUCTIONS))
    return 0


def _held_out(args) -> int:
    from softrank.studies.heldout.command import held_out

    if args.table is not None:
        raise InputError("arguments", "panel", "--panel runs its own extraction; give no BRACKET_CSV")
    check_count(args.limit, "limit", maximum=10_000_000)
    check_count(args.jobs, "jobs", maximum=max_jobs())
    return held_out(args)
