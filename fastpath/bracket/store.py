"""Bracketing stored records: ``bracket_record`` brackets one record (``bracket_matrix``) and
rewrites it with ``RecordWriter.from_record`` (only the best witness per eps and the certificates
achieving max L are stored); ``bracket_task`` is that work for one record as plain data (its
table rows and the SHA-256 of the source and the written ``record.json``), with one BLAS thread,
for this process, a process pool or a Dask worker; ``bracket_store`` does every record of a store
with a process pool and writes ``index.csv`` and the summary table ``bracket.csv`` next to
``records/`` (``write_tables``).  ``softrank bracket`` (``cli/bracket.py``) adds a journal,
``--resume`` and Dask on top of ``bracket_task`` and ``write_tables``.

Tolerances are floats (computed and stored as binary64) or exact rationals (``Fraction`` or text
such as ``"3/20"``: computed with the nearest float, stored as exact text).  In the rows ``eps``
is the float and ``eps_text`` the exact text; ``bracket.csv`` prints ``eps`` as that text and
``eps_value`` as the float."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

from softrank.fastpath.bracket.matrix import (ALL_CONSTRUCTIONS, DEFAULT_EPS, EpsBracket, Timer,
                                       bracket_matrix, resolved)
from softrank.exact.rational import parse_rational
from softrank.fastpath.capture.labels import record_label
from softrank.fastpath.store.files import write_csv
from softrank.fastpath.store.writer import RecordWriter, exact_text, recover_store, write_index
from softrank.replay.reader import read_record, record_entries
from softrank.validated.errors import InputError

PRODUCER = "softrank.fastpath.bracket 0.1"
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
COMPLETION = ("bracket-manifest.json", "bracket.csv")  # outputs that mark a finished run


def tolerances(eps_list) -> dict[float, float | Fraction]:
    """``float used in the computation -> tolerance as stored``: a float stays a float; a
    ``Fraction`` or text (``"3/20"``, ``"0.15"``) is that exact rational.  Equal values are one
    tolerance; two different ones with the same nearest float are a ``ValueError``."""
    out: dict[float, float | Fraction] = {}
    for e in eps_list:
        value = parse_rational(e, "arguments", "eps") if isinstance(e, str) else e
        key = float(value)
        if key in out and Fraction(out[key]) != Fraction(value):
            raise ValueError(f"tolerances {out[key]} and {value} have the same nearest float {key!r}")
        out[key] = value
    return out


def eps_text(value) -> str:
    """The exact text of a tolerance: a rational's ``exact_text``; a float's shortest text when
    that is its exact value (``0.25``), else ``binary64(0.15)`` (as ``softrank replay`` prints)."""
    if isinstance(value, float):
        return repr(value) if Fraction(repr(value)) == Fraction(value) else f"binary64({value!r})"
    return exact_text(value)


def summary_row(record, b: EpsBracket, timer: Timer, seconds: float, exact=None) -> dict:
    """One row of ``bracket.csv``: the bracket at one eps, its baseline and the time per part."""
    prov = record.provenance
    m, n = record.shape
    row = {"record_id": record.record_id, "model": str(prov.get("model", "")),
           "family": record_label(prov), "layer": prov.get("layer"), "head": prov.get("head"),
           "m": m, "N": n, "eps": b.eps, "eps_text": eps_text(b.eps if exact is None else exact),
           "lower": b.lower, "upper": b.upper,
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
    return _bracket_and_write(folder, out_store, eps_list, mode)[0]


def _bracket_and_write(folder, out_store, eps_list, mode: str) -> tuple[list[dict], Path]:
    """``bracket_record``'s rows and the folder of the written record."""
    t0 = time.perf_counter()
    record = read_record(folder)
    exact = tolerances(eps_list)
    timer = Timer()
    result = bracket_matrix(record.a_hat, list(exact), mode=mode, timer=timer)
    with RecordWriter.from_record(out_store, record, provenance_update={"bracketed_by": PRODUCER}) as writer:
        for e in sorted(result):
            b = result[e]
            upper = None if b.witness is None else (b.witness.X, b.witness.Y, b.witness.construction)
            writer.add_tolerance(exact[e], upper=upper, lower=[c.as_record() for c in b.certificates],
                                 float64={"lower": b.lower, "upper": b.upper, "verdicts": b.verdicts})
    seconds = time.perf_counter() - t0
    rows = [summary_row(record, result[e], timer, seconds, exact[e]) for e in sorted(result)]
    return rows, Path(out_store) / "records" / record.record_id


def file_sha256(path) -> str:
    """SHA-256 of a file's bytes (``""`` when it cannot be read)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def bracket_task(args: tuple) -> dict:
    """One record, ``(folder, out_store, eps_list, mode)``, bracketed and written with one BLAS
    thread (scipy's too); returns plain data: ``record_id``, its table ``rows``, and the SHA-256
    of the source ``record.json`` before and of the written one after (``source_sha256``,
    ``written_sha256``); a malformed record gives no rows and its one-line ``error``."""
    folder, out_store, eps_list, mode = args
    import scipy.linalg  # noqa: F401  (loaded first, so that the limit reaches scipy's BLAS too)
    from threadpoolctl import threadpool_limits

    source = file_sha256(Path(folder) / "record.json")
    try:
        with threadpool_limits(limits=1):
            rows, written = _bracket_and_write(folder, out_store, eps_list, mode)
    except InputError as err:  # a malformed record: reported, and the others are still bracketed
        return {"record_id": Path(folder).name, "rows": [], "error": err.one_line(), "source_sha256": source,
                "written_sha256": ""}
    return {"record_id": written.name, "rows": rows, "source_sha256": source,
            "written_sha256": file_sha256(written / "record.json")}


def table_rows(rows: list[dict]) -> list[dict]:
    """Rows as ``bracket.csv`` prints them: ``eps`` the exact text, ``eps_value`` the float."""
    out = []
    for r in rows:
        row = {}
        for key, value in r.items():
            if key == "eps":
                row["eps"], row["eps_value"] = r.get("eps_text", value), value
            elif key != "eps_text":
                row[key] = value
        out.append(row)
    return out


def start_run(out_store) -> None:
    """Before a run writes into ``out_store``: undo what killed writers left, and remove the
    outputs that mark a finished run (so a partial output never looks complete)."""
    recover_store(out_store)
    for name in COMPLETION:
        (Path(out_store) / name).unlink(missing_ok=True)


def write_tables(out_store, rows: list[dict]) -> Path:
    """``index.csv`` and ``bracket.csv`` (rows sorted by record and eps); returns the table's path."""
    out_store = Path(out_store)
    rows = sorted(rows, key=lambda r: (r["record_id"], r["eps"]))
    write_index(out_store)
    return write_csv(out_store / "bracket.csv", table_rows(rows))


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
        futures = [pool.submit(bracket_task, t) for t in tasks]
        for i, fut in enumerate(as_completed(futures)):
            rows.extend(fut.result()["rows"])
            if progress:
                progress(i + 1, len(tasks))
    return rows


def bracket_store(store, out_store=None, eps_list=DEFAULT_EPS, jobs: int = 1, mode: str = "fast",
                  progress=None) -> list[dict]:
    """Bracket every record of ``store`` (into ``out_store``, default in place) with a process
    pool of ``jobs`` workers; returns the summary rows and writes ``bracket.csv`` next to the
    records.  ``progress(done, total)`` is called after each record."""
    out_store = Path(out_store or store)
    recover_store(store)
    tasks = [(str(f), str(out_store), tuple(eps_list), mode) for f in record_entries(store)]
    tolerances(eps_list)  # two tolerances with one nearest float: an error before any work
    start_run(out_store)
    if jobs > 1 and len(tasks) > 1:
        rows = _run_pool(tasks, jobs, progress)
    else:
        limit_threads()
        rows = []
        for i, t in enumerate(tasks):
            rows.extend(bracket_task(t)["rows"])
            if progress:
                progress(i + 1, len(tasks))
    rows.sort(key=lambda r: (r["record_id"], r["eps"]))
    write_tables(out_store, rows)
    return rows
