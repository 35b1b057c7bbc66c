"""``softrank attack STORE``: try to beat every validated lower end of a store.

For each record the validated replay (``softrank.replay.engine``) gives the proved lower ends;
``softrank.studies.attack.attack`` then searches for a matrix of rank L - 1 within eps with every upper
construction and ``--restarts`` restarts of the alternating l1.  A witness the checker proves at
rank L - 1 would contradict a proved lower end: it is reported as a soundness failure (exit 1).
Writes ``attack.csv`` / ``attack.json`` into ``--out`` (default STORE/attack).
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from softrank.cli.args import check_count, max_jobs, path_arg
from softrank.cli.paths import check_not_input, output_dir, store_records
from softrank.cli.output import print_json
from softrank.cli.progress import progress
from softrank.fastpath.runner import RecordsJob
from softrank.errors import InputError

MAX_RESTARTS = 10_000  # restarts per lower end (default 8)


def configure(parser) -> None:
    parser.add_argument("store", type=path_arg, help="store folder (records/ + index.csv)")
    parser.add_argument("--out", default=None, type=path_arg, help="output folder (default: STORE/attack)")
    parser.add_argument("--restarts", type=int, default=8, help="alternating-l1 restarts per lower end (default 8)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="records attacked in parallel (>= 1; above 1: a local dask cluster of N processes)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _attack_folder(args: tuple[str, int]):
    from softrank.studies.attack.attack import attack_record
    from softrank.replay.engine import replay_record
    from softrank.replay.reader import read_record

    folder, restarts = args
    try:
        record = read_record(folder)
    except InputError as err:
        return [], err.one_line()
    result = replay_record(record)
    lowers = {t.eps: t.validated_lower for t in result.tolerances if t.validated_lower is not None}
    return [asdict(r) for r in attack_record(record, lowers, restarts=restarts)], None


def run(args) -> int:
    from softrank.fastpath.store.files import write_csv, write_json
    from softrank.replay.reader import record_entries

    jobs = check_count(args.jobs, "jobs", maximum=max_jobs())
    restarts = check_count(args.restarts, "restarts", minimum=0, maximum=MAX_RESTARTS)
    folders = [str(f) for f in record_entries(args.store)]  # an entry that is not a folder: one malformed line
    if not folders:  # before OUT is touched
        raise InputError(str(args.store), "records", "no records in this store (nothing to attack; nothing was written)")
    out = Path(args.store) / "attack" if args.out is None else args.out
    check_not_input(out, inside=[store_records(args.store)], equal=[(args.store, f"the input store {args.store}")],
                    writes=("attack.csv", "attack.json"))
    out = output_dir(out)
    job = RecordsJob(folders)
    with progress(not args.no_progress and sys.stderr.isatty(), job.total, "attack") as update:
        payloads = job.run(_attack_folder, lambda f: (f, restarts), jobs=jobs, progress=lambda done, _: update(done))
    results = [payloads[name] for name in job.names()]  # in store order
    rows = [row for r_rows, _ in results for row in r_rows]
    errors = [error for _, error in results if error]
    write_csv(out / "attack.csv", rows, fields=list(rows[0]) if rows else ["record_id"])
    write_json(out / "attack.json", rows)
    summary = {"records": len(folders), "malformed": len(errors), "lower_ends": len(rows),
               "attempts": sum(r["attempts"] for r in rows),
               "float64_near_misses": sum(r["float64_beaten"] for r in rows),
               "beaten": sum(r["validated_beaten"] for r in rows), "table": str(out / "attack.csv")}
    for line in errors:
        print(f"softrank attack: error: {line}", file=sys.stderr)
    for r in rows:
        if r["validated_beaten"]:
            print(f"softrank attack: SOUNDNESS FAILURE: {r['record_id']} eps {r['eps']}: a rank {r['lower'] - 1} "
                  f"witness is proved within eps although r_eps >= {r['lower']} was proved", file=sys.stderr)
    if args.json:
        print_json(summary)
    else:
        print(f"attacked {summary['lower_ends']} validated lower ends of {summary['records']} records "
              f"({summary['attempts']} constructions tried): beaten {summary['beaten']}, float64 near misses "
              f"{summary['float64_near_misses']}; table: {summary['table']}")
    return 1 if summary["beaten"] else 2 if errors else 0
