"""The bounds of validated/float_bounds.py are the formulas of proofs/binary64_error_bounds.md (B2,
B3), transcribed here.  On inputs where every floating-point operation is exact the computed float
is the exact value, so the returned rational must be exactly the lemma's expression of it: a
divisor gamma_N where the lemma charges gamma_(N+1) gives a bound too small by a relative
2^-53, which no test with rounding errors of realistic size can see.  Written for a surviving
mutant of the mutation run of 2026-12-03 (docs/hardening.md, "Mutation testing")."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from softrank.validated.float_bounds import matmul_error_rowsum_upper, max_rowsum_abs_diff_upper

U = Fraction(1, 2**53)
ETA = Fraction(1, 2**1074)


def gamma(n: int) -> Fraction:
    return n * U / (1 - n * U)


def _dyadic(rng, shape, denominator=64):
    return rng.integers(-64, 65, size=shape) / denominator  # every sum below is exact in binary64


@pytest.mark.parametrize("n", [1, 4, 9])
@pytest.mark.parametrize("with_rad", [False, True])
def test_b2_row_sum_bound_is_the_lemma_with_c_2(n, with_rad):
    """B2 with c = 2 roundings per term: max_i sum_j t_ij <= max_i S_i / (1 - gamma_(N+1))."""
    rng = np.random.default_rng(n)
    a_mid, p = _dyadic(rng, (3, n)), _dyadic(rng, (3, n))
    a_rad = np.abs(_dyadic(rng, (3, n))) if with_rad else None
    exact = max(sum(abs(Fraction(a) - Fraction(b)) + (Fraction(r) if with_rad else 0)
                    for a, b, r in zip(ra, rp, rr))
                for ra, rp, rr in zip(a_mid.tolist(), p.tolist(), (a_rad if with_rad else a_mid).tolist()))
    assert max_rowsum_abs_diff_upper(a_mid, a_rad, p) == exact / (1 - gamma(n + 1))


@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (3, 4, 5), (6, 2, 9)])
def test_b3_product_error_bound_is_the_lemma(m, k, n):
    """B3: gamma_k (max_i v_i + k eta) / ((1 - gamma_k)(1 - gamma_N)) + N k eta, with
    v = |X| (sum_j |y_j|)."""
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    x, y = _dyadic(rng, (m, k), 8), _dyadic(rng, (n, k), 8)
    c = [sum(abs(Fraction(y[j, t])) for j in range(n)) for t in range(k)]
    vmax = max(sum(abs(Fraction(x[i, t])) * c[t] for t in range(k)) for i in range(m))
    want = gamma(k) * (vmax + k * ETA) / ((1 - gamma(k)) * (1 - gamma(n))) + n * k * ETA
    assert matmul_error_rowsum_upper(x, y) == want


def test_b3_with_no_inner_dimension_is_zero():
    assert matmul_error_rowsum_upper(np.zeros((2, 0)), np.zeros((3, 0))) == 0
    assert matmul_error_rowsum_upper(np.zeros((0, 0)), np.zeros((3, 0))) == 0  # and no rows either
