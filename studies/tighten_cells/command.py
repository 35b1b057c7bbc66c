"""``softrank study tighten-cells STORE --records ID,... --out FILE.csv``: which end of a fast-path
bracket is loose, on small cells cut from stored operators, bracketed by the fast path, tightened,
and decided exactly by the oracle (``softrank.studies.tighten_cells.tighten_cells``)."""

from __future__ import annotations

from softrank.cli.args import check_count, parse_int_list, path_arg
from softrank.cli.paths import output_file
from softrank.cli.output import print_json
from softrank.errors import InputError


def configure(sub) -> None:
    p = sub.add_parser("tighten-cells", help="which end of a fast-path bracket is loose: small cells of stored "
                                             "operators, tightened and decided exactly by the oracle",
                       description=__doc__.splitlines()[0])
    p.add_argument("store", metavar="STORE", type=path_arg)
    p.add_argument("--records", required=True, help="comma-separated record ids")
    p.add_argument("--sizes", default="6,8", help="cell sizes n (default 6,8)")
    p.add_argument("--cells", type=int, default=2, help="cells per size: the leading one, then random ones (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=5.0, help="tightening time per end and cell")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds of the oracle per cell and eps")
    p.add_argument("--out", required=True, metavar="FILE.csv", type=path_arg)
    p.add_argument("--json", action="store_true", help="print one JSON object: {\"out\", \"rows\": [one per "
                                                       "record, cell and eps]} instead of one line per row")


def run(args) -> int:
    from softrank.fastpath.runner import limit_threads
    from softrank.fastpath.store.files import write_csv
    from softrank.studies.tighten_cells.tighten_cells import study

    sizes = parse_int_list(args.sizes, "sizes", minimum=1)
    check_count(args.cells, "cells")
    check_count(args.seed, "seed", minimum=0)
    for value, field in ((args.seconds, "seconds"), (args.timeout, "timeout")):
        if not 0 < value < float("inf"):
            raise InputError("arguments", field, f"must be a positive number of seconds, got {value}")
    records = [r.strip() for r in args.records.split(",") if r.strip()]
    if not records:
        raise InputError("arguments", "records", "no record id given")
    output_file(args.out)
    limit_threads()
    rows = study(args.store, records, sizes, args.cells, args.seed, seconds=args.seconds, timeout=args.timeout)
    write_csv(args.out, rows)
    if args.json:
        print_json({"out": str(args.out), "rows": rows})
        return 0
    for r in rows:
        print(r)
    return 0
