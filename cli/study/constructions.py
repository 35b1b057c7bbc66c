"""``softrank study constructions BRACKET_CSV [--eps 0.25]``: the rank each upper construction needs
relative to the best one, per family, from the ``bracket.csv`` of a store bracketed with
``softrank bracket --mode full`` (``softrank.fastpath.studies.constructions``)."""

from __future__ import annotations

import csv

from softrank.cli.args import parse_tolerance, path_arg
from softrank.cli.paths import read_text_file
from softrank.cli.summaries import json_text


def configure(sub) -> None:
    p = sub.add_parser("constructions", help="each upper construction's rank relative to the best one, from a "
                                             "bracket.csv of softrank bracket --mode full",
                       description=__doc__.splitlines()[0])
    p.add_argument("table", metavar="BRACKET_CSV", type=path_arg, help="bracket.csv of a store bracketed with --mode full")
    p.add_argument("--eps", default="0.25", help="the tolerance, an exact rational (default 0.25)")
    p.add_argument("--json", action="store_true", help="print one JSON object: {\"eps\", \"families\": {family: "
                                                       "{construction: median ratio, best_share_C, operators}}}")


def run(args) -> int:
    from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
    from softrank.fastpath.studies.constructions import construction_ratios

    tol = parse_tolerance(args.eps)
    rows = list(csv.DictReader(read_text_file(args.table, "table").splitlines()))
    res = construction_ratios(rows, tol)
    if args.json:
        print(json_text({"eps": tol.text, "families": res}))
        return 0
    print(f"median rank / best construction's rank at eps {tol}")
    print("family".ljust(10) + "ops".rjust(5) + "".join(c.rjust(10) for c in ALL_CONSTRUCTIONS))
    for fam, d in res.items():
        print(fam.ljust(10) + str(d["operators"]).rjust(5) + "".join(f"{d[c]:10.2f}" for c in ALL_CONSTRUCTIONS))
        print("  best in".ljust(15) + "".join(f"{100 * d['best_share_' + c]:9.0f}%" for c in ALL_CONSTRUCTIONS))
    return 0
