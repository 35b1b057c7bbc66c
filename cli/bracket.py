"""``softrank bracket STORE``: float64 upper witnesses, lower certificates, brackets and verdicts
for every record of a store, written back into the records (or into ``--out``).

Per record and eps: the best checked witness (``upper``), the lower certificates achieving the
largest lower end (``lower``), and ``float64`` = {lower, upper, verdicts at budgets 8, 16, 32}.
A table ``bracket.csv`` (one row per record and eps, with the truncated-SVD / Frobenius baseline
and the time per construction) is written next to ``records/``.
"""

from __future__ import annotations

import statistics
import time

from softrank.cli.common import output_dir, parse_eps_list
from softrank.cli.common import progress as progress_bar
from softrank.validated.errors import InputError


def configure(parser) -> None:
    parser.add_argument("store", metavar="STORE", help="a SoftRank store (e.g. from softrank extract)")
    parser.add_argument("--eps", default="0.15,0.25,0.35", help="tolerances, comma separated (default 0.15,0.25,0.35)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", default=None, metavar="STORE2", help="write bracketed records here (default: in place)")
    parser.add_argument("--mode", choices=("fast", "full"), default="fast",
                        help="fast: later constructions only search below the best rank so far; "
                             "full: every construction's own least rank (construction study)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_bracket(store, out=None, eps_list=(0.15, 0.25, 0.35), jobs: int = 2, mode: str = "fast",
                progress: bool = True, label: str = "bracket") -> list[dict]:
    """Bracket a store with a progress bar; returns the summary rows."""
    from softrank.fastpath.bracket_store import bracket_store
    from softrank.replay.reader import list_records

    total = len(list_records(store))  # raises InputError if STORE is not a store
    with progress_bar(progress, total, label) as update:
        return bracket_store(store, out, eps_list, jobs=jobs, mode=mode,
                             progress=lambda done, _total: update(done))


def run(args) -> int:
    if args.jobs < 1:
        raise InputError("arguments", "jobs", f"must be a positive integer, got {args.jobs}")
    eps_list = parse_eps_list(args.eps)
    if args.out:  # checked before any work: a file there, or no way to create it, is an error now
        output_dir(args.out)
    t0 = time.perf_counter()
    rows = run_bracket(args.store, args.out, eps_list, jobs=args.jobs, mode=args.mode,
                       progress=not args.no_progress)
    elapsed = time.perf_counter() - t0
    n_records = len({r["record_id"] for r in rows})
    print(f"softrank bracket: {n_records} records x {len(eps_list)} tolerances in {elapsed:.1f} s "
          f"-> {args.out or args.store}")
    for e in eps_list:
        sel = [r for r in rows if abs(r["eps"] - e) < 1e-12]
        if not sel:
            continue
        ratios = [r["upper"] / r["lower"] for r in sel if r["upper"] is not None and r["lower"]]
        share = sum(bool(r["resolved"]) for r in sel) / len(sel)
        print(f"  eps {e:g}: median L {statistics.median(r['lower'] for r in sel):g}, median U "
              f"{statistics.median(r['upper'] if r['upper'] is not None else min(r['m'], r['N']) for r in sel):g}, "
              f"median U/L {statistics.median(ratios) if ratios else float('nan'):.2f}, resolved {100 * share:.1f}%")
    return 0
