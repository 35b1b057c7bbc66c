"""Which end of a fast-path bracket is loose: small cells cut from stored operators, bracketed by
the fast path (``bracket_matrix``), then tightened (``descend_minimax``, ``grow_decoder``), and
decided exactly by the oracle (``softrank.oracle.search.profile``).

A cell is an n x n sub-block of a record's ``a_hat`` (the leading one, or random rows and columns
from a seeded generator), its rows renormalised to sum 1 and rounded to multiples of 1/1024 (the
largest entry of a row absorbs the rounding, so every row sums to exactly 1): a rational matrix
whose binary64 values are exact, so the fast path and the oracle see the same matrix.  Per cell
and tolerance the study reports the fast-path L and U, the tightened L and U, and the oracle's
exact bracket from its reductions and sub-cells (no witness search: too slow at n = 8), the
tightened witness checked exactly in rationals as a second exact upper end, and ``exact_rank``
where the two exact ends meet.

    softrank study tighten-cells STORE --records ID,... --sizes 6,8 --cells 2 --out FILE.csv
"""

from __future__ import annotations

import signal
import time
from fractions import Fraction

import numpy as np
from softrank.fastpath.bracket.matrix import bracket_matrix
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.tighten.lower import grow_decoder
from softrank.fastpath.tighten.upper import descend_minimax
from softrank.replay.reader import read_record

GRID = 1024  # cell entries are multiples of 1/GRID
EPS = (Fraction(3, 20), Fraction(1, 4), Fraction(7, 20))


def cut_cell(A: np.ndarray, n: int, rng: np.random.Generator | None) -> np.ndarray:
    """The leading n x n block (``rng`` None) or random rows and columns, rows renormalised and
    rounded to multiples of 1/GRID with exact unit row sums (as integers: the cell is this / GRID)."""
    if rng is None:
        rows, cols = np.arange(n), np.arange(n)
    else:
        rows = np.sort(rng.choice(A.shape[0], n, replace=False))
        cols = np.sort(rng.choice(A.shape[1], n, replace=False))
    B = A[np.ix_(rows, cols)]
    B = B / B.sum(axis=1, keepdims=True)
    Z = np.rint(B * GRID).astype(np.int64)
    top = Z.argmax(axis=1)
    Z[np.arange(n), top] += GRID - Z.sum(axis=1)
    return Z


def fast_and_tight(Bf: np.ndarray, eps: float, seconds: float) -> tuple[dict, np.ndarray | None]:
    """The fast-path bracket at ``eps`` and the bracket after tightening (``seconds`` each end),
    and the tightened witness's product ``X Y^T`` (None without a witness)."""
    b = bracket_matrix(Bf, [eps])[eps]
    op = OperatorCache(Bf)
    lower, w = b.lower, b.witness
    if w is not None:
        w = descend_minimax(op, w, eps, lower, time.perf_counter() + seconds)
    dec = [c for c in b.certificates if c.kind == "decoder"]
    if dec and w is not None and w.rank > lower:
        lower = max(lower, grow_decoder(Bf, dec[0], eps, w.rank, time.perf_counter() + seconds).lower)
    row = {"fast_lower": b.lower, "fast_upper": b.upper, "tight_lower": lower,
           "tight_upper": None if w is None else w.rank}
    return row, None if w is None else (w.X, w.Y)


def exact_witness_rank(Z: np.ndarray, factors, eps: Fraction) -> int | None:
    """The rank of the float witness when ``||A - X Y^T||_inf <= eps`` holds exactly in rationals
    (A = Z / GRID; the binary64 factors read as exact rationals), else None."""
    if factors is None:
        return None
    X, Y = ([[Fraction(float(v)) for v in row] for row in F] for F in factors)
    k = len(X[0]) if X else 0
    for i, row in enumerate(Z):
        err = sum(abs(Fraction(int(a), GRID) - sum(X[i][t] * Y[j][t] for t in range(k))) for j, a in enumerate(row))
        if err > eps:
            return None
    return k


class _Timeout(Exception):
    pass


def exact_profile(Z: np.ndarray, eps: Fraction, timeout: float) -> dict:
    """The oracle's exact bracket (every route of ``softrank.oracle.search.profile``), stopped after
    ``timeout`` seconds (then None)."""
    from softrank.oracle.search import profile

    A = [[Fraction(int(v), GRID) for v in row] for row in Z]
    t0 = time.perf_counter()

    def alarm(*_):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        prof = profile(A, eps)
        lower, upper = prof.lower, prof.upper
    except _Timeout:
        lower = upper = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return {"oracle_lower": lower, "oracle_upper": upper, "oracle_seconds": round(time.perf_counter() - t0, 3)}


def study(store, records, sizes, cells: int, seed: int = 0, eps_list=EPS, seconds: float = 5.0,
          timeout: float = 60.0) -> list[dict]:
    """One row per (record, cell, eps): the leading block and ``cells - 1`` random ones per size.
    ``exact_upper`` is the least of the oracle's upper end and the tightened witness's rank when
    that witness passes the exact check; ``exact_rank`` is set when it meets the oracle's lower end."""
    rng = np.random.default_rng(seed)
    rows = []
    for rid in records:
        A = read_record(f"{store}/records/{rid}").a_hat
        for n in sizes:
            for c in range(cells):
                Z = cut_cell(A, n, None if c == 0 else rng)
                for eps in eps_list:
                    row = {"record_id": rid, "n": n, "cell": "leading" if c == 0 else f"random{c}", "eps": str(eps)}
                    fast, factors = fast_and_tight(Z / GRID, float(eps), seconds)
                    row.update(fast)
                    row.update(exact_profile(Z, eps, timeout))
                    ups = [u for u in (row["oracle_upper"], exact_witness_rank(Z, factors, eps)) if u is not None]
                    row["exact_upper"] = min(ups, default=None)
                    same = row["oracle_lower"] is not None and row["oracle_lower"] == row["exact_upper"]
                    row["exact_rank"] = row["exact_upper"] if same else None
                    rows.append(row)
    return rows
