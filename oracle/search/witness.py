"""Searching for exact rational witnesses at any rank k (feasibility only; never impossibility).

A witness B = X Y^T (X m x k, Y N x k) re-checked exactly proves a cell feasible whatever produced
it (proofs/oracle_witness.md).  This module tries a few fixed row spaces V (k x N): the first k
rows of A in pivoted Gram-Schmidt order, the row space of A projected on its first k pivoted
columns, the top-k right singular vectors of a float64 SVD (those two rounded to rationals), then
k-subsets of rows in lexicographic order.  For a fixed V
the best X is found row by row with exact feasibility LPs (``row_fit.fit_row_space``).  Floats only
choose candidates.
"""

from __future__ import annotations

import itertools

from softrank.exact.rational import TEXT_BITS, ZERO, from_binary64, matmul
from softrank.oracle.search.decoder import pivot_order
from softrank.oracle.search.polish import polish
from softrank.oracle.search.row_fit import fit_row_space


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


def _pivoted_candidates(A, k, denominators=(1 << 10, 1 << 20)):
    """The first k rows of A in pivoted Gram-Schmidt order, then the row space of A projected on
    its first k columns in that order (the column-pivoted QR construction), rounded."""
    import numpy as np

    k = min(k, len(A), len(A[0]))
    out = [[list(A[i]) for i in pivot_order(A)[:k]]]
    M = np.array([[float(x) for x in r] for r in A], dtype=float)
    cols = pivot_order([list(c) for c in zip(*A)])[:k]
    try:
        C = M[:, cols]
        Vt = np.linalg.svd(C @ np.linalg.lstsq(C, M, rcond=None)[0])[2][:k]
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # pragma: no cover - candidates only
        return out
    for den in denominators:
        out.append([[from_binary64(float(x)).limit_denominator(den) for x in row] for row in Vt])
    return out


def _subsets(A, k, count):
    return [[list(A[i]) for i in rows]
            for rows in itertools.islice(itertools.combinations(range(len(A)), min(k, len(A))), count)]


def _short(M) -> bool:
    return all(x.numerator.bit_length() < TEXT_BITS and x.denominator.bit_length() < TEXT_BITS
               for row in M for x in row)


def _within(A, eps, X, V) -> bool:
    B = matmul(X, V)
    return all(sum((abs(a - b) for a, b in zip(ra, rb)), ZERO) <= eps for ra, rb in zip(A, B))


def presentable(A, eps, klass, X, V):
    """(X, V) with entries short enough to be written and read back as certificate text
    (``softrank.oracle.check_basics.MAX_TEXT``), or None.  An exact basis point can carry
    thousands of digits; in the unrestricted class both factors are then rounded to denominators
    2^16, 2^32, ... and kept when ``||A - X V||_inf <= eps`` still holds exactly (the stochastic
    class keeps unit row sums only unrounded)."""
    if _short(X) and _short(V):
        return X, V
    if klass == "stochastic":
        return None
    for bits in (16, 32, 64, 128, 256):
        den = 1 << bits
        Xr = [[x.limit_denominator(den) for x in row] for row in X]
        Vr = [[x.limit_denominator(den) for x in row] for row in V]
        if _short(Xr) and _short(Vr) and _within(A, eps, Xr, Vr):
            return Xr, Vr
    return None


def search(A, eps, k, klass="unrestricted", method="auto", max_subsets=20):
    """Try candidate row spaces; return (X, Y) with B = X Y^T a witness, or None."""
    if k < 1:
        return None
    for V in _pivoted_candidates(A, k) + _svd_candidates(A, min(k, len(A[0]))) + _subsets(A, k, max_subsets):
        X = fit_row_space(A, V, eps, klass, method)
        found = None if X is None else presentable(A, eps, klass, X, V)
        if found is not None:
            return found[0], _transpose(found[1], len(A[0]))
    return None


def search_polished(A, eps, k, klass="unrestricted", method="auto", starts=2):
    """Alternating fits (``softrank.oracle.search.polish``) from the first ``starts`` candidates (SVD
    bases first, then subsets of rows); return (X, Y) with B = X Y^T, or None."""
    if k < 1:
        return None
    for V in (_svd_candidates(A, min(k, len(A[0]))) + _subsets(A, k, starts))[:starts]:
        found = polish(A, eps, klass, V, method)
        found = None if found is None else presentable(A, eps, klass, *found)
        if found is not None:
            return found[0], _transpose(found[1], len(A[0]))
    return None


def _transpose(V, N):
    return [[V[t][j] for t in range(len(V))] for j in range(N)]
