"""Alternating exact fits for the witness search (untrusted: only proposes a witness).

From a row space V (k x N), alternate two LPs: the factor X minimising max_i ||a_i - x_i V||_1
with V fixed, then V minimising it with X fixed (in the stochastic class both keep X V >= 0
with unit row sums).  Each factor is rounded to small denominators before the next step, so the
numbers stay short (in the stochastic class only V is rounded: a rounded X would leave no V with
unit row sums).  A pair whose exact error is <= eps is a witness candidate; ``decide``
re-checks it exactly (proofs/oracle_witness.md), so nothing here needs to be right.
"""

from __future__ import annotations

from fractions import Fraction

from softrank.advisors import highs
from softrank.exact import lp as xlp

ZERO = Fraction(0)


def _fit_lp(A, fixed, unknown_rows: bool, k, klass):
    """min tau over the unknown factor: X (m x k) if ``unknown_rows`` (fixed = V), else V
    (k x N, fixed = X); rows |b_ij - a_ij| <= e_ij, sum_j e_ij <= tau (+ stochastic rows)."""
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    for i in range(m):
        for j in range(N):
            if unknown_rows:
                coefs = {("f", i, t): fixed[t][j] for t in range(k)}
            else:
                coefs = {("f", t, j): fixed[i][t] for t in range(k)}
            b.le({**coefs, ("e", i, j): -1}, A[i][j], ("p", i, j))
            b.le({**{v: -x for v, x in coefs.items()}, ("e", i, j): -1}, -A[i][j], ("n", i, j))
            if klass == "stochastic":
                b.le({v: -x for v, x in coefs.items()}, 0, ("nn", i, j))
        b.le({**{("e", i, j): 1 for j in range(N)}, "tau": -1}, 0, ("g", i))
        if klass == "stochastic":
            total = {}
            for j in range(N):
                for t in range(k):
                    key = ("f", i, t) if unknown_rows else ("f", t, j)
                    total[key] = total.get(key, ZERO) + (fixed[t][j] if unknown_rows else fixed[i][t])
            b.eq(total, 1, ("s", i))
    b.minimise({"tau": 1})
    return b


def _optimum(b, method):
    """x and value of an optimum: HiGHS's exact basis point, under each of its settings in turn,
    when one is feasible; else (None, None): this is a search, and the exact simplex from scratch
    can take hours on these LPs (seen on a 10 x 10 cell), so it runs only when asked for
    (``method="simplex"``)."""
    lp = b.build()
    if method == "simplex":
        res = xlp.solve(lp, method)
        return (res.x, res.value) if res.status == "optimal" else (None, None)
    for attempt in range(highs.ATTEMPTS):
        prop = highs.solve_via_basis(lp, attempt)
        if prop is not None and prop.status == "optimal" and xlp.check_primal(lp, prop.x):
            return prop.x, prop.value
    return None, None


def _step(A, fixed, unknown_rows, k, klass, method):
    m, N = len(A), len(A[0])
    b = _fit_lp(A, fixed, unknown_rows, k, klass)
    x, tau = _optimum(b, method)
    if x is None:
        return None, None
    shape = (m, k) if unknown_rows else (k, N)
    names = b.names
    F = [[x[names[("f", r, c)]] if ("f", r, c) in names else ZERO for c in range(shape[1])]
         for r in range(shape[0])]
    return F, tau


def best_factor(A, V, klass="unrestricted", method="auto"):
    """X minimising max_i ||a_i - x_i V||_1 (stochastic: X V stochastic) and that minimum, or
    (None, None) if no X fits the class."""
    return _step(A, V, True, len(V), klass, method)


def _round(M, den):
    return [[x.limit_denominator(den) for x in row] for row in M]


def polish(A, eps, klass, V, method="auto", rounds=6, den=1 << 16):
    """(X, V) with max_i ||a_i - x_i V||_1 <= eps found by alternating fits from V, or None."""
    k = len(V)
    for _ in range(rounds):
        X, tau = _step(A, V, True, k, klass, method)
        if X is None:
            return None
        if tau <= eps:
            return X, V
        if klass != "stochastic":  # (rounding X would break X V 1 = 1 for every V)
            X = _round(X, den)
        V, tau = _step(A, X, False, k, klass, method)
        if V is None:
            return None
        if tau <= eps:
            return X, V
        V = _round(V, den)
    return None
