"""The oracle's witness search (``oracle/search/witness.py``): candidate row spaces, the binary64 screen
of the row fits, and certificates short enough to be written as text."""

from __future__ import annotations

import random
from fractions import Fraction as F

from softrank.oracle.search import decide
from softrank.oracle.check_basics import MAX_TEXT
from softrank.oracle.search.row_fit import fit_row_space
from softrank.oracle.search.witness import presentable, search


def cell(seed, m, n):
    rng = random.Random(seed)
    A = []
    for _ in range(m):
        w = [rng.randint(1, 50) for _ in range(n)]
        A.append([F(x, sum(w)) for x in w])
    return A


def error(A, X, V):
    return max(sum(abs(a - sum((x[t] * V[t][j] for t in range(len(V))), F(0))) for j, a in enumerate(row))
               for row, x in zip(A, X))


def test_presentable_rounds_long_factors_only_while_the_error_stays_within_eps():
    A = [[F(1), F(0)], [F(0), F(1)]]
    huge = F(1, 3 ** 9000)  # about 4,300 digits: not writable as certificate text
    X = [[F(1) - huge], [huge]]
    V = [[F(1), F(0)]]
    eps = F(1)
    out = presentable(A, eps, "unrestricted", X, V)
    assert out is not None
    Xr, Vr = out
    assert all(len(str(x)) < MAX_TEXT for row in Xr + Vr for x in row)
    assert error(A, Xr, Vr) <= eps
    # with no room left (an exact fit, eps = 0) rounding cannot be kept: refused
    a = F(1) - huge
    assert presentable([[a, F(0)]], F(0), "unrestricted", [[a]], V) is None
    # short factors pass unchanged; the stochastic class is never rounded
    assert presentable(A, eps, "unrestricted", [[F(1)], [F(0)]], V) == ([[F(1)], [F(0)]], V)
    assert presentable(A, eps, "stochastic", X, V) is None


def test_screened_row_fits_agree_with_exact_ones():
    """The binary64 screen only skips row spaces: with and without it (method "simplex" skips
    it) the same V either fits or does not."""
    A = cell(1, 5, 5)
    for k in (1, 2, 3):
        for V in ([A[i] for i in range(k)], [[F(int(j == t)) for j in range(5)] for t in range(k)]):
            for eps in (F(1, 10), F(3, 10), F(6, 10)):
                a = fit_row_space(A, V, eps)
                b = fit_row_space(A, V, eps, method="simplex")
                assert (a is None) == (b is None)
                if a is not None:
                    assert error(A, a, V) <= eps


def test_search_finds_witnesses_that_decide_rechecks():
    A = cell(2, 8, 8)
    for k in (2, 4, 6):
        found = search(A, F(1, 3), k)
        if found is not None:
            X, Y = found
            V = [list(c) for c in zip(*Y)]
            assert len(V) <= k and error(A, X, V) <= F(1, 3)
    v = decide(A, F(1, 3), 6)
    assert v.verdict in ("feasible", "impossible") and v.rechecked
