"""``softrank bench bracket``: bracket throughput and the time share of each construction and
certificate.

Operators: real ones extracted (untimed) from the installed models -- SmolLM2 common-prefix
blocks at N = 128 and all-MiniLM-L6-v2 operators at N = 256, 6 each (``--quick``: MiniLM at
N = 128 and 256, 2 each); attention-like synthetic softmax matrices (logits ``beta Q K^T``,
d = 4, plus a sink column) when a model is not installed.  Each case is bracketed at eps 0.15,
0.25, 0.35 with a pool of 2 worker processes (the default of ``softrank bracket``), in ``fast``
mode; the time share of each construction and certificate comes from the per-record timers.
Throughput is operators per minute of wall time; the cost per operator (wall time times workers
over operators) is also given in units of one float64 SVD of an operator of the case, timed in the
same run with one BLAS thread ("SVD-equivalents").  ``--json`` prints one object with, per family,
``ops_per_minute`` and ``svd_equivalents``.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from softrank.exact.tolerance import Tolerance
from softrank.fastpath.float64 import rowsoftmax64

QUARTER = Tolerance.parse("0.25")  # the tolerance of the U/L median

COMPONENTS = ("svd", "tsvd", "rwsvd", "altl1", "cpqr", "rpqr", "reprows", "frobenius", "projected", "decoder")


def attention_like(n: int, rng: np.random.Generator):
    d = 4
    Q = rng.normal(size=(n, d))
    K = rng.normal(size=(n, d))
    K[0] *= 0.2
    beta = float(rng.uniform(0.8, 1.5))
    H = beta * Q @ K.T
    H[:, 0] += rng.uniform(3.0, 5.0)  # a sink column carrying most of the mass, as in trained heads
    return Q, K, beta, rowsoftmax64(H)


def make_store(path: Path, n: int, count: int, seed: int) -> None:
    from softrank.fastpath.store.writer import RecordWriter

    rng = np.random.default_rng(seed)
    for i in range(count):
        _, _, _, A = attention_like(n, rng)
        with RecordWriter(path, f"bench-N{n}-{i}", provenance={"model": "synthetic", "family": "synthetic"}) as w:
            w.set_logits(np.log(A))  # benchmark only: rowsoftmax(log A) = A (no zero entries here)
            w.set_a_hat(A)


def _real_store(path: Path, model: str, n: int, count: int) -> bool:
    """Extract ``count`` operators of width n from a real model into ``path`` (not timed)."""
    try:
        from softrank.fastpath.capture.extract import extract_to_store
    except ImportError:
        return False
    opts = {"max_operators": count, "device": "cpu", "progress": False, "sources": 2}
    if model == "smollm2":
        opts.update(tokens=2 * n, widths=[n])
    else:
        opts.update(tokens=n)
    try:
        return len(extract_to_store(model, path, **opts)) > 0
    except Exception as err:  # the models are optional for the benchmark
        print(f"  ({model}: extraction failed, {type(err).__name__}: {err}; using synthetic operators)")
        return False


def svd_seconds(store: Path, repeats: int = 7) -> float:
    """Median time of one float64 SVD of the store's first operator, one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from softrank.replay.reader import list_records, read_record

    A = np.ascontiguousarray(read_record(list_records(store)[0]).a_hat)
    times = []
    with threadpool_limits(1):
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.linalg.svd(A)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bench_case(tmp: str, model: str, n: int, count: int, repeats: int, jobs: int) -> dict:
    """Extract (untimed), then bracket ``repeats`` copies; the measured figures of the case."""
    from contextlib import ExitStack

    from softrank.fastpath.bracket.store import bracket_store
    from softrank.fastpath.runner import local_cluster

    src = Path(tmp) / f"src-{model}-{n}"
    real = _real_store(src, model, n, count)
    if not real:
        make_store(src, n, count, seed=n)
    time.sleep(0.5)  # let the threads of the extraction settle before timing the SVD
    t_svd = svd_seconds(src)
    walls, rows_all = [], []
    with ExitStack() as stack:  # the workers are started before the clock starts (as in bench scale)
        scheduler = stack.enter_context(local_cluster(jobs)).scheduler_address if jobs > 1 else None
        for r in range(repeats):
            store = Path(tmp) / f"run-{model}-{n}-{r}"
            shutil.copytree(src, store)
            t0 = time.perf_counter()
            rows_all.extend(bracket_store(store, jobs=jobs, scheduler=scheduler))
            walls.append(time.perf_counter() - t0)
    wall = statistics.median(walls)
    ratios = [r["upper"] / r["lower"] for r in rows_all
              if Tolerance.from_printed(r["eps_text"]) == QUARTER and r["upper"]]
    return {"real": real, "wall": wall, "rows": rows_all, "svd_seconds": t_svd,
            "ops_per_minute": 60.0 * count / wall, "svd_equivalents": wall * jobs / count / t_svd,
            "median_U_over_L": statistics.median(ratios)}


def main(args) -> int:
    import json

    quick = bool(getattr(args, "quick", False))
    repeats = max(1, int(getattr(args, "repeats", 1) or 1))
    as_json = bool(getattr(args, "json", False))
    # (label, model, N): real operators when the model packages are installed, else synthetic
    cases = ([("MiniLM", "minilm", 128), ("MiniLM", "minilm", 256)] if quick
             else [("SmolLM2 block", "smollm2", 128), ("MiniLM", "minilm", 256)])
    count, jobs = (2 if quick else 6), 2
    say = (lambda *a: None) if as_json else print
    say(f"softrank bench bracket: {count} operators per case, eps 0.15/0.25/0.35, {jobs} worker processes, "
        f"median of {repeats} repeat(s); extraction not timed")
    share_all: dict[str, float] = {}
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="softrank-bench-") as tmp:
        for label, model, n in cases:
            res = _bench_case(tmp, model, n, count, repeats, jobs)
            label = label if res["real"] else "synthetic"
            key = f"{model}-{n}" if quick else model
            out[key if res["real"] else f"synthetic-{n}"] = {
                "N": n, "operators": count, "ops_per_minute": round(res["ops_per_minute"], 2),
                "svd_equivalents": round(res["svd_equivalents"], 1), "svd_ms": round(1e3 * res["svd_seconds"], 3),
                "seconds": round(res["wall"], 2), "median_U_over_L_eps_0.25": round(res["median_U_over_L"], 3)}
            say(f"  {label}, N = {n}: {res['ops_per_minute']:.1f} operators/minute ({res['wall']:.1f} s for "
                f"{count}); {res['svd_equivalents']:.0f} SVD-equivalents per operator (one SVD "
                f"{1e3 * res['svd_seconds']:.2f} ms); median U/L at eps 0.25: {res['median_U_over_L']:.2f}")
            _accumulate(share_all, res["rows"])
            if not as_json:
                _print_share(f"{label} N = {n}", _accumulate({}, res["rows"]))
    if as_json:
        print(json.dumps(out, sort_keys=True))
    else:
        _print_share("all cases", share_all)
    return 0


def _accumulate(share: dict[str, float], rows: list[dict]) -> dict[str, float]:
    seen = set()
    for r in rows:  # timers are per record (repeated on each eps row)
        if r["record_id"] in seen:
            continue
        seen.add(r["record_id"])
        for key, value in r.items():
            if key.startswith("time_") and value is not None:
                share[key[5:]] = share.get(key[5:], 0.0) + float(value)
    return share


def _print_share(title: str, share: dict[str, float]) -> None:
    total = sum(share.values()) or 1.0
    parts = [f"{name} {100 * share[name] / total:.1f}%" for name in COMPONENTS if name in share]
    print(f"  time share, {title}: " + ", ".join(parts))
