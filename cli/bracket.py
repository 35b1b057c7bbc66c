"""``softrank bracket STORE``: float64 upper witnesses, lower certificates, brackets and verdicts
for every record of a store, written back into the records (or into ``--out STORE2``).

Per record and eps: the best checked witness (``upper``), the lower certificates achieving the
largest lower end (``lower``), and ``float64`` = {lower, upper, verdicts at budgets 8, 16, 32}.
A table ``bracket.csv`` (one row per record and eps, with the truncated-SVD / Frobenius baseline
and the time per construction) is written next to ``records/``.

Tolerances: each item of ``--eps`` is the exact rational its text spells (``0.15``, ``3/20`` and
``1.5e-1`` are one tolerance, 3/20), as for ``softrank oracle``; the float64 bracket is computed
with its nearest binary64 number, and the record stores the exact text (``"0.15"``), so the
validated replay checks exactly 3/20.  ``bracket.csv`` prints ``eps`` as that text and
``eps_value`` as the binary64 number.

Records are independent.  With ``--jobs 1`` and no ``--scheduler`` they are bracketed in this
process; otherwise on dask.distributed (``softrank.fastpath.runner``): a local cluster of
``--jobs`` one-thread worker processes, or the running scheduler at ``--scheduler ADDRESS`` (its
workers must see STORE and OUT at the same paths).  Every record is bracketed with one BLAS thread.

Nothing is lost when a run is killed, even by SIGKILL: a run first puts back records a killed
writer left half replaced (``fastpath.writer.recover_store``) and removes ``bracket.csv`` and
``bracket-manifest.json`` (the outputs that mark a finished run); each record's table rows and
the SHA-256 of its source ``record.json`` (before) and of the written one go to a journal in
``OUT/.partial/`` as soon as the record is written; at the end come ``index.csv``,
``bracket.csv``, then ``bracket-manifest.json`` (``"complete": true``), and the journal is
removed.  ``--resume`` skips every record whose journal entry is whole and whose written
``record.json`` still has the journaled hash (with ``--out``, the source must still have its
journaled hash too); the store, eps, mode and version must match the journal's.
"""

from __future__ import annotations

import statistics
import sys
import time

from softrank.cli.args import check_count, max_jobs, path_arg
from softrank.cli.paths import check_not_input, store_records
from softrank.cli.progress import progress as progress_bar
from softrank.cli.summaries import by_eps, print_job_summary
from softrank.fastpath.bracket.matrix import DEFAULT_EPS
from softrank.replay.reader import MAX_TOLERANCES
from softrank.replay.tolerance import Tolerance

DEFAULT_EPS_TEXT = "0.15,0.25,0.35"


EPILOG = """--json prints one object: {"store", "out", "records", "resumed" (from the journal), "malformed",
"errors" (one line each), "tolerances", "seconds", "table" (bracket.csv), "eps": [{"eps", "operators",
"median_L", "median_U", "median_U_over_L", "resolved", "resolved_share"} per tolerance: float64 ends,
resolved by the results table's criterion], "exit_code"}."""


def configure(parser) -> None:
    parser.add_argument("store", metavar="STORE", type=path_arg, help="a SoftRank store (e.g. from softrank extract)")
    parser.add_argument("--eps", default=DEFAULT_EPS_TEXT,
                        help="tolerances, comma separated, each an exact rational: 0.15, 3/20 or 1.5e-1 "
                             f"(default {DEFAULT_EPS_TEXT})")
    parser.add_argument("--jobs", type=int, default=2,
                        help="records bracketed in parallel (default 2; above 1: a local dask cluster of N processes)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="bracket on the dask.distributed scheduler at ADDRESS (workers must see STORE and "
                             "OUT at the same paths), or 'local' for a local cluster of --jobs processes")
    parser.add_argument("--out", default=None, metavar="STORE2", type=path_arg, help="write bracketed records here (default: in place)")
    parser.add_argument("--resume", action="store_true",
                        help="continue a killed run into the same OUT: records journaled in OUT/.partial are not redone")
    parser.add_argument("--mode", choices=("fast", "basic", "full"), default="fast",
                        help="fast: the constructions, then a budgeted smoothed-minimax descent from the best "
                             "witness; basic: the constructions and alternating-l1 steps down, no minimax "
                             "(cheaper, looser); full: every construction's own least rank (construction study)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG


def bracket_job(store, out=None, *, eps_list=DEFAULT_EPS, mode: str = "fast", resume: bool = False):
    """The ``BracketJob`` of STORE into OUT, after checking that OUT is no input of the run."""
    import os

    from softrank.fastpath.bracket.store import OUTPUTS, BracketJob

    if out is not None and os.path.realpath(out) != os.path.realpath(store):  # STORE2 = STORE: in place
        # never STORE/records (or a folder in it), nor a STORE2 whose records/ or tables would be STORE's
        check_not_input(out, inside=[store_records(store)], writes=OUTPUTS)
    return BracketJob(store, out, eps_list=eps_list, mode=mode, resume=resume)


def run_bracket(store, out=None, eps_list=DEFAULT_EPS, jobs: int = 2, mode: str = "fast", progress: bool = True,
                label: str = "bracket", scheduler: str | None = None, resume: bool = False) -> list[dict]:
    """Bracket a store with a progress bar (``BracketJob``); returns the summary rows."""
    job = bracket_job(store, out, eps_list=eps_list, mode=mode, resume=resume)
    return _execute(job, jobs, scheduler, progress, label)


def _execute(job, jobs: int, scheduler, progress: bool, label: str) -> list[dict]:
    try:
        with progress_bar(progress, job.total, label, start=job.resumed) as update:
            return job.execute(jobs=jobs, scheduler=scheduler, progress=lambda done, _total: update(done))
    except KeyboardInterrupt:
        print(f"softrank bracket: finished records are kept in {job.out / 'records'} (journal "
              f"{job.journal.folder}); rerun the same command with --resume to continue", file=sys.stderr)
        raise


def run(args) -> int:
    jobs = check_count(args.jobs, "jobs", maximum=max_jobs())
    eps_list = Tolerance.parse_list(args.eps, most=MAX_TOLERANCES)
    t0 = time.perf_counter()
    job = bracket_job(args.store, args.out, eps_list=eps_list, mode=args.mode, resume=getattr(args, "resume", False))
    rows = _execute(job, jobs, getattr(args, "scheduler", None), not args.no_progress, "bracket")
    elapsed = time.perf_counter() - t0
    resumed = f" ({job.resumed} from the journal)" if job.resumed else ""
    for line in job.errors:
        print(f"softrank bracket: error: {line}", file=sys.stderr)
    malformed = f", {len(job.errors)} malformed (not bracketed)" if job.errors else ""
    per_eps = []
    for text, sel in by_eps(rows, "eps_text", "eps"):
        ratios = [r["upper"] / r["lower"] for r in sel if r["upper"] is not None and r["lower"]]
        done = sum(bool(r["resolved"]) for r in sel)
        uppers = [r["upper"] if r["upper"] is not None else min(r["m"], r["N"]) for r in sel]
        per_eps.append({"eps": text, "operators": len(sel), "median_L": statistics.median(r["lower"] for r in sel),
                        "median_U": statistics.median(uppers),
                        "median_U_over_L": statistics.median(ratios) if ratios else None,
                        "resolved": done, "resolved_share": done / len(sel)})
    return print_job_summary(args, {"store": str(job.store), "out": str(job.out), "records": job.total,
                                    "resumed": job.resumed, "malformed": len(job.errors), "errors": job.errors,
                                    "tolerances": len(eps_list), "seconds": elapsed,
                                    "table": str(job.out / "bracket.csv")},
                             per_eps, f"softrank bracket: {job.total} records{resumed}{malformed} x {len(eps_list)} "
                                      f"tolerances in {elapsed:.1f} s -> {job.out}", _eps_line)


def _eps_line(e: dict) -> str:
    ratio = float("nan") if e["median_U_over_L"] is None else e["median_U_over_L"]
    return (f"  eps {e['eps']}: median L {e['median_L']:g}, median U {e['median_U']:g}, median U/L {ratio:.2f}, "
            f"resolved {100 * e['resolved_share']:.1f}%")
