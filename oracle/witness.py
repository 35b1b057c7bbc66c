"""Searching for exact rational witnesses at any rank k (feasibility only; never impossibility).

A witness B = X Y^T (X m x k, Y N x k) re-checked exactly proves a cell feasible whatever produced
it (proofs/oracle_witness.md).  This module tries a few fixed row spaces V (k x N): the top-k right
k-subsets of rows of A, then the top-k right singular vectors of a float64 SVD rounded to
rationals.  For a fixed V
the best X is found row by row with exact feasibility LPs (``||a_i - x_i^T V||_1 <= eps``, plus
``x_i^T V >= 0`` and unit sum in the stochastic class).  Floats only choose candidates.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from softrank.exact import lp as xlp
from softrank.exact.rational import from_binary64
from softrank.oracle.polish import polish

ZERO = Fraction(0)


def _row_lp(a, V, eps, klass):
    k, N = len(V), len(a)
    b = xlp.Builder()
    for t in range(k):
        b.var(("x", t))
    for j in range(N):
        col = {("x", t): V[t][j] for t in range(k)}
        b.le({**col, ("e", j): -1}, a[j], ("p", j))  # (x^T V)_j - a_j <= e_j
        b.le({**{c: -v for c, v in col.items()}, ("e", j): -1}, -a[j], ("n", j))
        if klass == "stochastic":
            b.le({c: -v for c, v in col.items()}, 0, ("nonneg", j))
    b.le({("e", j): 1 for j in range(N)}, eps, "budget")
    if klass == "stochastic":
        b.eq({("x", t): sum(V[t], ZERO) for t in range(k)}, 1, "sum")
    return b


def fit_row_space(A, V, eps, klass="unrestricted", method="auto"):
    """Exact X with ||A - X V||_inf <= eps (and stochastic XV in that class), or None."""
    X = []
    for a in A:
        b = _row_lp(a, V, eps, klass)
        res = xlp.feasibility(b.build(), method)
        if not res.feasible:
            return None
        X.append([b.value(res.x, ("x", t)) for t in range(len(V))])
    return X


def _svd_candidates(A, k, denominators=(1 << 10, 1 << 20)):
    try:
        import numpy as np

        M = np.array([[float(x) for x in r] for r in A], dtype=float)
        Vt = np.linalg.svd(M)[2][:k]
    except (ImportError, ValueError, ArithmeticError):  # pragma: no cover - candidates only
        return []
    out = []
    for den in denominators:
        out.append([[from_binary64(float(x)).limit_denominator(den) for x in row] for row in Vt])
    return out


def _subsets(A, k, count):
    return [[list(A[i]) for i in rows]
            for rows in itertools.islice(itertools.combinations(range(len(A)), min(k, len(A))), count)]


def search(A, eps, k, klass="unrestricted", method="auto", max_subsets=20):
    """Try candidate row spaces; return (X, Y) with B = X Y^T a witness, or None."""
    if k < 1:
        return None
    for V in _subsets(A, k, max_subsets) + _svd_candidates(A, min(k, len(A[0]))):
        X = fit_row_space(A, V, eps, klass, method)
        if X is not None:
            return X, _transpose(V, len(A[0]))
    return None


def search_polished(A, eps, k, klass="unrestricted", method="auto", starts=2):
    """Alternating fits (``softrank.oracle.polish``) from the first ``starts`` candidates (SVD
    bases first, then subsets of rows); return (X, Y) with B = X Y^T, or None."""
    if k < 1:
        return None
    for V in (_svd_candidates(A, min(k, len(A[0]))) + _subsets(A, k, starts))[:starts]:
        found = polish(A, eps, klass, V, method)
        if found is not None:
            return found[0], _transpose(found[1], len(A[0]))
    return None


def _transpose(V, N):
    return [[V[t][j] for t in range(len(V))] for j in range(N)]
