"""The advisor's sparse exact solver: the exact solution of random sparse systems (checked by
substitution and against FLINT's dense solve), through both the sparse elimination and the dense
core, and ``None`` for singular systems."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from flint import fmpq, fmpq_mat

from softrank.advisors import sparse_solve


def _random_system(n, per_row, rng, dense_rows=0):
    rows = []
    for r in range(n):
        cols = {r} | set(rng.sample(range(n), min(n, per_row if r >= dense_rows else n // 2)))
        rows.append({j: Fraction(rng.randint(-9, 9) or 1, rng.randint(1, 7)) for j in cols})
    rhs = [Fraction(rng.randint(-20, 20), rng.randint(1, 5)) for _ in range(n)]
    return rows, rhs


def _dense(rows, rhs, n):
    M = fmpq_mat(n, n)
    for i, row in enumerate(rows):
        for j, v in row.items():
            M[i, j] = fmpq(v.numerator, v.denominator)
    b = fmpq_mat(n, 1, [fmpq(v.numerator, v.denominator) for v in rhs])
    try:
        s = M.solve(b)
    except ZeroDivisionError:
        return None
    return [Fraction(int(s[j, 0].p), int(s[j, 0].q)) for j in range(n)]


@pytest.mark.parametrize("seed", range(40))
def test_solution_is_exact_and_matches_flint(seed, monkeypatch):
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    if seed % 2:  # force the dense core early on half of the systems
        monkeypatch.setattr(sparse_solve, "DENSE_AT", 10 ** 6)
        monkeypatch.setattr(sparse_solve, "DENSE_SHARE", 0.0)
    rows, rhs = _random_system(n, rng.randint(1, 4), rng, dense_rows=rng.randint(0, 3))
    x = sparse_solve.solve(rows, rhs, n)
    ref = _dense(rows, rhs, n)
    assert x == ref
    if x is not None:
        assert all(sum(v * x[j] for j, v in row.items()) == b for row, b in zip(rows, rhs))


def test_singular_systems_give_none():
    one = Fraction(1)
    assert sparse_solve.solve([{0: one, 1: one}, {0: 2 * one, 1: 2 * one}], [one, one], 2) is None
    assert sparse_solve.solve([{0: one}, {}], [one, one], 2) is None  # an empty row
    assert sparse_solve.solve([{0: one}], [one, one], 2) is None  # not square
    assert sparse_solve.solve([{0: one, 5: one}, {1: one}], [one, one], 2) is None  # a column out of range


def test_an_auxiliary_variable_chain_is_eliminated_without_a_dense_core(monkeypatch):
    """t_i - x_i = 0 rows tied to a few core unknowns: the elimination alone solves it."""
    calls = []
    monkeypatch.setattr(sparse_solve, "_dense_core", lambda *a: calls.append(a) or {})
    n = 500
    rows = [{i: Fraction(1), i + 1: Fraction(-1, 2)} for i in range(n - 1)] + [{n - 1: Fraction(3)}]
    x = sparse_solve.solve(rows, [Fraction(1)] * n, n)
    assert not calls and x[n - 1] == Fraction(1, 3)
    assert all(sum(v * x[j] for j, v in row.items()) == 1 for row in rows)
