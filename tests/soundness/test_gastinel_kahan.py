"""Gastinel-Kahan cross-check of the oracle: for square invertible rational A, the
exact k = N - 1 threshold (kernel LPs) and the k = m - 1 threshold (cokernel LPs, one per
orthant) both equal 1 / ||A^{-1}||_inf, computed independently by exact inversion."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from softrank.exact.rational import from_fmpq_mat, inf_norm, to_fmpq_mat
from softrank.oracle import check_threshold
from softrank.oracle.search import corank


def invertible(rng, n):
    while True:
        A = [[F(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(n)] for _ in range(n)]
        M = to_fmpq_mat(A)
        if M.rank() == n:
            return A, M


def run(count, seed, max_n=5):
    rng = random.Random(seed)
    sizes = {}
    for t in range(count):
        n = 1 + t % max_n  # every size 1..max_n equally often
        A, M = invertible(rng, n)
        gk = 1 / inf_norm(from_fmpq_mat(M.inv()))
        kern = corank.kernel_threshold(A)
        cok = corank.cokernel_threshold(A)
        assert check_threshold(A, kern) and check_threshold(A, cok)
        assert F(kern["value"]) == gk, (A, kern["value"], gk)
        assert F(cok["value"]) == gk, (A, cok["value"], gk)
        sizes[n] = sizes.get(n, 0) + 1
    return sizes


def test_gastinel_kahan_200_matrices_up_to_5x5():
    sizes = run(200, seed=2026)
    assert sum(sizes.values()) == 200 and set(sizes) == {1, 2, 3, 4, 5}


def test_gastinel_kahan_on_structured_matrices():
    # diagonal, triangular, and a near-singular matrix (tiny threshold)
    for A in ([[F(2), 0], [0, F(1, 3)]],
              [[F(1), F(1), F(1)], [0, F(1), F(1)], [0, 0, F(1)]],
              [[F(1), F(1)], [F(1), F(1) + F(1, 10 ** 12)]]):
        gk = 1 / inf_norm(from_fmpq_mat(to_fmpq_mat(A).inv()))
        assert F(corank.kernel_threshold(A)["value"]) == gk == F(corank.cokernel_threshold(A)["value"])


@pytest.mark.slow
def test_gastinel_kahan_1000_matrices_up_to_6x6():
    run(1000, seed=7, max_n=6)
