"""``softrank bench bracket``: bracket throughput and the time share of each construction and
certificate.

Operators: attention-like synthetic softmax matrices (logits ``beta Q K^T`` with d = 8 plus a
sink column), N = 128 and N = 256 (``--quick``: N = 64 and 128, fewer operators).  Each size is
bracketed at eps 0.15, 0.25, 0.35 in a store with a pool of 2 worker processes (the default of
``softrank bracket``), in ``fast`` mode (the default pipeline); the time share comes from the
per-record timers, and a ``full`` mode pass (every construction's own least rank) reports the
share of all six constructions.  Throughput is operators per minute of wall time.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

COMPONENTS = ("svd", "tsvd", "rwsvd", "altl1", "cpqr", "rpqr", "reprows", "frobenius", "projected", "decoder")


def attention_like(n: int, rng: np.random.Generator):
    d = 8
    Q = rng.normal(size=(n, d))
    K = rng.normal(size=(n, d))
    K[0] *= 0.2
    beta = float(rng.uniform(0.4, 1.0))
    H = beta * Q @ K.T
    H[:, 0] += rng.uniform(1.0, 4.0)  # a sink column, as in trained heads
    H -= H.max(axis=1, keepdims=True)
    E = np.exp(H)
    return Q, K, beta, E / E.sum(axis=1, keepdims=True)


def make_store(path: Path, n: int, count: int, seed: int) -> None:
    from softrank.replay.store import RecordWriter

    rng = np.random.default_rng(seed)
    for i in range(count):
        _, _, _, A = attention_like(n, rng)
        w = RecordWriter(path, f"bench-N{n}-{i}", provenance={"model": "synthetic", "family": "synthetic"})
        w.set_logits(np.log(A))  # benchmark only: rowsoftmax(log A) = A (no zero entries here)
        w.set_a_hat(A)
        w.commit()


def main(args) -> int:
    from softrank.fastpath.bracket import bracket_store

    quick = bool(getattr(args, "quick", False))
    repeats = max(1, int(getattr(args, "repeats", 1) or 1))
    sizes = (64, 128) if quick else (128, 256)
    count = 4 if quick else 8
    jobs = 2
    print(f"softrank bench bracket: {count} attention-like operators per size, eps 0.15/0.25/0.35, "
          f"{jobs} worker processes, median of {repeats} repeat(s)")
    share_fast: dict[str, float] = {}
    for n in sizes:
        walls, rows_all = [], []
        for r in range(repeats):
            with tempfile.TemporaryDirectory(prefix="softrank-bench-") as tmp:
                store = Path(tmp) / "store"
                make_store(store, n, count, seed=n + r)
                t0 = time.perf_counter()
                rows = bracket_store(store, jobs=jobs)
                walls.append(time.perf_counter() - t0)
                rows_all.extend(rows)
        wall = statistics.median(walls)
        per_min = 60.0 * count / wall
        ratios = [r["upper"] / r["lower"] for r in rows_all if abs(r["eps"] - 0.25) < 1e-12 and r["upper"]]
        print(f"  N = {n}: {per_min:.1f} operators/minute ({wall:.1f} s for {count}); median U/L at eps 0.25: "
              f"{statistics.median(ratios):.2f}")
        _accumulate(share_fast, rows_all)
    _print_share("fast mode (default pipeline)", share_fast)

    # full mode: every construction searched over its whole range, on fewer operators
    share_full: dict[str, float] = {}
    n = sizes[0]
    with tempfile.TemporaryDirectory(prefix="softrank-bench-") as tmp:
        store = Path(tmp) / "store"
        make_store(store, n, max(2, count // 2), seed=1000 + n)
        t0 = time.perf_counter()
        rows = bracket_store(store, jobs=jobs, mode="full")
        wall = time.perf_counter() - t0
    _accumulate(share_full, rows)
    print(f"  full mode, N = {n}: {60.0 * max(2, count // 2) / wall:.1f} operators/minute")
    _print_share("full mode (every construction's own least rank)", share_full)
    return 0


def _accumulate(share: dict[str, float], rows: list[dict]) -> None:
    seen = set()
    for r in rows:  # timers are per record (repeated on each eps row)
        if r["record_id"] in seen:
            continue
        seen.add(r["record_id"])
        for key, value in r.items():
            if key.startswith("time_") and value is not None:
                share[key[5:]] = share.get(key[5:], 0.0) + float(value)


def _print_share(title: str, share: dict[str, float]) -> None:
    total = sum(share.values()) or 1.0
    parts = [f"{name} {100 * share[name] / total:.1f}%" for name in COMPONENTS if name in share]
    print(f"  time share, {title}: " + ", ".join(parts))
