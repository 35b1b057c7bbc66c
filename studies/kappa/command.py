"""``softrank study kappa``: does the theorem's own size track the validated rank bracket? (the front
end of ``softrank.studies.kappa.kappa_study.run_kappa_study``; docs/kappa-study.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from softrank.cli.args import check_count, max_jobs, parse_int_list, path_arg
from softrank.cli.paths import check_not_input, output_dir, replay_tables, store_records
from softrank.cli.progress import StageBars
from softrank.cli.output import print_json
from softrank.errors import InputError

MAX_BOOTSTRAP = 100_000  # resamples: 2000 give 95% intervals; 10**6 would run for many minutes



def configure(sub) -> None:
    p = sub.add_parser("kappa", help="kappa(T_r), tau(T_r), the theorem's form, kappa_bal and Gamma against the "
                                     "validated rank bracket, per family and eps",
                       description="For every operator of a replayed store: tau(T_r) validated, kappa(T_r) and "
                                   "kappa(C) bracketed (validated dual and primal bounds), kappa_bal and native "
                                   "Gamma; then Spearman correlations with source-bootstrap intervals against "
                                   "the validated rank bracket.")
    p.add_argument("store", metavar="STORE", type=path_arg)
    p.add_argument("--replay", required=True, metavar="REPLAY_DIR", type=path_arg, help="folder with the store's replay.parquet")
    p.add_argument("--ranks", default="2,4,8,16", help="fixed ranks r of T_r (default 2,4,8,16)")
    p.add_argument("--out", required=True, metavar="DIR", type=path_arg, help="output folder (operators/, rows.csv, "
                                                               "correlations.csv/.md, study.json, kappa-study.png)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--resume", action="store_true", help="reuse DIR/operators/*.json of an earlier run")
    p.add_argument("--max-minutes", type=float, default=None, dest="max_minutes",
                   help="start no operator after this many minutes (the tables cover what finished)")
    p.add_argument("--records", default=None, help="comma-separated record ids (default all)")
    p.add_argument("--limit", type=int, default=None, help="at most this many operators (interleaved by family "
                                                          "and source)")
    p.add_argument("--bootstrap", type=_bootstrap, default=2000,
                   help=f"bootstrap resamples of sources, 1 to {MAX_BOOTSTRAP:,} (default 2000)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _bootstrap(text: str) -> int:
    """``--bootstrap N``: an integer from 1 to ``MAX_BOOTSTRAP`` (a larger one is refused on one
    line instead of running for ages or failing to allocate its resamples)."""
    import argparse

    try:
        value = int(str(text).strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {str(text)[:40]!r}") from None
    if not 1 <= value <= MAX_BOOTSTRAP:
        shown = str(value) if len(str(value)) <= 20 else f"{str(value)[:12]}... ({len(str(value))} digits)"
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {MAX_BOOTSTRAP}, got {shown}")
    return value


STUDY_OUTPUTS = ("operators", "rows.csv", "correlations.csv", "correlations.md", "study.json", "kappa-study.png")


def run(args) -> int:
    from softrank.studies.kappa.kappa_study import run_kappa_study

    ranks = parse_int_list(args.ranks, "ranks", minimum=1)
    for value, field in ((args.jobs, "jobs"), (args.limit, "limit"), (args.bootstrap, "bootstrap")):
        check_count(value, field)
    check_count(args.jobs, "jobs", maximum=max_jobs())
    if args.max_minutes is not None and not args.max_minutes > 0:
        raise InputError("arguments", "max-minutes", "must be > 0")
    if not Path(args.store).is_dir():
        raise InputError(str(args.store), "store", "not a folder")
    # never the store, its records/ or the replay's tables (nor an OUT whose outputs would be one of them)
    check_not_input(args.out, inside=[store_records(args.store)] + replay_tables(args.replay),
                    equal=[(args.store, f"the input store {args.store}")], writes=STUDY_OUTPUTS)
    out = output_dir(args.out)
    bars = StageBars()
    try:
        result = run_kappa_study(args.store, args.replay, out, ranks=ranks, jobs=args.jobs, resume=args.resume,
                                 max_minutes=args.max_minutes, records=args.records, limit=args.limit,
                                 n_boot=args.bootstrap, progress=None if args.no_progress or args.json
                                 else (lambda done, total: bars("kappa study", done, total)))
    finally:
        bars.close()
    s = result["summary"]
    for line in s["operators_failed"]:  # one line per operator whose study failed; the others are in the tables
        print(f"softrank study kappa: error: {' '.join(str(line).split())}", file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        print((out / "correlations.md").read_text(), end="")
        for k in ("operators_selected", "operators_done", "families", "rows", "rows_resolved", "kappa_brackets",
                  "kappa_lower_validated", "tau_checks", "tau_proved", "kappa_T_median_rel_gap", "kappa_C",
                  "seconds_total"):
            print(f"{k:>24}: {s[k]}")
    if s.get("operators_bad_input"):
        return 2  # a malformed record (reported above; the other operators were studied)
    bad = s["operators_failed"] or s["kappa_lower_validated"] < s["kappa_brackets"] or s["tau_proved"] < s["tau_checks"]
    return 1 if bad or s["operators_done"] == 0 else 0
