"""``softrank oracle MATRIX.json --eps 1/4 (--rank K | --profile) [--class C] [--json]``.

MATRIX.json is a JSON list of rows; entries are integers or strings such as "3/7" or "0.25".
JSON numbers with a fraction or exponent are read as the exact decimal they spell (0.1 is 1/10).
An entry with more than 400 digits in a part (numerator, denominator, or a decimal's integer or
fraction digits) is refused (``softrank.exact.rational.MAX_DIGITS``).
Bad input (non-rational entries, ragged rows, eps outside (0, 1), k < 0) is a one-line error and
exit code 2.  Exit code 0 otherwise, whatever the verdict.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from fractions import Fraction

from softrank.cli.args import parse_count, path_arg

from softrank.cli.output import print_json
from softrank.cli.paths import load_json_text, read_text_file
from softrank.errors import InputError

MAX_DIGITS = 400  # softrank.exact.rational.MAX_DIGITS (not imported here: the parser stays light)


def configure(parser) -> None:
    # let "--eps -1/4" reach the one-line range check instead of reading "-1/4" as an option
    # (argparse's own matcher knows -1 and -0.5 but not -1/4 or -1e-3)
    if hasattr(parser, "_negative_number_matcher"):
        parser._negative_number_matcher = re.compile(r"^-(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(/\d+)?$")
    parser.add_argument("matrix", type=path_arg,
                        help=f"JSON file: a list of rows of integers or rational strings; entries with more than "
                             f"{MAX_DIGITS} digits per part (numerator or denominator) are refused")
    parser.add_argument("--eps", required=True, help="tolerance, a rational in (0, 1) such as 1/4 or 0.25")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--rank", type=str, help="rank budget k >= 0: decide the cell")
    what.add_argument("--profile", action="store_true", help="exact bracket on r_eps(A) and thresholds")
    parser.add_argument("--class", dest="klass", default="unrestricted", choices=["unrestricted", "stochastic"],
                        help="competitor class (default unrestricted)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--witness", type=path_arg, help="JSON file with a candidate B (list of rows) to re-check exactly")
    parser.add_argument("--no-search", action="store_true", help="do not search for witnesses outside the reductions")
    parser.add_argument("--lp", default="auto", choices=["auto", "highs", "simplex"],
                        help="LP route (every route's certificate is checked exactly)")
    parser.add_argument("--no-certificates", action="store_true", help="profile: omit certificates from the output")
    parser.add_argument("--no-progress", action="store_true",
                        help="profile: no line per decided rank on stderr (shown only on a terminal)")
    parser.add_argument("--search-budget", default="0", metavar="SECONDS",
                        help="seconds of branch and bound for a rank nothing else decides (per rank with "
                             "--profile; default 0: off)")


def parse_budget(text: str) -> float:
    """``--search-budget``: a finite number of seconds >= 0."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise InputError("arguments", "search-budget", f"must be a number of seconds >= 0, got {text!r}")
    return value


def _number(x, where, field):
    from softrank.exact.rational import parse_rational

    if isinstance(x, (bool, type(None), list, dict)):
        raise InputError(where, field, f"not a rational number: {json.dumps(x)}")
    return parse_rational(x, where, field)


def read_matrix(path: str) -> list[list[Fraction]]:
    """Read MATRIX.json exactly: integers, rational strings, JSON decimals read as decimals.  JSON
    numbers reach ``parse_rational`` as their text, so every entry meets the same digit limit."""
    from softrank.exact.rational import as_matrix

    text = read_text_file(path)
    data = load_json_text(text, path, parse_float=lambda s: s, parse_int=lambda s: s, parse_constant=lambda s: s)
    if not isinstance(data, list) or not data:
        raise InputError(path, "", "expected a non-empty JSON list of rows")
    rows = []
    for i, row in enumerate(data):
        if not isinstance(row, list) or not row:
            raise InputError(path, f"row {i}", "expected a non-empty list")
        rows.append([_number(x, path, f"row {i} entry {j}") for j, x in enumerate(row)])
    return as_matrix(rows, path, "matrix")


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def progress_line():
    """``on_decision`` for ``profile``: one line per decided rank on stderr, with the time since
    the start (a profile of a cell with dozens of rows takes seconds to minutes per rank)."""
    t0 = time.monotonic()

    def show(d) -> None:
        print(f"softrank oracle: k = {d.k}: {d.verdict} ({d.reduction}) after {time.monotonic() - t0:.1f} s",
              file=sys.stderr, flush=True)
    return show


def run(args) -> int:
    from softrank.exact.rational import TooLongForText

    try:
        return _run(args)
    except TooLongForText as err:
        raise InputError(args.matrix, "entries", f"exact arithmetic on these entries reaches {err}; "
                                                 "use entries with fewer digits") from None


def _run(args) -> int:
    from softrank.exact.rational import fmt
    from softrank.oracle.search import decide, profile
    from softrank.replay.tolerance import Tolerance

    eps = Tolerance.parse(args.eps).value
    k = parse_count(args.rank, "rank", minimum=0) if args.rank is not None else None
    A = read_matrix(args.matrix)
    witness = read_matrix(args.witness) if args.witness is not None else None
    budget = parse_budget(args.search_budget)
    if witness is not None and (len(witness), len(witness[0])) != (len(A), len(A[0])):
        raise InputError(args.witness, "witness", f"shape {len(witness)} x {len(witness[0])} differs from the "
                                                  f"matrix's {len(A)} x {len(A[0])}")
    if k is not None:
        v = decide(A, eps, k, args.klass, witness=witness, search=not args.no_search, method=args.lp,
                   search_budget=budget)
        out = v.to_json()
        if args.json:
            print_json(out)
        else:
            print(f"{v.verdict}: rank {k}, class {args.klass}, eps {fmt(eps)}, {len(A)}x{len(A[0])}"
                  f" (reduction {v.reduction}{', proof ' + v.proof if v.proof else ''};"
                  f" certificate re-checked: {'yes' if v.rechecked else 'n/a'})")
            if v.note:
                print(f"  {v.note}")
        return 0
    p = profile(A, eps, args.klass, search=not args.no_search, method=args.lp, search_budget=budget,
                on_decision=None if args.no_progress or not stderr_is_terminal() else progress_line())
    out = p.to_json(certificates=not args.no_certificates)
    if args.json:
        print_json(out)
    else:
        if p.lower is None:
            print(f"no competitor: {p.note}")
        else:
            r = str(p.rank) if p.rank is not None else f"in [{p.lower}, {p.upper}]"
            print(f"r_eps(A) {'=' if p.rank is not None else ''} {r}  (class {args.klass}, eps {fmt(eps)})")
        for d in p.decisions:
            print(f"  k={d.k}: {d.verdict} ({d.reduction})")
        for kk, t in sorted(p.thresholds.items()):
            print(f"  eps*_{kk} = {fmt(t)}")
    return 0
