"""``softrank demo``: build a small demonstration store (synthetic softmax operators, no model
needed, ``softrank.fastpath.demo``), then replay it."""

from __future__ import annotations


def configure(parser) -> None:
    parser.add_argument("--out", default="softrank-demo", help="output folder (store/ and replay/ inside)")
    parser.add_argument("--operators", type=int, default=8, help="number of synthetic operators")
    parser.add_argument("--size", type=int, default=96, help="m = N of each operator")
    parser.add_argument("--seed", type=int, default=0)


def run(args) -> int:
    from softrank.cli.common import check_count, output_dir
    from softrank.cli.replay import replay_store
    from softrank.fastpath.demo import build_demo_store

    check_count(args.operators, "operators")
    check_count(args.size, "size", minimum=2)
    out = output_dir(args.out)
    for part in ("store", "replay"):  # old records would be mixed into the new store
        output_dir(out / part, field="out", empty=True)
    ids = build_demo_store(out / "store", args.operators, args.size, args.seed)
    print(f"demo store: {len(ids)} synthetic operators ({args.size} x {args.size}) in {out / 'store'}")
    summary = replay_store(out / "store", out / "replay")
    print(summary.line())
    return 0
