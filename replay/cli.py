"""``softrank replay STORE --out DIR``: validated replay of every certificate in a store."""

from __future__ import annotations

import sys

from softrank.replay.engine import replay_store


def configure(parser) -> None:
    parser.add_argument("store", help="store folder (records/ + index.csv)")
    parser.add_argument("--out", default=None, help="output folder for replay.{parquet,csv} (default: STORE/replay)")
    parser.add_argument("--strict", action="store_true", help="Arb balls throughout (no binary64 error-bound route)")
    parser.add_argument("--jobs", type=int, default=1, help="records replayed in parallel (processes)")
    parser.add_argument("--quiet", action="store_true", help="only the summary line")


def run(args) -> int:
    from pathlib import Path

    out = args.out or str(Path(args.store) / "replay")
    progress = None
    if not args.quiet and sys.stderr.isatty():
        def progress(i, n):
            print(f"\rreplay {i}/{n}", end="" if i < n else "\n", file=sys.stderr)
    summary = replay_store(args.store, out, strict=args.strict, jobs=max(1, args.jobs), progress=progress)
    for line in summary.errors:
        print(f"softrank replay: error: {line}", file=sys.stderr)
    print(summary.line())
    return 2 if summary.malformed else 0
