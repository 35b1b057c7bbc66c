"""``softrank families grid|gauge``: exact closure of the grid and gauge families (docs/families.md;
proofs/family_grid.md, proofs/family_gauge.md).

    softrank families grid --r 2 --L 3 --eps 1/4 --json
    softrank families gauge --beta 1 --t 2 --json

Bad arguments (L < 2, r < 1, eps outside (0, 1), beta <= 0, a non-rational number) raise
``InputError``: one line on stderr, exit code 2.  Exit 0 when the closure is proved, 1 otherwise.
"""

from __future__ import annotations

import time

from softrank.cli.args import check_count
from softrank.cli.output import print_json
from softrank.exact.rational import parse_rational
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError
from softrank.oracle.families import close_gauge_family, close_grid_family

MAX_GRID_POINTS = 200_000  # as oracle.families checks it
MAX_GRID_R = 17  # 2^18 > MAX_GRID_POINTS: a larger r is refused without computing L^r


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="family", metavar="FAMILY", required=True)
    g = sub.add_parser("grid", help="grid family {0..L-1}^r at tolerance eps (exact rationals)")
    g.add_argument("--r", type=int, required=True, help="dimension r >= 1")
    g.add_argument("--L", type=int, required=True, help="side length L >= 2")
    g.add_argument("--eps", default="1/4", help="tolerance in (0, 1), a rational such as 1/4 (default 1/4)")
    g.add_argument("--json", action="store_true", help="print one JSON object")
    a = sub.add_parser("gauge", help="gauge example: queries and keys at +-e1, +-e2, shear S_t (symbolic)")
    a.add_argument("--beta", default="1", help="logit scale, a positive rational (default 1)")
    a.add_argument("--t", default="2", help="shear parameter, a rational (default 2)")
    a.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    t0 = time.perf_counter()
    if args.family == "grid":
        check_count(args.r, "r")
        check_count(args.L, "L", minimum=2)
        eps = Tolerance.parse(args.eps).value
        if args.r > MAX_GRID_R or args.L ** args.r > MAX_GRID_POINTS:  # never L^r for a huge r
            raise InputError("arguments", "L", f"L^r points (L = {args.L}, r = {args.r}) are beyond this exact "
                                               f"check (limit {MAX_GRID_POINTS})")
        out = close_grid_family(args.r, args.L, eps).as_json()
    else:
        # bounded exact rationals (at most 400 digits, exponents at most 999) before any work
        beta, t = parse_rational(args.beta, "arguments", "beta"), parse_rational(args.t, "arguments", "t")
        try:
            out = close_gauge_family(beta, t).as_json()
        except OverflowError:
            raise InputError("arguments", "beta, t", f"beta = {args.beta} with t = {args.t}: the closure's values "
                                                     "exceed the binary64 range of the output") from None
    out["seconds"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print_json(out)
    else:
        for k, v in out.items():
            print(f"{k:>28}: {v}")
    return 0 if out["proved"] else 1
