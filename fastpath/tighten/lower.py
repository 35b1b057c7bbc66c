"""Raise lower ends (untrusted, float64): decoder row sets grown with W from the eps* linear
program, for ``softrank tighten`` (``fastpath/tighten/records.py``).

A row set S admits a decoder at eps exactly when its critical tolerance eps*(S) exceeds eps
(``fastpath/lower/decoder_oracle.py``); the LP for eps*(S) gives a D whose ``W = D / max_i P_ii`` has
float64 value ``||A_S W - I||_inf + eps max_j ||W_j||_1 < 1`` (Lemma D), and its dual gives an
upper bound on eps*(S).  ``set_decoder`` tests one set with that LP (columns merged into
``GROUPS`` groups of similar profile above that many columns; an early-stopped interior point
first, the full solve only when the early one cannot decide); a set the merged LP cannot decide
counts as a failure (a heuristic refusal, never a claim).

``grow_decoder`` starts from a valid set (the stored certificate) and appends candidate rows in
``overlap_order`` (each next row the one whose largest overlap ``sum_j min(a_i, a_k)`` with the
rows taken so far is least): a block of rows at a time, doubling the block after a success and
halving it after a failure, skipping a single row that fails, until the goal, the patience or
the time is spent.  Then ``scan_extensions`` tries every remaining row, one at a time, as the
next row of the set (rows in decreasing order of their least l1 distance to the set; a row
within 2 eps in l1 of a row of the set is skipped, since ``eps*({i, k}) <= ||a_i - a_k||_1 / 2``
bounds eps*(S) from above), each set decided through ``SetOracle``; it repeats after each
success.  When the scan finds no row either, ``pool_search`` lets rows of the set be swapped:
on a pool of the set's rows and ``POOL_EXTRA`` more (each next the row farthest in l1 from the
pool), it lists the signed row simplices (``softrank.oracle.search.nerve.signed_simplices``: the row
sets and sign patterns s for which some y has ``s_l a_l . y > eps ||y||_inf`` on every row); a
set of p + 1 rows carrying all 2^p patterns is exactly a set with eps*(S) > eps, and its decoder
comes from the same eps* LP.  Every certificate returned has float64 value <= 1 - MARGIN.
"""

from __future__ import annotations

import time

import numpy as np
from softrank.fastpath.lower.decoder_oracle import (
    SetOracle,
    column_groups,
    decoder_from,
    dual_bound,
    eps_star_lp,
    margin_of,
)
from softrank.fastpath.float64 import decoder_value
from softrank.fastpath.lower.certificates import MARGIN, Certificate
from softrank.oracle.search.nerve import signed_simplices

GROUPS = 96  # column groups of the merged eps* LP (operators with more columns)
EARLY_ITERATIONS = 15  # interior-point iterations of the first, cheap LP of a set
FIRST_BLOCK = 4  # rows appended in the first attempt
PATIENCE = 6  # single rows failing in a row before the growth stops
POOL_EXTRA = 5  # rows added to the set's own for the pool search
POOL_LPS = 20000  # cone LPs of one pool search at most


def overlap_order(A: np.ndarray, rows) -> list[int]:
    """Rows not in ``rows``, each next one the row whose largest overlap with the rows taken so
    far (``rows`` first) is least: rows that share little mass with the set come first."""
    taken = [int(i) for i in rows]
    worst = np.zeros(A.shape[0])
    for k in taken:
        worst = np.maximum(worst, np.minimum(A, A[k]).sum(axis=1))
    free = np.ones(A.shape[0], dtype=bool)
    free[taken] = False
    out: list[int] = []
    while free.any():
        j = int(np.flatnonzero(free)[np.argmin(worst[free])])
        out.append(j)
        free[j] = False
        worst = np.maximum(worst, np.minimum(A, A[j]).sum(axis=1))
    return out


def set_decoder(A: np.ndarray, rows: np.ndarray, eps: float) -> tuple[float, np.ndarray | None, float]:
    """Test a row set with the eps* LP: (float64 decoder value, W) when the LP's D gives a valid
    decoder at ``eps``, else (inf, None); and the LP's upper bound on eps*(S)."""
    M = A[rows]
    lab = column_groups(M, GROUPS) if A.shape[1] > GROUPS else np.arange(A.shape[1])
    Mg = np.zeros((len(rows), int(lab.max()) + 1))
    np.add.at(Mg.T, lab, M.T)
    ub = 1.0
    for iterations in (EARLY_ITERATIONS, None):
        Dg, Ys = eps_star_lp(Mg, iterations)
        D = Dg[lab]
        ub = min([ub] + [dual_bound(M, Y) for Y in Ys])
        if margin_of(M, D) > eps:
            value, W = decoder_from(A, rows, D, eps)
            if W is not None and value <= 1.0 - MARGIN:
                return value, W, ub
        if ub <= eps:
            break
    return np.inf, None, ub


def _block(order: list[int], pos: int, size: int) -> list[int]:
    return order[pos:pos + size]


def grow_decoder(A: np.ndarray, start: Certificate, eps: float, goal: int, deadline: float,
                 log: list | None = None) -> Certificate:
    """Grow the valid decoder ``start`` (rows, W) toward ``goal`` rows (see the module docstring).
    Returns a certificate with float64 value <= 1 - MARGIN: the grown one, or ``start``.  ``log``
    collects (rows tried, success, seconds) per LP test.  An LP is not started when the last one
    took longer than the time left."""
    rows = np.asarray(start.rows, dtype=np.int64)
    W = np.asarray(start.W, dtype=np.float64)
    value = decoder_value(A, rows, W, eps)
    if value > 1.0 - MARGIN:
        return start
    order = overlap_order(A, rows)
    pos, size, fails, last = 0, FIRST_BLOCK, 0, 0.0
    while len(rows) < goal and pos < len(order) and fails < PATIENCE:
        if time.perf_counter() + last > deadline:
            break
        block = _block(order, pos, min(size, goal - len(rows)))
        cand = np.append(rows, np.asarray(block, dtype=np.int64))
        t0 = time.perf_counter()
        v, Wc, _ = set_decoder(A, cand, eps)
        if Wc is not None:  # the check, from the W that would be stored
            v = decoder_value(A, cand, Wc, eps)
            Wc = Wc if v <= 1.0 - MARGIN else None
        last = time.perf_counter() - t0
        if log is not None:
            log.append((len(cand), Wc is not None, last))
        if Wc is not None:
            rows, W, value = cand, Wc, v
            pos, size, fails = pos + len(block), 2 * len(block), 0
        elif len(block) > 1:
            size = len(block) // 2
        else:
            pos, fails = pos + 1, fails + 1
    if len(rows) < goal:
        rows, W, value = scan_extensions(A, rows, W, value, eps, goal, deadline, log)
    if len(rows) < goal and time.perf_counter() < deadline:
        rows, W, value = pool_search(A, rows, W, value, eps, deadline, log)
    if len(rows) == len(start.rows):
        return start
    return Certificate("decoder", len(rows), rows=rows, W=W, margin=1.0 - value)


def scan_extensions(A: np.ndarray, rows: np.ndarray, W: np.ndarray, value: float, eps: float, goal: int,
                    deadline: float, log: list | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Every row not in ``rows`` tried as one more row (see the module docstring), repeated after
    each success, up to ``goal`` rows or the deadline: (rows, W, float64 value), the input when
    no row extends the set.  A set the oracle cannot decide counts as a failure."""
    oracle = SetOracle(A)
    rows = np.asarray(rows, dtype=np.int64)
    dist = np.full(A.shape[0], np.inf)
    for i in rows.tolist():
        dist = np.minimum(dist, np.abs(A - A[i]).sum(axis=1))
    last = 0.0
    while len(rows) < goal:
        cands = np.flatnonzero(dist > 2 * eps)
        cands = cands[np.argsort(-dist[cands], kind="stable")]
        hit = None
        for c in cands.tolist():
            if time.perf_counter() + last > deadline:
                return rows, W, value
            cand = np.append(rows, c)
            t0 = time.perf_counter()
            res = oracle.decide(cand, eps)
            Wc = None if res is None else res[1]
            v = decoder_value(A, cand, Wc, eps) if Wc is not None else np.inf
            last = time.perf_counter() - t0
            if log is not None:
                log.append((len(cand), v <= 1.0 - MARGIN, last))
            if v <= 1.0 - MARGIN:  # the check, from the W that would be stored
                hit = (cand, Wc, v)
                break
        if hit is None:
            break
        rows, W, value = hit
        dist = np.minimum(dist, np.abs(A - A[rows[-1]]).sum(axis=1))
    return rows, W, value


def far_pool(A: np.ndarray, rows: np.ndarray, eps: float, extra: int) -> list[int]:
    """``rows`` and up to ``extra`` more, each next the row farthest in l1 from the pool (only rows
    more than 2 eps from every pool row: closer ones cannot join a decoder set with it)."""
    pool = [int(i) for i in rows]
    dist = np.full(A.shape[0], np.inf)
    for i in pool:
        dist = np.minimum(dist, np.abs(A - A[i]).sum(axis=1))
    while len(pool) < len(rows) + extra:
        j = int(np.argmax(dist))
        if dist[j] <= 2 * eps:
            break
        pool.append(j)
        dist = np.minimum(dist, np.abs(A - A[j]).sum(axis=1))
    return sorted(pool)


def full_sets(simplices, size: int) -> list[tuple]:
    """Row sets of ``size`` rows among the listed signed simplices that carry all 2^(size-1) sign
    patterns (first sign +1)."""
    count: dict[tuple, int] = {}
    for R, _, _ in simplices:
        count[R] = count.get(R, 0) + 1
    return [R for R, c in count.items() if c == 2 ** (size - 1)]


def pool_search(A: np.ndarray, rows: np.ndarray, W: np.ndarray, value: float, eps: float, deadline: float,
                log: list | None = None, extra: int = POOL_EXTRA) -> tuple[np.ndarray, np.ndarray, float]:
    """One more row by swapping (see the module docstring): (rows, W, float64 value) of a set of
    len(rows) + 1 rows from the pool with a decoder checked in float64, or the input."""
    rows = np.asarray(rows, dtype=np.int64)
    pool = far_pool(A, rows, eps, extra)
    if len(pool) <= len(rows):
        return rows, W, value
    simplices = signed_simplices(A, eps, len(rows), pool, max_lps=POOL_LPS, deadline=deadline)
    if not simplices:
        return rows, W, value
    oracle = SetOracle(A)
    for R in full_sets(simplices, len(rows) + 1):
        if time.perf_counter() > deadline:
            break
        cand = np.asarray(R, dtype=np.int64)
        t0 = time.perf_counter()
        res = oracle.decide(cand, eps)
        Wc = None if res is None else res[1]
        v = decoder_value(A, cand, Wc, eps) if Wc is not None else np.inf
        if log is not None:
            log.append((len(cand), v <= 1.0 - MARGIN, time.perf_counter() - t0))
        if v <= 1.0 - MARGIN:
            return cand, Wc, v
    return rows, W, value
