"""Alternating fits for the witness search (untrusted: only proposes a witness).

From a row space V (k x N), alternate two LPs: the factor X minimising max_i ||a_i - x_i V||_1
with V fixed, then V minimising it with X fixed (in the stochastic class both keep X V >= 0
with unit row sums).  With HiGHS both LPs are solved in binary64 and each factor is rounded to
small denominators before the next step (in the stochastic class X is passed at its exact
binary64 value: a rounded X would leave no V with unit row sums); a V whose binary64 fit is
within eps goes to the exact row fits of ``row_fit``.  With ``method="simplex"``
both LPs are solved exactly.  A pair whose exact error is <= eps is a witness candidate;
``decide`` re-checks it exactly (proofs/oracle_witness.md), so nothing here needs to be right.
"""

from __future__ import annotations

from fractions import Fraction

from softrank.advisors import highs
from softrank.exact.rational import ZERO
from softrank.oracle.search import lp as xlp
from softrank.oracle.search.row_fit import fit_row_space


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


def _float_factor(A, fixed, unknown_rows, k, klass):
    """The binary64 optimum of the fit LP (HiGHS's point, a proposal only) as a list of rows, and
    its binary64 value; (None, None) when HiGHS gives none."""
    m, N = len(A), len(A[0])
    b = _fit_lp(A, fixed, unknown_rows, k, klass)
    x = highs.float_solution(b.build())
    if x is None:
        return None, None
    names = b.names
    shape = (m, k) if unknown_rows else (k, N)
    F = [[float(x[names[("f", r, c)]]) if ("f", r, c) in names else 0.0 for c in range(shape[1])]
         for r in range(shape[0])]
    return F, float(x[names["tau"]])


def _rounded(F, den):
    """Rationals with denominators at most ``den`` near the entries of F (binary64 or rational; the
    exact values when ``den`` is None)."""
    return [[Fraction(v) if den is None else Fraction(v).limit_denominator(den) for v in row] for row in F]


def polish(A, eps, klass, V, method="auto", rounds=6, den=1 << 16):
    """(X, V) with max_i ||a_i - x_i V||_1 <= eps found by alternating fits from V, or None.

    With HiGHS (``method`` "auto" or "highs") both fits are binary64 LPs and only a promising V
    (its binary64 fit within eps + 1e-9) goes to the exact row fits of
    ``row_fit.fit_row_space``, and a promising V-step to one exact LP: exact LPs
    only where a witness is in sight instead of two over all the entries per round (minutes on a
    30 x 30 cell).  ``method="simplex"`` alternates exact
    optima as before."""
    if method == "simplex" or not highs.available():
        return _polish_exact(A, eps, klass, V, method, rounds, den)
    k = len(V)
    for _ in range(rounds):
        Xf, tau = _float_factor(A, V, True, k, klass)
        if Xf is None:
            return None
        if tau <= eps + 1e-9:
            X = fit_row_space(A, V, eps, klass, method)
            if X is not None:
                return X, V
        # stochastic: X unrounded, so that some V keeps X V 1 = 1 (within HiGHS's tolerance)
        X = _rounded(Xf, None if klass == "stochastic" else den)
        Vf, tau = _float_factor(A, X, False, k, klass)
        if Vf is None:
            return None
        if tau <= eps + 1e-9:  # promising: the exact optimum for this X (one exact LP)
            V, tau = _step(A, X, False, k, klass, method)
            if V is not None and tau <= eps:
                return X, V
        V = _rounded(Vf, den)
    Xf, tau = _float_factor(A, V, True, k, klass)
    if Xf is not None and tau <= eps + 1e-9:
        X = fit_row_space(A, V, eps, klass, method)
        if X is not None:
            return X, V
    return None


def _polish_exact(A, eps, klass, V, method, rounds, den):
    k = len(V)
    for _ in range(rounds):
        X, tau = _step(A, V, True, k, klass, method)
        if X is None:
            return None
        if tau <= eps:
            return X, V
        if klass != "stochastic":  # (rounding X would break X V 1 = 1 for every V)
            X = _rounded(X, den)
        V, tau = _step(A, X, False, k, klass, method)
        if V is None:
            return None
        if tau <= eps:
            return X, V
        V = _rounded(V, den)
    return None
