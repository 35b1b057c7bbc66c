"""``softrank bench scale [STORE]``: replay throughput in records per minute, in this process and on
a local dask.distributed cluster of 1 and of 2 worker processes, and a projection for W workers.

Without STORE a demonstration store is built in a temporary folder (``softrank.fastpath.demo``:
200 operators of 64 x 64; ``--quick``: 40 of 48).  Each configuration replays the whole store
through ``softrank.findings.replay_job.replay_store`` into its own folder (journal, tables and manifest
included); a cluster is started before its clock starts, and its start-up time is printed apart.
The tables of every configuration must be identical (the timing column aside), else exit 1.

Projection: with t1 the wall time per record on one dask worker and e = rate(2) / (2 rate(1)) the
measured two-worker efficiency, W workers replay about e W 60 / t1 records per minute (and at most
W 60 / t1).  It assumes the scheduler, the file system and the driver that writes the journal keep
up, which this machine cannot test beyond 2 workers.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from softrank.cli.output import print_json

PROJECTED = (4, 16, 64, 256)


def _tables(folder: Path) -> dict:
    import pyarrow.parquet as pq

    out = {}
    for name in ("replay", "verdicts"):
        table = pq.read_table(folder / f"{name}.parquet")
        out[name] = table.drop(["seconds"]) if "seconds" in table.column_names else table
    return out


def _timed(store, out: Path, repeats: int, **kw) -> float:
    """Median wall seconds of ``repeats`` replays of STORE into OUT."""
    from softrank.findings.replay_job import replay_store

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        replay_store(store, out, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(store, work: Path, repeats: int) -> dict:
    """Wall time and records per minute per configuration, and whether the tables agree."""
    from softrank.fastpath.runner import local_cluster
    from softrank.replay.reader import list_records

    n = len(list_records(store))
    runs = [{"config": "in-process (--jobs 1)", "workers": 1, "startup_s": 0.0,
             "wall_s": _timed(store, work / "serial", repeats, jobs=1), "out": work / "serial"}]
    for workers in (1, 2):
        t0 = time.perf_counter()
        with local_cluster(workers) as cluster:
            startup = time.perf_counter() - t0
            out = work / f"dask{workers}"
            wall = _timed(store, out, repeats, scheduler=cluster.scheduler_address)
        runs.append({"config": "dask local cluster", "workers": workers, "startup_s": startup, "wall_s": wall,
                     "out": out})
    reference = _tables(runs[0]["out"])
    identical = all(all(_tables(r["out"])[k].equals(reference[k]) for k in reference) for r in runs[1:])
    for r in runs:
        r["records_per_min"] = 60 * n / r["wall_s"]
        r.pop("out")
    return {"records": n, "runs": runs, "tables_identical": identical}


def project(result: dict) -> dict:
    """Per-record time on one worker, the two-worker efficiency and records per minute for W workers."""
    one, two = result["runs"][1], result["runs"][2]
    t1 = one["wall_s"] / result["records"]
    efficiency = two["records_per_min"] / (2 * one["records_per_min"])
    return {"seconds_per_record_one_worker": t1, "two_worker_efficiency": efficiency,
            "projection": [{"workers": w, "records_per_min_ideal": 60 * w / t1,
                            "records_per_min_at_measured_efficiency": 60 * w / t1 * min(efficiency, 1.0)}
                           for w in PROJECTED]}


def _store(args, tmp: Path):
    if args.target:
        return args.target, "given"
    from softrank.fastpath.demo import build_demo_store

    operators, size = (40, 48) if args.quick else (200, 64)
    build_demo_store(tmp / "store", operators, size, seed=0)
    return tmp / "store", f"demo, {operators} operators of {size} x {size}"


def main(args) -> int:
    repeats = 1 if args.quick else min(args.repeats, 3)
    with tempfile.TemporaryDirectory(prefix="softrank-bench-scale-") as tmp:
        store, what = _store(args, Path(tmp))
        result = measure(store, Path(tmp), repeats)
    result.update(project(result), store=str(store), store_kind=what, repeats=repeats)
    if args.json:
        print_json(result)
    else:
        _print(result)
    return 0 if result["tables_identical"] else 1


def _print(r: dict) -> None:
    print(f"bench scale: {r['records']} records ({r['store_kind']}), median of {r['repeats']} replay(s) each")
    print(f"{'configuration':<24}{'workers':>8}{'wall s':>9}{'records/min':>13}{'cluster start s':>17}")
    for run in r["runs"]:
        print(f"{run['config']:<24}{run['workers']:>8}{run['wall_s']:>9.2f}{run['records_per_min']:>13.0f}"
              f"{run['startup_s']:>17.2f}")
    print(f"per record on one dask worker: {1000 * r['seconds_per_record_one_worker']:.1f} ms; "
          f"two-worker efficiency {r['two_worker_efficiency']:.2f}")
    for p in r["projection"]:
        print(f"projected, {p['workers']:>4} workers: {p['records_per_min_at_measured_efficiency']:>10.0f} records/min "
              f"(ideal {p['records_per_min_ideal']:.0f})")
    print(f"tables identical across configurations: {'yes' if r['tables_identical'] else 'NO'}")
