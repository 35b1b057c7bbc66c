"""``softrank study widths``: fixed rank budgets across common-prefix block widths (the front end
of ``softrank.fastpath.studies.widths.run_study``; docs/study-widths.md).

``softrank study kappa``: does the theorem's own size track the validated rank bracket? (the front
end of ``softrank.fastpath.studies.theorem.kappa_study.run_kappa_study``; docs/kappa-study.md)."""

from __future__ import annotations

import sys
from contextlib import ExitStack

from softrank.cli.common import parse_tolerances, path_arg, value_arg
from softrank.cli.common import check_count, check_device, json_text, max_jobs, output_dir, parse_int_list, progress
from softrank.cli.extract import one_line_warnings
from softrank.validated.errors import InputError


def configure(parser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", required=True)
    p = sub.add_parser("widths", help="validated feasible share of rank budgets per block width",
                       description="Common-prefix blocks of each width from the same passes, heads and sources, "
                                   "bracketed in float64 and replayed by the validated checker; the feasible / "
                                   "impossible / unresolved share per (width, budget) and the trend class.")
    p.add_argument("--model", default="smollm2", help="a causal decoder: smollm2 (default), a local checkpoint "
                                                      "or a cached Hugging Face id")
    p.add_argument("--widths", default="64,128,256,512", help="block widths N (default 64,128,256,512)")
    p.add_argument("--budgets", default="8,16,32", help="rank budgets k (default 8,16,32)")
    p.add_argument("--operators", type=int, default=16, help="operators per width (default 16)")
    p.add_argument("--sources", type=int, default=None, help="passages (default: one per 6 operators)")
    p.add_argument("--tokens", type=int, default=None, help="tokens per pass (default 2 x the widest width)")
    p.add_argument("--eps", default="0.25", help="the tolerance (default 0.25)")
    p.add_argument("--seed", type=int, default=0, help="selection seed (passages, layers, heads)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes for bracket and replay (default 2)")
    p.add_argument("--device", default=None, type=value_arg, help="extraction device: cpu or cuda (default: cuda when available)")
    p.add_argument("--out", required=True, metavar="DIR", type=path_arg, help="output folder (store, study.csv, cells.csv, study.json)")
    p.add_argument("--reuse", action="store_true", help="reuse DIR/store's bracketed records (replay and tables only)")
    p.add_argument("--json", action="store_true", help="print the result as JSON: {\"cells\": [...], ...}")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    _configure_kappa(sub)


def _configure_kappa(sub) -> None:
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


MAX_BOOTSTRAP = 100_000  # resamples: 2000 give 95% intervals; 10**6 would run for many minutes


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


def _arguments(args) -> dict:
    widths = parse_int_list(args.widths, "widths", minimum=1)
    budgets = parse_int_list(args.budgets, "budgets", minimum=0)
    eps = parse_tolerances(args.eps)  # the exact rational the text spells, as in softrank bracket
    if len(eps) != 1:
        raise InputError("arguments", "eps", "the study takes one tolerance")
    check_count(args.operators, "operators")
    check_count(args.jobs, "jobs", maximum=max_jobs())
    check_count(args.seed, "seed", minimum=0)
    check_device(args.device)
    output_dir(args.out)
    check_count(args.sources, "sources")
    check_count(args.tokens, "tokens", maximum=1_000_000)  # as extract (fastpath.extract.UPPER_LIMITS)
    if len(set(widths)) < 2:
        raise InputError("arguments", "widths", "the study compares at least two widths")
    return {"widths": sorted(set(widths)), "budgets": sorted(set(budgets)), "eps": eps[0]}


class _StageBars:
    """``report(stage, done, total)``: one progress bar per stage, the previous one closed first."""

    def __init__(self):
        self.stage, self.stack, self.update = None, ExitStack(), None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.stack.close()
            self.stage, self.update = stage, self.stack.enter_context(progress(True, total, stage))
        self.update(done)

    def close(self) -> None:
        self.stack.close()


def run(args) -> int:
    if args.study == "kappa":
        return _run_kappa(args)
    from softrank.fastpath.studies.widths import run_study

    opts = _arguments(args)
    extract = {k: getattr(args, k) for k in ("sources", "seed", "tokens", "device") if getattr(args, k) is not None}
    bars = _StageBars()
    errors: list[str] = []  # one line per record that cannot be read; the study goes on without it
    try:
        with one_line_warnings("study"):
            result = run_study(args.model, args.out, operators=args.operators, jobs=args.jobs, reuse=args.reuse,
                               progress=None if args.no_progress else bars, errors=errors, **opts, **extract)
    finally:
        bars.close()
    for line in errors:
        print(f"softrank study widths: error: {line}", file=sys.stderr)
    if args.json:
        print(json_text(result, indent=1))
    else:
        _print(result)
    return 2 if errors else 0


def _print(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 140)
    settings = result["settings"]
    table = Table(title=f"softrank study widths: {settings['model']}, eps {settings['eps']}, "
                        f"{settings['operators_per_width']} operators per width; validated feasible / impossible / "
                        "unresolved (float64 feasible)")
    table.add_column("N", justify="right")
    budgets = settings["budgets"]
    for k in budgets:
        table.add_column(f"k = {k}", justify="right")
    for n in settings["widths"]:
        cells = {c["k"]: c for c in result["cells"] if c["N"] == n}
        table.add_row(str(n), *[_cell(cells.get(k)) for k in budgets])
    console.print(table)
    first, last = settings["widths"][0], settings["widths"][-1]
    for c in result["classes"]:
        console.print(f"k = {c['k']}: {c['class']} (feasible share {0.0 - c['drop_points']:+.1f} points from N = {first} "
                      f"to N = {last}; paired sign test p = {c['p_value']:.3g} over {c['pairs']} pairs)")
    console.print("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in result["seconds"].items())
                  + f", total {sum(result['seconds'].values()):.0f} s")


def _cell(cell: dict | None) -> str:
    if cell is None:
        return "-"
    return (f"{100 * cell['feasible']:.1f}% / {100 * cell['impossible']:.1f}% / {100 * cell['unresolved']:.1f}% "
            f"({100 * cell['float64_feasible']:.1f}%)")


STUDY_OUTPUTS = ("operators", "rows.csv", "correlations.csv", "correlations.md", "study.json", "kappa-study.png")


def _run_kappa(args) -> int:
    from pathlib import Path

    from softrank.cli.common import check_not_input, output_dir, replay_tables, store_records
    from softrank.fastpath.studies.theorem.kappa_study import run_kappa_study

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
    bars = _StageBars()
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
        print(json_text(result))
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
