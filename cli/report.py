"""``softrank report REPLAY_DIR --out FILE.html``: one self-contained HTML page of a replay.

The arguments, the output paths checked before any work, and what is printed; the page itself
(what it shows, how each number is read from the replay tables) is the results room's
``softrank.findings.report``.
"""

from __future__ import annotations

from pathlib import Path

from softrank.cli.args import path_arg
from softrank.cli.paths import check_not_input, output_file, replay_tables
from softrank.cli.output import print_json
from softrank.findings.report import write_report

EPILOG = """--json prints one object: {"report": the page's path, "figures": [figure names], "records",
"rows" (record x eps rows), "rows_by_status", "summary": [{"family", "support", "eps", "operators", "median_L",
"median_U", "median_U_over_L", "resolved", "resolved_share", "closed_share"}, ...]}."""


def configure(parser) -> None:
    parser.add_argument("replay_dir", type=path_arg, help="folder with replay.parquet and verdicts.parquet (softrank replay --out)")
    parser.add_argument("--out", default=None, metavar="FILE.html", type=path_arg, help="the page (default: REPLAY_DIR/report.html)")
    parser.add_argument("--figures", default=None, metavar="DIR", type=path_arg, help="also write every figure as DIR/NAME.png")
    parser.add_argument("--heldout", default=None, metavar="HELDOUT_JSON", type=path_arg,
                        help="add the held-out construction benchmark (heldout.json of softrank study constructions "
                             "--panel; default: REPLAY_DIR/../heldout.json when there is one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below) instead of the path")
    parser.epilog = EPILOG


def run(args) -> int:
    out = Path(args.out) if args.out is not None else Path(args.replay_dir) / "report.html"
    if args.out is not None:  # checked before the figures are drawn
        output_file(out, folder_must_exist=False)
    check_not_input(out, inside=replay_tables(args.replay_dir))  # never over the tables it reads
    if args.figures is not None:
        check_not_input(args.figures, "figures", inside=replay_tables(args.replay_dir))
    info: dict = {}
    path = write_report(args.replay_dir, out, figures=args.figures, info=info, heldout=args.heldout)
    if getattr(args, "json", False):
        print_json(info, sort_keys=True)
    else:
        print(f"report: {path}")
    return 0
