"""``softrank demo``: build a small demonstration store (synthetic softmax operators, no model
needed, ``softrank.fastpath.store.demo``), then replay it."""

from __future__ import annotations

MAX_OPERATORS = 10_000  # a demonstration store: larger counts are refused, not run for hours
MAX_SIZE = 2048  # m = N; each operator is SVD'd once per tolerance in float64


def configure(parser) -> None:
    from softrank.cli.common import path_arg

    parser.add_argument("--out", default="softrank-demo", type=path_arg, help="output folder (store/ and replay/ inside)")
    parser.add_argument("--operators", type=int, default=8, help=f"number of synthetic operators (1 to {MAX_OPERATORS})")
    parser.add_argument("--size", type=int, default=96, help=f"m = N of each operator (2 to {MAX_SIZE})")
    parser.add_argument("--seed", type=int, default=0, help="random seed, >= 0")


def run(args) -> int:
    from softrank.cli.common import check_count, output_dir
    from softrank.cli.replay import replay_store
    from softrank.fastpath.store.demo import DEMO_STYLE, build_demo_store

    check_count(args.operators, "operators", maximum=MAX_OPERATORS)
    check_count(args.size, "size", minimum=2, maximum=MAX_SIZE)
    check_count(args.seed, "seed", minimum=0)
    out = output_dir(args.out)
    for part in ("store", "replay"):  # old records would be mixed into the new store
        output_dir(out / part, field="out", empty=True)
    ids = build_demo_store(out / "store", args.operators, args.size, args.seed, style=DEMO_STYLE)
    print(f"demo store: {len(ids)} synthetic operators ({args.size} x {args.size}) in {out / 'store'}")
    summary = replay_store(out / "store", out / "replay")
    print(summary.line())
    return 0
