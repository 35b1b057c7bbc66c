"""``softrank theorem``: sanity checks of the theory's inequalities and invariances.

    softrank theorem perturbation [--random 400] [--adversarial 200] [--seed 0] [--json]
    softrank theorem tau STORE [STORE ...] [--rank 8] [--records IDS] [--limit N] [--json] [--out CSV]
    softrank theorem gauge-audit STORE [STORE ...] [--rank 8] [...]
    softrank theorem kappa-gamma STORE [STORE ...] [--rank 8] [...]

Every "proved"/"validated" value comes from ``softrank.validated`` (Arb balls); the LPs, SDPs and
gauges are untrusted proposals.  Exit 0 when no check is refuted, 1 otherwise; 2 when a record
is malformed or its check cannot be computed (one line each on stderr; the others are still checked).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from softrank.cli.args import check_count, parse_int_list, path_arg
from softrank.cli.paths import check_not_input, output_file
from softrank.cli.output import print_json
from softrank.cli.summaries import median_or_none
from softrank.errors import InputError

MAX_CASES = 10**6  # random or adversarial cases of the perturbation check (the default is 400 and 200)
# what the untrusted per-record computations of ``softrank theorem`` and ``softrank kappa`` raise on
# an operator they cannot handle (an LP or SDP that fails on extreme logits, a record of the wrong
# form, a float overflow)
RECORD_FAILURES = (InputError, ValueError, RuntimeError, ArithmeticError)


def record_failure(record, err: BaseException) -> str:
    """One line for a record whose computation failed: the record's folder and id, and why."""
    if isinstance(err, InputError):  # the record's own folder is named once
        text = err.one_line()
        if err.where == str(record.path):
            text = text[len(err.where) + 1:].lstrip()
    else:
        text = f"{type(err).__name__}: {err}"
    return " ".join(f"{record.path} [{record.record_id}]: {text}".split())[:2000]


def theorem_records(args, errors: list[str]) -> list:
    """The records of ``args.stores`` selected by ``--records``, ``--limit`` and ``--max-n`` (for
    ``softrank kappa`` and ``softrank theorem``), after checking those counts and ``--out``; a record
    that cannot be read is one line in ``errors``.  An empty selection without errors is refused."""
    from softrank.studies.theorem.record_logits import select_records

    check_count(args.limit, "limit")
    check_count(args.max_n, "max-n")
    if args.out is not None:  # never inside an input store (a CSV over a record.json or index.csv)
        output_file(args.out)
        check_not_input(args.out, inside=[(store, f"the input store {store}") for store in args.stores])
    recs = select_records(args.stores, args.records, args.limit, args.max_n, errors=errors)
    if not recs and not errors:
        raise InputError(",".join(args.stores), "records", "no records selected")
    return recs


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="check", metavar="CHECK", required=True)
    p = sub.add_parser("perturbation", help="||softmax(x+h)-softmax(x)||_1 <= 2 tanh(osc(h)/4): random, adversarial, sharpness")
    p.add_argument("--random", type=int, default=400, help="random cases (default 400)")
    p.add_argument("--adversarial", type=int, default=200, help="adversarial cases (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    for name, help_text in (("tau", "A within tau(T) of rowsoftmax(T + 1 c^T), validated, T = rank-r truncation of C"),
                            ("gauge-audit", "random diagonal and dense gauges: A, C, tau, kappa stay, native Gamma moves"),
                            ("kappa-gamma", "kappa(C) <= Gamma (model's own factorization) and kappa(T) <= kappa_bal")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("stores", nargs="+", metavar="STORE", type=path_arg)
        s.add_argument("--rank", default="8", help="rank r of T, or a comma list cycled over records (default 8)")
        s.add_argument("--records", default=None, help="comma-separated record ids (default all)")
        s.add_argument("--limit", type=int, default=None, help="at most this many records per store")
        s.add_argument("--max-n", type=int, default=None, dest="max_n", help="skip operators wider than this")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--json", action="store_true")
        s.add_argument("--out", default=None, metavar="CSV", type=path_arg, help="write one row per check to this CSV file")


def emit(args, summary: dict, rows: list[dict], width: int = 36) -> None:
    """The rows to ``--out`` (a CSV file) when given; the summary and rows as JSON under ``--json``,
    else the summary one ``key: value`` a line, the keys right-aligned to ``width``."""
    from softrank.fastpath.store.files import write_csv

    if getattr(args, "out", None) is not None:  # checked (theorem_records) before any work
        write_csv(args.out, rows)
    if args.json:
        print_json({"summary": summary, "rows": rows})
    else:
        for k, v in summary.items():
            print(f"{k:>{width}}: {v}")


def _perturbation(args) -> int:
    from softrank.studies.theorem.perturbation import perturbation_suite

    for value, field in ((args.random, "random"), (args.adversarial, "adversarial")):
        check_count(value, field, minimum=0, maximum=MAX_CASES)
    check_count(args.seed, "seed", minimum=0)
    t0 = time.perf_counter()
    res = perturbation_suite(args.random, args.adversarial, args.seed)
    res["seconds"] = round(time.perf_counter() - t0, 2)
    if args.json:
        print_json(res)
    else:
        for k, v in res.items():
            if k != "sharpness_sequence":
                print(f"{k:>30}: {v}")
        for row in res["sharpness_sequence"]:
            print(f"{'sharpness':>30}: a={row['a']} delta={row['delta']:g} ratio={row['ratio']:.12f} {row['outcome']}")
    return 0 if res["counts"]["refuted"] == 0 else 1


def _tau_summary(rows: list[dict]) -> tuple[dict, int]:
    refuted = sum(r["outcome"] == "refuted" for r in rows)
    return {"proved": sum(r["outcome"] == "proved" for r in rows), "refuted": refuted,
            "unresolved": sum(r["outcome"] == "unresolved" for r in rows),
            "median_distance_over_tau": median_or_none(r["distance_validated_upper"] / r["tau_hat_validated"]
                                                       for r in rows if r["tau_hat_validated"] > 0),
            "max_tau_hat_minus_tau_lp": max(r["tau_hat_validated"] - r["tau_lp"] for r in rows),
            "within_tau_certified": sum(r["within_tau_certified"] for r in rows),
            "max_tau_bracket_rel_gap": max(r["tau_bracket_rel_gap"] for r in rows)}, refuted


def _gauge_summary(rows: list[dict]) -> tuple[dict, int]:
    refuted = sum(not r["kappa_le_gamma_validated"] for r in rows)
    summary: dict = {}
    for g in ("diagonal", "dense"):
        ratios = [r["gamma_ratio"] for r in rows if r["gauge"] == g]
        if ratios:
            summary[f"{g}: gamma_ratio median/min/max"] = [round(statistics.median(ratios), 3),
                                                           round(min(ratios), 3), round(max(ratios), 3)]
            summary[f"{g}: share gamma moved > 10%"] = sum(abs(x - 1) > 0.1 for x in ratios) / len(ratios)
    summary.update({"max ||A'-A||_inf (validated)": max(r["A_change_validated_upper"] for r in rows),
                    "max |C'-C| (validated)": max(r["C_change_validated_upper"] for r in rows),
                    "max |tau'-tau| (float LP)": max(r.get("tau_change", 0) for r in rows),
                    "max rel change kappa(C) lower": max(r["kappa_lower_rel_change"] for r in rows),
                    "kappa <= Gamma in every frame": refuted == 0})
    return summary, refuted


def _kappa_gamma_summary(rows: list[dict]) -> tuple[dict, int]:
    refuted = sum(not (r["kappa_C_lower_le_gamma"] and r["kappa_T_lower_le_bal"]) for r in rows)
    return {"all kappa(C) lower <= Gamma upper": all(r["kappa_C_lower_le_gamma"] for r in rows),
            "all kappa(T) lower <= kappa_bal upper": all(r["kappa_T_lower_le_bal"] for r in rows),
            "median Gamma / kappa(C) lower": median_or_none(r["gamma_over_kappa_C_lower"] for r in rows),
            "median kappa_bal / kappa(T) upper": median_or_none(r["bal_over_kappa"] for r in rows)}, refuted


def _record_rows(args, recs, ranks, errors: list[str]) -> list[dict]:
    """The check's rows; a record whose check cannot be computed (an LP that fails on extreme
    logits, a record of the wrong form) adds one line to ``errors`` and the others go on."""
    rows: list[dict] = []
    for i, rec in enumerate(recs):
        r = min(ranks[i % len(ranks)], min(rec.shape) - 1)
        try:
            with np.errstate(all="ignore"):  # an overflow in an untrusted proposal: its failure is reported
                rows.extend(_check_one(args, rec, r))
        except RECORD_FAILURES as err:
            errors.append(record_failure(rec, err))
    return rows


def _check_one(args, rec, r: int) -> list[dict]:
    from softrank.studies.theorem.gauge import gauge_audit_record
    from softrank.studies.theorem.kappa import kappa_gamma_record
    from softrank.studies.theorem.tau_check import tau_check_record

    if args.check == "tau":
        return [tau_check_record(rec, r)]
    if args.check == "gauge-audit":
        return list(gauge_audit_record(rec, r, seed=args.seed))
    return [kappa_gamma_record(rec, r)]


SUMMARIES = {"tau": _tau_summary, "gauge-audit": _gauge_summary, "kappa-gamma": _kappa_gamma_summary}


def run(args) -> int:
    if args.check == "perturbation":
        return _perturbation(args)
    ranks = parse_int_list(args.rank, "rank", minimum=1)
    check_count(args.seed, "seed", minimum=0)
    errors: list[str] = []  # one line per malformed record or failed check; the others go on
    recs = theorem_records(args, errors)
    t0 = time.perf_counter()
    rows = _record_rows(args, recs, ranks, errors)
    summary: dict = {"check": args.check, "operators": len(recs), "rows": len(rows),
                     "seconds": round(time.perf_counter() - t0, 1)}
    refuted = 0
    if rows:
        extra, refuted = SUMMARIES[args.check](rows)
        summary.update(extra)
    for line in errors:
        print(f"softrank theorem: error: {line}", file=sys.stderr)
    if not rows and errors:
        return 2
    emit(args, summary, rows)
    return 2 if errors else 0 if refuted == 0 else 1
