"""Exact row fits for a fixed row space (untrusted: the witness search's last step).

For a row space V (k x N) the best X is found row by row with exact feasibility LPs
(``||a_i - x_i^T V||_1 <= eps``, plus ``x_i^T V >= 0`` and unit sum in the stochastic class).  Used
by the fixed row spaces of ``witness`` and the alternating fits of ``polish``; ``decide``
re-checks every witness built from it (proofs/oracle_witness.md).
"""

from __future__ import annotations

from softrank.advisors import highs
from softrank.exact.rational import ZERO
from softrank.oracle.search import lp as xlp


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
    """Exact X with ||A - X V||_inf <= eps (and stochastic XV in that class), or None.

    With HiGHS (``method`` other than "simplex") every row LP is first solved in binary64, and a
    row HiGHS finds infeasible ends the search for this V before any exact LP (a screen: it
    decides nothing, it only skips V)."""
    lps = []
    for a in A:
        lps.append(_row_lp(a, V, eps, klass))
        if method != "simplex" and highs.available() and highs.float_solution(lps[-1].build()) is None:
            return None
    X = []
    for b in lps:
        res = xlp.feasibility(b.build(), method)
        if not res.feasible:
            return None
        X.append([b.value(res.x, ("x", t)) for t in range(len(V))])
    return X
