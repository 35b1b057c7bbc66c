"""``softrank study widths``: fixed rank budgets across common-prefix block widths (the front end
of ``softrank.studies.widths.widths.run_study``; docs/study-widths.md)."""

from __future__ import annotations

import sys

from softrank.cli.args import check_count, check_device, max_jobs, parse_int_list, path_arg, value_arg
from softrank.cli.extract import one_line_warnings
from softrank.cli.paths import output_dir
from softrank.cli.progress import StageBars
from softrank.cli.output import print_json
from softrank.replay.reader import MAX_TOLERANCES
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError


def configure(sub) -> None:
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


def _arguments(args) -> dict:
    widths = parse_int_list(args.widths, "widths", minimum=1)
    budgets = parse_int_list(args.budgets, "budgets", minimum=0)
    eps = Tolerance.parse_list(args.eps, most=MAX_TOLERANCES)  # the exact rational spelt, as in softrank bracket
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


def run(args) -> int:
    from softrank.studies.widths.widths import run_study


    opts = _arguments(args)
    extract = {k: getattr(args, k) for k in ("sources", "seed", "tokens", "device") if getattr(args, k) is not None}
    bars = StageBars()
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
        print_json(result, indent=1)
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
