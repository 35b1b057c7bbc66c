"""``softrank tighten STORE --out STORE2``: the heavier search that ``softrank run`` leaves out,
on a bracketed store (``fastpath/tighten/records.py``): per record and tolerance, the upper end lowered by
a smoothed-minimax optimiser stepping down from the stored witness, the lower end raised by
growing the stored decoder with W from the eps* linear program, within ``--budget`` seconds per
record.  A witness or certificate is written only when strictly better and checked in float64;
the stored certificates stay in the record, so no bracket gets worse.  STORE is never changed:
the tightened records (and the others, copied unchanged) go to STORE2, a new or empty folder,
with ``tighten.csv`` (record, eps, L/U before and after, seconds) and ``index.csv``.  Replay
STORE2 (``softrank replay STORE2``) to validate the new ends.

``--eps`` chooses stored tolerances (matched by their nearest binary64 number) and the order in
which they share each record's budget; ``--only-unresolved`` skips tolerances already resolved;
``--records`` limits the work to some records (the others are copied); ``--lower-goal upper``
grows decoders past the resolving lower end, toward the upper end.  ``--jobs N`` tightens N
records at a time on a local Dask cluster (``--scheduler ADDRESS``: on a running one); a record
that cannot be read is reported on one line and not written, and the exit code is 2.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from softrank.cli.args import max_jobs, parse_count, path_arg
from softrank.cli.paths import check_outside, output_dir
from softrank.cli.progress import progress as progress_bar
from softrank.cli.summaries import by_eps, print_job_summary
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

DEFAULT_BUDGET = 120.0


EPILOG = """--json prints one object: {"store", "out", "records", "tried" ((record, eps) pairs), "malformed",
"errors" (one line each), "seconds", "table" (tighten.csv), "eps": [{"eps", "tried", "upper_lowered",
"lower_raised", "resolved_before", "resolved_after", "median_U_over_L_after"} per tolerance],
"exit_code"}."""


def configure(parser) -> None:
    parser.add_argument("store", metavar="STORE", type=path_arg, help="a bracketed SoftRank store (from softrank bracket or run)")
    parser.add_argument("--out", required=True, metavar="STORE2", type=path_arg,
                        help="write the tightened store here (a new or empty folder)")
    parser.add_argument("--eps", default=None,
                        help="stored tolerances to tighten, comma separated, in this order (default: all stored)")
    parser.add_argument("--budget", default=str(DEFAULT_BUDGET), metavar="SECONDS",
                        help=f"seconds per record, shared by its tolerances (default {DEFAULT_BUDGET:g})")
    parser.add_argument("--only-unresolved", action="store_true", help="skip tolerances already resolved")
    parser.add_argument("--records", default=None, metavar="ID,...",
                        help="tighten only these records (the others are copied unchanged)")
    parser.add_argument("--lower-goal", choices=("resolve", "upper"), default="resolve",
                        help="grow decoders up to the least lower end that resolves the bracket (default), "
                             "or up to the upper end")
    parser.add_argument("--jobs", default="1", metavar="N",
                        help="records tightened in parallel (one-thread Dask worker processes; default 1)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a running Dask scheduler whose workers see STORE and STORE2 at the same paths")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG


def parse_budget(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise InputError("arguments", "budget", f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise InputError("arguments", "budget", f"must be a positive number of seconds, got {text!r}")
    return value


def parse_records(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = [part.strip() for part in str(text).split(",") if part.strip()]
    if not ids:
        raise InputError("arguments", "records", "no record id given")
    return list(dict.fromkeys(ids))


def readable_records(store, records: list[str] | None) -> list[str] | None:
    """``records`` (None: every record) less those whose record.json is a FIFO, a device or a
    folder, or ``records`` itself when there is none.  The stored tolerances are read from the
    manifests of the records chosen, and such a manifest would block that read forever; those
    records are then copied, not tightened, and reported on one line each like any unreadable
    record."""
    from softrank.fastpath.store.files import special_manifest
    from softrank.replay.reader import record_entries

    folders = record_entries(store)
    special = {f.name for f in folders if special_manifest(f)}
    if not special:
        return records
    return [r for r in (records or [f.name for f in folders]) if r not in special]


def check_paths(store, out, eps_list, records) -> Path:
    """STORE must be a store holding the chosen records and tolerances; STORE2 must differ from
    it and be new or empty (nothing there is changed otherwise)."""
    from softrank.fastpath.tighten.store import check_selection
    from softrank.replay.reader import record_entries

    check_selection(store, None, records)  # InputError when STORE is not a store or an id is unknown
    if not record_entries(store):  # named here, before STORE2 is created (an empty run has nothing to write)
        raise InputError(str(store), "records", "no records in this store (nothing to tighten; nothing was written)")
    if eps_list is not None:  # the stored tolerances are read from the manifests: never from a FIFO
        check_selection(store, eps_list, readable_records(store, records))
    out_path = Path(out)
    if out_path.exists() and out_path.resolve() == Path(store).resolve():
        raise InputError(str(out), "out", "is the input store (tighten writes a new store; STORE is never changed)")
    check_outside(out, store)  # a folder inside STORE would change it
    return output_dir(out, empty=True)


def run(args) -> int:
    budget = parse_budget(args.budget)
    jobs = parse_count(args.jobs, "jobs", maximum=max_jobs())
    eps_list = None if args.eps is None else Tolerance.parse_list(args.eps, ordered=True)  # in that order, each once
    records = parse_records(args.records)
    out = check_paths(args.store, args.out, eps_list, records)
    from softrank.fastpath.runner import limit_threads
    from softrank.fastpath.tighten.store import tighten_store
    from softrank.replay.reader import record_entries

    limit_threads()
    total = len(record_entries(args.store))
    t0 = time.perf_counter()
    errors: list[str] = []
    with progress_bar(not args.no_progress, total, "tighten") as update:
        chosen = records if eps_list is None else readable_records(args.store, records)
        rows = tighten_store(args.store, out, eps_list, budget, args.only_unresolved, chosen,
                             progress=lambda done, _total: update(done), lower_goal=args.lower_goal,
                             jobs=jobs, scheduler=args.scheduler, errors=errors)
    for line in errors:
        print(f"softrank tighten: error: {line}", file=sys.stderr)
    malformed = f", {len(errors)} malformed (not written)" if errors else ""
    seconds = time.perf_counter() - t0
    per_eps = []
    for text, sel in by_eps(rows, "eps", "eps_value"):
        ratio = [r["upper_after"] / r["lower_after"] for r in sel if r["upper_after"] is not None]
        per_eps.append({"eps": text, "tried": len(sel),
                        "upper_lowered": sum(r["upper_after"] != r["upper_before"] for r in sel),
                        "lower_raised": sum(r["lower_after"] != r["lower_before"] for r in sel),
                        "resolved_before": sum(bool(r["resolved_before"]) for r in sel),
                        "resolved_after": sum(bool(r["resolved_after"]) for r in sel),
                        "median_U_over_L_after": statistics.median(ratio) if ratio else None})
    return print_job_summary(args, {"store": str(args.store), "out": str(out), "records": total, "tried": len(rows),
                                    "malformed": len(errors), "errors": errors, "seconds": seconds,
                                    "table": str(out / "tighten.csv")},
                             per_eps, f"softrank tighten: {total} records, {len(rows)} (record, eps) tried in "
                                      f"{seconds:.1f} s{malformed} -> {out} (table {out / 'tighten.csv'})", _eps_line)


def _eps_line(e: dict) -> str:
    ratio = float("nan") if e["median_U_over_L_after"] is None else e["median_U_over_L_after"]
    return (f"  eps {e['eps']}: {e['tried']} tried, upper lowered {e['upper_lowered']}, lower raised "
            f"{e['lower_raised']}, resolved {e['resolved_before']} -> {e['resolved_after']}, median U/L after "
            f"{ratio:.2f}")
