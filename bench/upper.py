"""``softrank bench replay``: time of validated versus plain float64 checking of upper witnesses.

For m = N in (256, 512) and ranks (8, 32, 64), one random attention-like operator, a truncated-SVD
witness, and three checks of ``||A - X Y^T||_inf``:

- plain float64 (``fastpath.float64.max_row_l1``, what a research pipeline runs; no rounding bound),
- the binary64-bound route (proven a-priori error bounds, proofs/binary64_error_bounds.md),
- the Arb route (``--strict``).

Medians over ``--repeats`` runs, measured in this one run; the ratios are what to compare. The
one-off Arb enclosure of A (exp in balls, shared by every witness and tolerance of a record) is
reported separately.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from softrank.fastpath.float64 import max_row_l1, rowsoftmax64
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure
from softrank.validated.upper_witness import witness_error_ball, witness_error_upper_binary64


def interleaved_medians(fns, repeats: int) -> list[float]:
    """Median time of each function, run in alternation so that machine noise hits all alike."""
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t)
    return [statistics.median(ts) for ts in times]


def main(args) -> int:
    # One BLAS thread: on a shared 2-core machine, multi-threaded BLAS timings are dominated by
    # thread wake-ups (a 15 ms floor was seen here), which hides the cost being compared.
    with threadpool_limits(limits=1):
        return _main(args)


def _main(args) -> int:
    sizes = (128,) if args.quick else (256, 512)
    ranks = (8, 32) if args.quick else (8, 32, 64)
    repeats = args.repeats
    arb_repeats = 1 if args.quick else min(3, repeats)
    rng = np.random.default_rng(0)
    print("one core (BLAS limited to 1 thread); medians of interleaved repeats")
    print(f"{'m=N':>5} {'rank':>5} {'float64 ms':>11} {'b64-bound ms':>13} {'ratio':>6} {'arb ms':>9} {'ratio':>7} {'enclosure ms':>13}")
    ratios = []
    for n in sizes:
        h = 4.0 * rng.normal(size=(n, 8)) @ rng.normal(size=(8, n)) / np.sqrt(8) + rng.normal(size=(n, n))
        a_hat = rowsoftmax64(h)
        t = time.perf_counter()
        enc = rowsoftmax_enclosure(logits_balls(logits=h))
        t_enc = time.perf_counter() - t
        u, s, vt = np.linalg.svd(a_hat)
        for k in ranks:
            x, y = np.ascontiguousarray(u[:, :k] * s[:k]), np.ascontiguousarray(vt[:k].T)
            t_plain, t_b64 = interleaved_medians(
                [lambda: max_row_l1(a_hat, x, y),
                 lambda: witness_error_upper_binary64(enc.a_mid, enc.a_rad, x, y)], max(repeats, 31))
            t_arb, = interleaved_medians([lambda: witness_error_ball(enc.balls, x, y)], arb_repeats)
            ratios.append(t_b64 / t_plain)
            print(f"{n:>5} {k:>5} {1e3 * t_plain:>11.3f} {1e3 * t_b64:>13.3f} {t_b64 / t_plain:>6.2f} "
                  f"{1e3 * t_arb:>9.1f} {t_arb / t_plain:>7.0f} {1e3 * t_enc:>13.1f}")
    print(f"binary64-bound / float64: median ratio {statistics.median(ratios):.2f}, max {max(ratios):.2f} (target <= 3)")
    return 0
