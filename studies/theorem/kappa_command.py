"""``softrank kappa STORE [STORE ...]``: brackets for the intrinsic size kappa(T) on a store.

For each record, C = P_m H P_N is formed from the logits (never from log A), T := X0 Y0^T with
X0, Y0 the balanced factors of a float64 rank-r SVD of C (T is defined exactly by these binary64
factors; ``softrank.studies.theorem.kappa``).  The SDP of proofs/kappa_duality_contrast.md
(``studies/theorem/kappa_sdp.py``: cvxpy + Clarabel, untrusted) proposes dual weights (p, q)
and a primal (S, c, d); ``softrank.validated.kappa_certificates`` turns them into

    lower  <= kappa(T) <= upper          (Arb balls; Lemmas K1, K1', K3)
    contrast <= kappa(T)                 (best 2 x 2 rectangle, Lemma K2)

and kappa_bal = rad(X0) rad(Y0) (the balanced-factor surrogate) is reported beside them.

    softrank kappa STORE [--records IDS] [--limit N] [--rank 8 | --rank 2,4,8,16] [--json] [--out CSV]

``--rank`` with a list cycles the ranks over the records.  Exit 0 when every lower bound is
validated (and below its upper bound), 1 otherwise; 2 when a record is malformed or its
computation fails (one line each on stderr; the other records are still bracketed).
"""

from __future__ import annotations

import statistics
import sys

import numpy as np

from softrank.cli.args import parse_int_list, path_arg
from softrank.cli.summaries import max_or_none, median_or_none, shown_number
from softrank.studies.theorem.command import RECORD_FAILURES, emit, record_failure, theorem_records


def configure(parser) -> None:
    parser.add_argument("stores", nargs="+", metavar="STORE", type=path_arg)
    parser.add_argument("--rank", default="8", help="rank r of T, or a comma list cycled over records (default 8)")
    parser.add_argument("--records", default=None, help="comma-separated record ids (default all)")
    parser.add_argument("--limit", type=int, default=None, help="at most this many records per store")
    parser.add_argument("--max-n", type=int, default=None, dest="max_n", help="skip operators wider than this")
    parser.add_argument("--json", action="store_true", help="print one JSON object (summary and rows)")
    parser.add_argument("--out", default=None, metavar="CSV", type=path_arg, help="write one row per record to this CSV file")


def run(args) -> int:
    from softrank.studies.theorem.kappa import kappa_bracket_record

    ranks = parse_int_list(args.rank, "rank", minimum=1)
    errors: list[str] = []  # one line per malformed record or failed computation; the others go on
    recs = theorem_records(args, errors)
    rows = []
    for i, rec in enumerate(recs):
        r = min(ranks[i % len(ranks)], min(rec.shape) - 1)
        if r < 1:
            errors.append(record_failure(rec, ValueError(f"kappa needs at least 2 rows and 2 columns (a rank r >= 1 "
                                                         f"below min(m, N)); this operator is {rec.shape[0]} x {rec.shape[1]}")))
            continue
        try:
            with np.errstate(all="ignore"):  # an overflow in an untrusted proposal: its failure is reported below
                rows.append(kappa_bracket_record(rec, r))
        except RECORD_FAILURES as err:
            errors.append(record_failure(rec, err))
            continue
        if not args.json:
            x = rows[-1]
            print(f"{x['record']:<40} {x['m']}x{x['N']} r={x['r']:<2} kappa in [{x['lower']:.6g}, {x['upper']:.6g}] "
                  f"gap {shown_number(x['rel_gap'], '.1e')}  contrast {x['contrast_lower']:.4g}  kappa_bal "
                  f"{x['kappa_bal']:.4g} ({shown_number(x['bal_over_kappa'], '.3f')}x)  {x['seconds_total']:.1f}s",
                  flush=True)
    for line in errors:
        print(f"softrank kappa: error: {line}", file=sys.stderr)
    if not rows:
        return 2
    ok = [x for x in rows if x["lower"] > 0 and x["lower"] <= x["upper"]]
    summary = {
        "operators": len(rows), "lower_validated": len(ok),
        "median_rel_gap": median_or_none(x["rel_gap"] for x in rows),  # ratios: over the records that have them
        "max_rel_gap": max_or_none(x["rel_gap"] for x in rows),
        "median_bal_over_kappa": median_or_none(x["bal_over_kappa"] for x in rows),
        "max_bal_over_kappa": max_or_none(x["bal_over_kappa"] for x in rows),
        "median_contrast_over_kappa": median_or_none(x["contrast_lower"] / x["upper"] for x in rows if x["upper"] > 0),
        "median_seconds": statistics.median(x["seconds_total"] for x in rows),
        "shapes": sorted({f"{x['m']}x{x['N']}" for x in rows}), "ranks": sorted({x["r"] for x in rows}),
    }
    emit(args, summary, rows, width=28)
    return 2 if errors else 0 if len(ok) == len(rows) else 1
