"""The alternating exact fits of the witness search (``oracle/search/polish.py``)."""

from __future__ import annotations

from fractions import Fraction as F

from softrank.advisors import highs
from softrank.oracle.search import lp as xlp
from softrank.oracle.search import polish

A = [[F(1), F(0), F(0)], [F(0), F(1), F(0)], [F(1, 2), F(1, 2), F(0)]]
V = [[F(1), F(0), F(0)], [F(0), F(1), F(0)]]


def test_best_factor_is_an_exact_fit():
    X, tau = polish.best_factor(A, V)
    assert tau == 0 and X == [[1, 0], [0, 1], [F(1, 2), F(1, 2)]]


def test_without_a_feasible_highs_point_the_search_gives_up_instead_of_running_the_simplex(monkeypatch):
    """A search step whose LP no HiGHS setting solves ends the step (the exact simplex from scratch
    took hours on a 10 x 10 cell's fits); only an explicit method="simplex" runs it."""
    tries, simplex_calls = [], []
    monkeypatch.setattr(highs, "solve_via_basis", lambda lp, attempt=0: tries.append(attempt))
    real_solve = xlp.solve
    monkeypatch.setattr(xlp, "solve", lambda lp, method="auto": simplex_calls.append(method) or real_solve(lp, method))
    assert polish.best_factor(A, V) == (None, None)
    assert tries == list(range(highs.ATTEMPTS)) and simplex_calls == []
    X, tau = polish.best_factor(A, V, method="simplex")
    assert tau == 0 and simplex_calls == ["simplex"]


def test_float_alternation_returns_an_exact_witness():
    """From a poor row space, the binary64 alternating fits reach a V whose exact row fits give
    ||A - X V||_inf <= eps, checked here in Fractions; ``method="simplex"`` stays exact."""
    import random

    rng = random.Random(5)
    n = 6
    A = []
    for _ in range(n):
        w = [rng.randint(1, 30) for _ in range(n)]
        A.append([F(x, sum(w)) for x in w])
    eps = F(1, 2)
    V0 = [[F(1)] * n, [F(int(j % 2)) for j in range(n)]]
    found = polish.polish(A, eps, "unrestricted", V0)
    assert found is not None
    X, V = found
    for a, x in zip(A, X):
        b = [sum((x[t] * V[t][j] for t in range(len(V))), F(0)) for j in range(n)]
        assert sum(abs(p - q) for p, q in zip(a, b)) <= eps
    assert polish.polish(A, F(0), "unrestricted", V0) is None  # rank 2 cannot be exact here
