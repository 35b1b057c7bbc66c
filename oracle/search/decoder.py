"""Searching for a contractive decoder (kind ``decoder``, Lemma D) on a rational cell.

Untrusted: binary64 only chooses the rows and proposes W; ``softrank.oracle.checks`` re-checks
the certificate exactly (``decoder_checks.check_decoder``).  Rows are taken in the order of a
pivoted Gram-Schmidt on the rows of A (each next row the one farthest from the span of those
before it); a row joins the set S when the best W for S + [row] (the LP below, solved in binary64
by HiGHS) still has a Lemma D sum below 1 exactly, after W is rounded to its binary64 value.  The
sum can only grow when a row is added (keep W's columns of the smaller set), so a row that fails
once is not tried again.

The LP for a set S of p rows: minimise  alpha + eps beta  over W (N x p) with
``sum_t |(A_S W - I)_st| <= alpha`` for each s and ``sum_t |W_jt| <= beta`` for each j.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from softrank.advisors import highs
from softrank.exact.rational import fmt_mat
from softrank.oracle.decoder_checks import decoder_value
from softrank.oracle.search import lp as xlp

MARGIN = 1e-9  # a binary64 LP value above 1 - MARGIN is not worth an exact check


def pivot_order(A) -> list[int]:
    """Rows of A in pivoted Gram-Schmidt order (binary64): each next the row with the largest
    residual after projecting out the rows before it."""
    M = np.array([[float(x) for x in row] for row in A], dtype=float)
    R = M.copy()
    order, left = [], list(range(len(M)))
    while left:
        norms = [float(R[i] @ R[i]) for i in left]
        i = left[int(np.argmax(norms))]
        order.append(i)
        left.remove(i)
        q = R[i]
        nq = float(q @ q)
        if nq > 1e-24:
            R -= np.outer(R @ q / nq, q)
    return order


def _decoder_lp(A, eps, rows):
    N, p = len(A[0]), len(rows)
    b = xlp.Builder()
    for s, i in enumerate(rows):
        for t in range(p):
            coefs = {("w", j, t): A[i][j] for j in range(N) if A[i][j]}
            target = 1 if s == t else 0
            b.le({**coefs, ("r", s, t): -1}, target, ("rp", s, t))
            b.le({**{v: -x for v, x in coefs.items()}, ("r", s, t): -1}, -target, ("rn", s, t))
        b.le({**{("r", s, t): 1 for t in range(p)}, "alpha": -1}, 0, ("ra", s))
    for j in range(N):
        for t in range(p):
            b.le({("w", j, t): 1, ("u", j, t): -1}, 0, ("up", j, t))
            b.le({("w", j, t): -1, ("u", j, t): -1}, 0, ("un", j, t))
        b.le({**{("u", j, t): 1 for t in range(p)}, "beta": -1}, 0, ("ub", j))
    b.minimise({"alpha": 1, "beta": eps})
    return b


def best_w(A, eps, rows):
    """(W as exact binary64 rationals, its exact Lemma D sum) from the binary64 LP optimum, or
    None when HiGHS gives nothing or the rounded sum is not below 1."""
    b = _decoder_lp(A, eps, rows)
    x = highs.float_solution(b.build())
    if x is None:
        return None
    N, p = len(A[0]), len(rows)
    Wf = np.array([[x[b.names[("w", j, t)]] for t in range(p)] for j in range(N)], dtype=float)
    if not np.all(np.isfinite(Wf)):
        return None
    W = [[Fraction(float(v)) for v in row] for row in Wf]
    value = decoder_value(A, eps, rows, W)
    return (W, value) if value < 1 else None


def search(A, eps, goal=None):
    """A ``decoder`` certificate with as many rows as the greedy growth reaches (at least one),
    stopping early once it has ``goal`` rows; None when not even one row has a decoder."""
    rows, best = [], None
    for i in pivot_order(A):
        if goal is not None and len(rows) >= goal:
            break
        found = best_w(A, eps, rows + [i])
        if found is not None:
            rows = rows + [i]
            best = found
    if best is None:
        return None
    W, _ = best
    return {"kind": "decoder", "rows": rows, "W": fmt_mat(W)}
