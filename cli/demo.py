"""``softrank demo``: build a small demonstration store (synthetic softmax operators, no model
needed, ``softrank.fastpath.demo``), then replay it."""

from __future__ import annotations

MAX_OPERATORS = 10_000  # a demonstration store: larger counts are refused, not run for hours
MAX_SIZE = 2048  # m = N; each operator is SVD'd once per tolerance in float64
EPILOG = """--json prints one object: {"store", "replay" (folders), "operators", "size", "seed", "style" (of
softrank.fastpath.demo), "replay_summary" (as softrank replay --json prints it), "summary" (per
family and eps: operators, median_L, median_U, median_U_over_L, resolved, resolved_share,
closed_share, as in softrank report), "exit_code"}."""


def configure(parser) -> None:
    from softrank.cli.args import path_arg

    parser.add_argument("--out", default="softrank-demo", type=path_arg, help="output folder (store/ and replay/ inside)")
    parser.add_argument("--operators", type=int, default=8, help=f"number of synthetic operators (1 to {MAX_OPERATORS})")
    parser.add_argument("--size", type=int, default=96, help=f"m = N of each operator (2 to {MAX_SIZE})")
    parser.add_argument("--seed", type=int, default=0, help="random seed, >= 0")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG


def run(args) -> int:
    from softrank.cli.args import check_count
    from softrank.cli.paths import output_dir
    from softrank.findings.replay_job import replay_store
    from softrank.fastpath.demo import DEMO_STYLE, build_demo_store

    check_count(args.operators, "operators", maximum=MAX_OPERATORS)
    check_count(args.size, "size", minimum=2, maximum=MAX_SIZE)
    check_count(args.seed, "seed", minimum=0)
    out = output_dir(args.out)
    for part in ("store", "replay"):  # old records would be mixed into the new store
        output_dir(out / part, field="out", empty=True)
    ids = build_demo_store(out / "store", args.operators, args.size, args.seed, style=DEMO_STYLE)
    if not getattr(args, "json", False):
        print(f"demo store: {len(ids)} synthetic operators ({args.size} x {args.size}) in {out / 'store'}")
    summary = replay_store(out / "store", out / "replay")
    if getattr(args, "json", False):
        from softrank.cli.output import print_json
        from softrank.findings.report_figures import family_summary
        from softrank.findings.replay_table import read_replay_table

        rows = read_replay_table(out / "replay", "replay.parquet")
        print_json({"store": str(out / "store"), "replay": str(out / "replay"), "operators": len(ids),
                    "size": args.size, "seed": args.seed, "style": DEMO_STYLE,
                    "replay_summary": summary.as_json(), "summary": family_summary(rows), "exit_code": 0})
    else:
        print(summary.line())
    return 0
