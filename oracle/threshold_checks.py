"""Exact re-check of a threshold certificate: eps*_k(A) = value, with a primal point attaining
it and dual bounds reaching it (proofs/oracle_profile.md and the reduction files it cites).

One table (``THRESHOLD_KINDS``) maps each threshold kind to its checker and its proof files;
malformed input gives False.
"""

from __future__ import annotations

from softrank.exact.rational import ZERO
from softrank.oracle.check_basics import as_int, as_matrix, as_rational, as_vector, dot, l1, simplex_distance
from softrank.oracle.checks import covered_orthant_bounds, kernel_bound, rank1_stochastic_bound


def check_threshold(A, cert, k=None) -> bool:
    """An exact threshold eps*_k = value: a primal point attaining it and dual bounds reaching it.

    Kinds (and the k each speaks for): ``"norm"`` (k = 0: ||A||_inf), ``"zero"`` (k >= rank A,
    shown by an exact factorisation A = X Y^T with at most k columns: 0), ``"kernel"``
    (k = N - 1), ``"cokernel"`` (k = m - 1), ``"rank1-stochastic"`` (k = 1, stochastic),
    ``"simplex-rows"`` (stochastic, k >= min(m, N)).  ``k`` defaults to ``cert["k"]``; without
    either, the kind's own k is assumed (the ``"zero"`` kind then needs ``cert["k"]``).
    """
    try:
        return _check_threshold(A, cert, k)
    except (KeyError, ValueError, TypeError, IndexError, ArithmeticError):  # ZeroDivision-, OverflowError
        return False

def _check_threshold(A, cert, k) -> bool:
    m, N = len(A), len(A[0])
    t = as_rational(cert["value"])
    kind = cert["kind"]
    if k is None:
        k = cert.get("k")
    if k is not None:
        k = as_int(k)
        own = {"norm": 0, "kernel": N - 1, "cokernel": m - 1, "rank1-stochastic": 1}
        if kind in own and k != own[kind]:
            return False
        if kind == "simplex-rows" and k < min(m, N):
            return False
    elif kind in ("zero", "simplex-rows"):
        return False
    entry = THRESHOLD_KINDS.get(kind)
    return entry is not None and entry[0](A, t, cert, k)

def _norm(A, t, cert, k) -> bool:
    return t == max(l1(r) for r in A)

def _simplex_rows(A, t, cert, k) -> bool:
    return t == max(simplex_distance(r) for r in A)

def _zero(A, t, cert, k) -> bool:
    """B = A = X Y^T has rank <= (columns of X) <= k."""
    m, N = len(A), len(A[0])
    X, Y = as_matrix(cert["X"], rows=m), as_matrix(cert["Y"], rows=N)
    r = len(X[0])
    if r > k or any(len(row) != r for row in X + Y):
        return False
    return t == 0 and all(dot(X[i], Y[j]) == A[i][j] for i in range(m) for j in range(N))

def _kernel(A, t, cert, k) -> bool:
    m, N = len(A), len(A[0])
    j0 = as_int(cert["column"])
    w = as_vector(cert["w"], N)
    if not 0 <= j0 < N or max(abs(x) for x in w) != 1 or abs(w[j0]) != 1:  # a column of A, not Python's w[-1]
        return False
    if max(abs(dot(r, w)) for r in A) > t:
        return False
    if t <= 0:
        return t == 0
    ys = cert["y"]
    if len(ys) != N:
        return False
    for j in range(N):
        num, den = kernel_bound(A, j, as_vector(ys[j], m))
        if den == 0 or num < t * den:
            return False
    return True

def _cokernel(A, t, cert, k) -> bool:
    m, N = len(A), len(A[0])
    y = as_vector(cert["y"], m)
    if l1(y) != 1:
        return False
    if sum((abs(sum((A[i][j] * y[i] for i in range(m)), ZERO)) for j in range(N)), ZERO) > t:
        return False
    bounds = covered_orthant_bounds(A, cert["orthants"])
    return bounds is not None and all(b >= t for b in bounds)

def _rank1_stochastic(A, t, cert, k) -> bool:
    m, N = len(A), len(A[0])
    v = as_vector(cert["v"], N)
    if any(x < 0 for x in v) or sum(v, ZERO) != 1:
        return False
    if max(l1([a - b for a, b in zip(r, v)]) for r in A) > t:
        return False
    if t <= 0:
        return t == 0
    num, den = rank1_stochastic_bound(A, as_matrix(cert["lambda"], rows=m, cols=N))
    return den > 0 and num >= t * den

_P = "proofs/oracle_"
_PROFILE = _P + "profile.md"
#: threshold kind -> (checker(A, t, cert, k), the proof files it rests on)
THRESHOLD_KINDS = {
    "norm": (_norm, (_P + "k0.md", _PROFILE)),
    "simplex-rows": (_simplex_rows, (_P + "stochastic_rows.md", _PROFILE)),
    "zero": (_zero, (_P + "k_ge_rank.md", _PROFILE)),
    "kernel": (_kernel, (_P + "kN_minus_1.md", _PROFILE)),
    "cokernel": (_cokernel, (_P + "km_minus_1.md", _PROFILE)),
    "rank1-stochastic": (_rank1_stochastic, (_P + "k1_stochastic.md", _PROFILE)),
}
