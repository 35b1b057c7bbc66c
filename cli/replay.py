"""``softrank replay STORE --out DIR``: validated replay of every certificate in a store.

The arguments and what is printed; the replay itself, its tables (``replay.parquet``/``.csv``,
``verdicts.parquet``/``.csv``, ``manifest.json``), its journal and its summary are the results
room's ``softrank.findings.replay_job.ReplayJob`` (where the files and exit codes are described).

Exit codes: 0; 1 when an outcome named in ``--fail-on`` occurred; 2 on a malformed record (the
others are still replayed and written); 3 on a contradiction.
"""

from __future__ import annotations

import sys
from pathlib import Path

from softrank.cli.args import check_count, max_jobs, parse_int_list, path_arg
from softrank.cli.output import print_json
from softrank.cli.progress import progress as progress_bar
from softrank.findings.replay_job import DEFAULT_BUDGETS, FAIL_ON, ReplayJob
from softrank.errors import InputError


def configure(parser) -> None:
    parser.add_argument("store", type=path_arg, help="store folder (records/ + index.csv)")
    parser.add_argument("--out", default=None, type=path_arg, help="output folder for replay.{parquet,csv} (default: STORE/replay)")
    parser.add_argument("--strict", action="store_true", help="Arb balls throughout (no binary64 error-bound route)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="records replayed in parallel (>= 1; above 1: a local dask cluster of N processes)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="replay on the dask.distributed scheduler at ADDRESS (workers must see STORE at the "
                             "same path), or 'local' for a local cluster of --jobs processes")
    parser.add_argument("--resume", action="store_true",
                        help="continue a killed run into the same OUT: records in OUT/.partial are not redone")
    parser.add_argument("--quiet", action="store_true", help="only the summary line")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (as in the other commands)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)),
                        help="rank budgets k of the verdict table (default 8,16,32)")
    parser.add_argument("--fail-on", default="", metavar="OUTCOMES",
                        help="exit 1 when any of these occurs: " + ",".join(FAIL_ON) + " (default: none; "
                             "malformed records exit 2 and contradictions 3 regardless)")


def progress_shown(args) -> bool:
    """The progress bar is drawn on a terminal only, and not with --quiet or --no-progress."""
    return not (args.quiet or getattr(args, "no_progress", False)) and sys.stderr.isatty()


def run(args) -> int:
    jobs = check_count(args.jobs, "jobs", maximum=max_jobs())
    budgets = tuple(parse_int_list(args.budgets, "budgets", minimum=0))
    fail_on = _fail_on(args.fail_on)
    out = args.out or str(Path(args.store) / "replay")
    job = ReplayJob(args.store, out, strict=args.strict, budgets=budgets, resume=getattr(args, "resume", False))
    shown = progress_shown(args)
    try:
        with progress_bar(shown, job.total, "replay", start=job.resumed) as update:
            summary = job.execute(jobs=jobs, scheduler=getattr(args, "scheduler", None), progress=lambda done, _: update(done))
    except KeyboardInterrupt:
        print(f"softrank replay: finished records are kept in {job.journal.folder}; rerun with --resume",
              file=sys.stderr)
        raise
    for line in summary.errors:
        print(f"softrank replay: error: {line}", file=sys.stderr)
    if args.json:
        print_json(summary.as_json(fail_on))
    else:
        print(summary.line())
    return summary.exit_code(fail_on)


def _fail_on(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for name in names:
        if name not in FAIL_ON:
            raise InputError("arguments", "fail-on", f"unknown outcome {name!r} (known: {', '.join(FAIL_ON)})")
    return names
