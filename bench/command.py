"""``softrank bench NAME``: benchmarks that print ratios measured in one run.

One table maps each benchmark to its help line; the benchmark is the ``main`` function of its module
(``softrank.bench.<name>``, or the one ``MODULES`` names), which takes the parsed arguments and
returns an exit code.  Timings are medians over repeats; compare ratios, not absolute times.
"""

from __future__ import annotations

import importlib

from softrank.cli.args import check_count

MAX_REPEATS = 1000  # timing repeats (default 5)

# benchmark -> one-line help; each is ``main`` of its module ``softrank.bench.<module>``, the module
# named as the benchmark but where ``MODULES`` names another
BENCHMARKS: dict[str, str] = {
    "replay": "validated vs float64 time for upper witnesses",
    "lower": "validated vs float64 time for lower certificates",
    "oracle": "exact oracle: 3x3 profile and 6x6 rank-1 decision",
    "bracket": "bracket throughput and time share per construction",
    "store": "validated vs plain float64 replay of a whole store (STORE)",
    "scale": "replay records/minute: in process, dask with 1 and 2 workers, projection",
}
MODULES = {"replay": "upper"}


def configure(parser) -> None:
    parser.add_argument("name", choices=sorted(BENCHMARKS), help="which benchmark")
    parser.add_argument("--repeats", type=int, default=5, help=f"timing repeats, 1 to {MAX_REPEATS} (median reported)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("target", nargs="?", help="the store folder (bench store; bench bracket: its families "
                                                  "instead of extracted operators)")
    parser.add_argument("--compare", action="store_true",
                        help="bench bracket: CPU seconds and quality of --mode basic and fast, record by record")
    parser.add_argument("--json", action="store_true", help="one JSON object (bench store)")


def run(args) -> int:
    check_count(args.repeats, "repeats", maximum=MAX_REPEATS)
    module = importlib.import_module(f"softrank.bench.{MODULES.get(args.name, args.name)}")
    return int(module.main(args) or 0)
