"""Bracketing stored records: ``bracket_record`` brackets one record (``bracket_matrix``) and
rewrites it with ``RecordWriter.from_record`` (only the best witness per eps and the certificates
achieving max L are stored); ``bracket_store`` does every record of a store with a process pool
and writes the summary table ``bracket.csv`` next to ``records/``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from softrank.fastpath.bracket import (ALL_CONSTRUCTIONS, DEFAULT_EPS, EpsBracket, Timer,
                                       bracket_matrix, resolved)
from softrank.fastpath.files import write_csv
from softrank.fastpath.writer import RecordWriter, write_index
from softrank.replay.reader import list_records, read_record

PRODUCER = "softrank.fastpath.bracket 0.1"
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def summary_row(record, b: EpsBracket, timer: Timer, seconds: float) -> dict:
    """One row of ``bracket.csv``: the bracket at one eps, its baseline and the time per part."""
    prov = record.provenance
    m, n = record.shape
    row = {"record_id": record.record_id, "model": str(prov.get("model", "")),
           "family": str(prov.get("family", "")), "layer": prov.get("layer"), "head": prov.get("head"),
           "m": m, "N": n, "eps": b.eps, "lower": b.lower, "upper": b.upper,
           "lower_kind": "+".join(c.kind for c in b.certificates),
           "upper_construction": None if b.witness is None else b.witness.construction,
           "resolved": resolved(b.lower, b.upper, min(m, n)),
           "baseline_lower": b.baseline_lower, "baseline_upper": b.baseline_upper,
           "baseline_resolved": resolved(b.baseline_lower, b.baseline_upper, min(m, n)),
           "seconds": seconds}
    for name in ALL_CONSTRUCTIONS:
        row[f"rank_{name}"] = b.ranks.get(name)
    for kind in ("frobenius", "projected", "decoder"):
        row[f"lower_{kind}"] = b.lower_by_kind.get(kind)
    for name, s in timer.seconds.items():
        row[f"time_{name}"] = s
    return row


def bracket_record(folder, out_store, eps_list=DEFAULT_EPS, mode: str = "fast") -> list[dict]:
    """Bracket one stored record and write it (with its tolerances) into ``out_store``.
    Returns one summary row per eps."""
    t0 = time.perf_counter()
    record = read_record(folder)
    timer = Timer()
    result = bracket_matrix(record.a_hat, eps_list, mode=mode, timer=timer)
    with RecordWriter.from_record(out_store, record, provenance_update={"bracketed_by": PRODUCER}) as writer:
        for e in sorted(result):
            b = result[e]
            upper = None if b.witness is None else (b.witness.X, b.witness.Y, b.witness.construction)
            writer.add_tolerance(e, upper=upper, lower=[c.as_record() for c in b.certificates],
                                 float64={"lower": b.lower, "upper": b.upper, "verdicts": b.verdicts})
    seconds = time.perf_counter() - t0
    return [summary_row(record, result[e], timer, seconds) for e in sorted(result)]


def limit_threads() -> None:
    """One BLAS thread per process (the pool supplies the parallelism; oversubscribed BLAS
    threads make a 128 x 128 SVD 20 times slower on two shared cores, and numpy's and scipy's
    BLAS libraries each spinning their own threads make a small triangular solve 50 times
    slower)."""
    for var in BLAS_THREAD_VARS:
        os.environ.setdefault(var, "1")
    try:
        import scipy.linalg  # noqa: F401  (load scipy's own BLAS too, so that the limit reaches it)
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:
        pass


def _worker(args):
    folder, out_store, eps_list, mode = args
    return bracket_record(folder, out_store, eps_list, mode)


def _start_method() -> str:
    """``fork`` on Linux (workers start in milliseconds with the parent's modules; each limits
    its BLAS threads to one on start), ``spawn`` elsewhere (the environment then sets one BLAS
    thread before numpy loads)."""
    import multiprocessing

    return "fork" if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods() else "spawn"


def _run_pool(tasks: list[tuple], jobs: int, progress) -> list[dict]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    import multiprocessing

    for var in BLAS_THREAD_VARS:
        os.environ[var] = "1"  # read by numpy's BLAS when a spawned worker imports it
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(_start_method()),
                             initializer=limit_threads) as pool:
        futures = [pool.submit(_worker, t) for t in tasks]
        for i, fut in enumerate(as_completed(futures)):
            rows.extend(fut.result())
            if progress:
                progress(i + 1, len(tasks))
    return rows


def bracket_store(store, out_store=None, eps_list=DEFAULT_EPS, jobs: int = 1, mode: str = "fast",
                  progress=None) -> list[dict]:
    """Bracket every record of ``store`` (into ``out_store``, default in place) with a process
    pool of ``jobs`` workers; returns the summary rows and writes ``bracket.csv`` next to the
    records.  ``progress(done, total)`` is called after each record."""
    out_store = Path(out_store or store)
    tasks = [(str(f), str(out_store), tuple(eps_list), mode) for f in list_records(store)]
    if jobs > 1 and len(tasks) > 1:
        rows = _run_pool(tasks, jobs, progress)
    else:
        limit_threads()
        rows = []
        for i, t in enumerate(tasks):
            rows.extend(bracket_record(*t))
            if progress:
                progress(i + 1, len(tasks))
    rows.sort(key=lambda r: (r["record_id"], r["eps"]))
    write_index(out_store)
    write_csv(out_store / "bracket.csv", rows)
    return rows
