"""The norm bounds N1-N5 of validated/binary64_norms.py against the formulas of
proofs/binary64_error_bounds.md and against exact rational truth.

Most inputs are small integers or powers of two, so that every floating-point operation is exact
and the computed float is the exact value: the returned rational must then be exactly the
documented expression (a constant that is weakened or strengthened by a relative 2^-53, or an
eta-sized term that is dropped, changes it).  Inputs in the subnormal range show that the
eta terms are needed for soundness, and the overflow and empty cases give ``None`` and 0.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from softrank.validated.balls import float_at_least, float_at_most
from softrank.validated.binary64_norms import (
    ETA,
    U,
    frobenius_sq_lower,
    frobenius_sq_upper,
    frobenius_upper,
    max_abs_rowsum,
    max_abs_rowsum_lower,
    max_abs_rowsum_upper,
    max_row_sq_lower,
    max_row_sq_upper,
    nonneg_product_rowsum_upper,
    product_error_frobenius_upper,
    sqrt_lower,
    sqrt_upper,
)

U_DOC = Fraction(1, 2**53)
ETA_DOC = Fraction(1, 2**1074)


def gamma(n: int) -> Fraction:
    """gamma_n = n u / (1 - n u), transcribed from the proof's notation."""
    return n * U_DOC / (1 - n * U_DOC)


def _exact(x: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in x.tolist()]


# A 3 x 2 integer matrix: its sums of squares (91 in all, rows 5, 25, 61) and absolute row sums are
# exact in binary64, and the row length 2 differs from the size 6.
X = np.array([[1.0, -2.0], [3.0, 4.0], [-5.0, 6.0]])
X_SUM_SQ, X_MAX_ROW_SQ = 91, 61


def test_constants_are_the_documented_unit_roundoff_and_eta():
    assert U == U_DOC
    assert ETA == ETA_DOC


# --- N5: square roots -------------------------------------------------------------------------


@pytest.mark.parametrize("root", [1, 3, 12, 2**20 + 1])
def test_square_roots_of_perfect_squares_are_one_ulp_either_side(root):
    """sqrt of an exact square is a float r: the bounds are the floats just above and below r."""
    q = Fraction(root * root)
    assert sqrt_upper(q) == Fraction(math.nextafter(float(root), math.inf))
    assert sqrt_lower(q) == Fraction(math.nextafter(float(root), 0.0))


@pytest.mark.parametrize("q", [Fraction(2), Fraction(1, 3), Fraction(10**30 + 7, 11), Fraction(5, 2**900)])
def test_square_roots_bracket_exactly_and_are_one_step_outside_the_float_roots(q):
    """N5: the float just above sqrt(float >= q) and the float just below sqrt(float <= q)."""
    hi, lo = sqrt_upper(q), sqrt_lower(q)
    assert lo * lo < q < hi * hi
    f_hi, f_lo = float_at_least(q), float_at_most(q)
    assert hi == Fraction(math.nextafter(math.sqrt(f_hi), math.inf))
    assert lo == Fraction(math.nextafter(math.sqrt(f_lo), 0.0))
    ulps = (hi - lo) / Fraction(math.ulp(float(lo)))
    assert ulps == 2 if f_hi == f_lo else 2 <= ulps <= 3


def test_square_roots_of_zero_are_zero_and_negative_has_lower_root_zero():
    assert sqrt_upper(Fraction(0)) == 0
    assert sqrt_lower(Fraction(0)) == 0
    assert sqrt_lower(Fraction(-3)) == 0
    assert sqrt_lower(Fraction(1, 2**1100)) == 0  # below every positive float


def test_square_roots_from_a_badly_rounded_sqrt_are_an_error_not_a_wrong_bound(monkeypatch):
    """N5 relies on no property of math.sqrt: if it returned a value four ulps off, the exact
    check r^2 >= q (resp. r^2 <= q) fails and the result is an ArithmeticError."""
    real_sqrt = math.sqrt

    def too_large(x):
        r = real_sqrt(x)
        for _ in range(4):
            r = math.nextafter(r, math.inf)
        return r

    def too_small(x):
        r = real_sqrt(x)
        for _ in range(4):
            r = math.nextafter(r, 0.0)
        return r

    monkeypatch.setattr(math, "sqrt", too_large)
    for q in (Fraction(1, 4), Fraction(9)):
        with pytest.raises(ArithmeticError):
            sqrt_lower(q)
    monkeypatch.setattr(math, "sqrt", too_small)
    for q in (Fraction(1, 4), Fraction(9)):
        with pytest.raises(ArithmeticError):
            sqrt_upper(q)


# --- N1: squared Frobenius norm and squared row norms -----------------------------------------


def test_frobenius_sq_bounds_are_r3_with_the_size_as_length():
    n = X.size
    assert frobenius_sq_upper(X) == (X_SUM_SQ + n * ETA_DOC) / (1 - gamma(n))
    assert frobenius_sq_lower(X) == (X_SUM_SQ - n * ETA_DOC) / (1 + gamma(n))


def test_frobenius_upper_is_the_rounded_up_root_of_the_squared_bound():
    q = (X_SUM_SQ + X.size * ETA_DOC) / (1 - gamma(X.size))
    assert frobenius_upper(X) == Fraction(math.nextafter(math.sqrt(float_at_least(q)), math.inf))
    assert frobenius_upper(X) ** 2 >= X_SUM_SQ


def test_max_row_sq_bounds_are_r3_with_the_row_length():
    k = X.shape[1]
    assert max_row_sq_upper(X) == (X_MAX_ROW_SQ + k * ETA_DOC) / (1 - gamma(k))
    assert max_row_sq_lower(X) == (X_MAX_ROW_SQ - k * ETA_DOC) / (1 + gamma(k))


def test_sum_of_squares_bounds_hold_in_the_subnormal_range():
    """13 * 2^-540 squared is 169/64 eta, rounded up to 3 eta; 14 * 2^-540 squared is 49/16 eta,
    rounded down to 3 eta.  Only the n eta terms of R3 keep the bounds on the right side."""
    up = np.array([[13 * 2.0**-540]])
    down = np.array([[14 * 2.0**-540]])
    assert float(up[0, 0] ** 2) == 3 * 2.0**-1074 == float(down[0, 0] ** 2)
    exact_up, exact_down = Fraction(169, 64) * ETA_DOC, Fraction(49, 16) * ETA_DOC
    for lower in (frobenius_sq_lower, max_row_sq_lower):
        assert lower(up) <= exact_up
        assert lower(up) == 2 * ETA_DOC / (1 + gamma(1))
    for upper in (frobenius_sq_upper, max_row_sq_upper):
        assert upper(down) >= exact_down
        assert upper(down) == 4 * ETA_DOC / (1 - gamma(1))


def test_sum_of_squares_lower_bounds_are_clipped_at_zero():
    zero = np.zeros((2, 3))
    assert frobenius_sq_lower(zero) == 0
    assert max_row_sq_lower(zero) == 0
    assert frobenius_sq_upper(zero) == 6 * ETA_DOC / (1 - gamma(6))
    assert max_row_sq_upper(zero) == 3 * ETA_DOC / (1 - gamma(3))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty_matrices_have_zero_norm_bounds(shape):
    x = np.zeros(shape)
    for f in (frobenius_sq_upper, frobenius_sq_lower, frobenius_upper, max_row_sq_upper, max_row_sq_lower,
              max_abs_rowsum_upper, max_abs_rowsum_lower):
        assert f(x) == 0, f.__name__
    assert max_abs_rowsum(x) == 0.0


def test_sum_of_squares_overflow_gives_no_bound():
    big = np.array([[1e200, 1.0]])
    with np.errstate(over="ignore"):
        for f in (frobenius_sq_upper, frobenius_sq_lower, frobenius_upper, max_row_sq_upper, max_row_sq_lower):
            assert f(big) is None, f.__name__


@pytest.mark.parametrize("seed", [0, 1])
def test_sum_of_squares_bounds_enclose_exact_values_tightly(seed):
    """Random floats (rounding errors happen): exact <= upper within a relative 2 gamma_n."""
    x = np.random.default_rng(seed).normal(size=(5, 7))
    rows = [sum(v * v for v in row) for row in _exact(x)]
    exact_f, exact_row = sum(rows), max(rows)
    for lo, hi, exact, n in ((frobenius_sq_lower, frobenius_sq_upper, exact_f, x.size),
                             (max_row_sq_lower, max_row_sq_upper, exact_row, x.shape[1])):
        assert lo(x) <= exact <= hi(x)
        assert hi(x) - lo(x) <= 4 * gamma(n) * exact


# --- N2: maximum absolute row sum -------------------------------------------------------------


def test_max_abs_rowsum_bounds_are_r1_with_the_row_length():
    # 4 rows of length 3 (the length, not the number of rows, enters gamma); row sums 3.5, 8, 11.25, 1.5
    x = np.array([[1.0, -2.0, 0.5], [-3.0, 4.0, 1.0], [5.0, 6.0, -0.25], [0.5, -0.5, 0.5]])
    assert max_abs_rowsum(x) == 11.25
    assert max_abs_rowsum_upper(x) == Fraction(45, 4) / (1 - gamma(3))
    assert max_abs_rowsum_lower(x) == Fraction(45, 4) / (1 + gamma(3))


def test_max_abs_rowsum_bounds_enclose_exact_value():
    x = np.random.default_rng(2).normal(size=(6, 9))
    exact = max(sum(abs(v) for v in row) for row in _exact(x))
    assert max_abs_rowsum_lower(x) <= exact <= max_abs_rowsum_upper(x)
    assert max_abs_rowsum_upper(x) - max_abs_rowsum_lower(x) <= 3 * gamma(9) * exact


def test_max_abs_rowsum_overflow_gives_no_bound():
    x = np.array([[1.0, 2.0], [1e308, 1e308]])
    assert max_abs_rowsum_upper(x) is None
    assert max_abs_rowsum_lower(x) is None


# --- N3: row sums of a non-negative product ---------------------------------------------------


def test_nonneg_product_rowsum_upper_is_n3():
    """X is 2 x 3, Y is 3 x 4 (non-negative integers): the float is the exact maximum row sum of
    X Y, and the bound is (v + b eta) / ((1 - gamma_b)(1 - gamma_c)) with b = 3, c = 4."""
    x = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 2.0]])
    y = np.array([[1.0, 0.0, 2.0, 1.0], [0.0, 3.0, 1.0, 1.0], [2.0, 2.0, 0.0, 1.0]])
    v = Fraction(max(sum(row) for row in (x @ y).tolist()))
    assert v == 27
    assert nonneg_product_rowsum_upper(x, y) == (v + 3 * ETA_DOC) / ((1 - gamma(3)) * (1 - gamma(4)))


def test_nonneg_product_rowsum_upper_with_inner_dimension_one():
    """b = 1: X Y is an outer product, still bounded by (v + eta) / ((1 - gamma_1)(1 - gamma_c))."""
    x, y = np.array([[2.0], [3.0]]), np.array([[1.0, 4.0, 0.5]])
    assert nonneg_product_rowsum_upper(x, y) == (Fraction(33, 2) + ETA_DOC) / ((1 - gamma(1)) * (1 - gamma(3)))


def test_nonneg_product_rowsum_upper_encloses_exact_value():
    rng = np.random.default_rng(4)
    x, y = rng.random((4, 5)), rng.random((5, 3))
    ex, ey = _exact(x), _exact(y)
    exact = max(sum(sum(ex[i][l] * ey[l][j] for l in range(5)) for j in range(3)) for i in range(4))
    bound = nonneg_product_rowsum_upper(x, y)
    assert exact <= bound <= exact * (1 + 4 * gamma(5))


@pytest.mark.parametrize("a,b,c", [(0, 3, 2), (2, 0, 2), (2, 3, 0)])
def test_nonneg_product_rowsum_upper_of_empty_product_is_zero(a, b, c):
    assert nonneg_product_rowsum_upper(np.ones((a, b)), np.ones((b, c))) == 0


def test_nonneg_product_rowsum_upper_overflow_gives_no_bound():
    assert nonneg_product_rowsum_upper(np.array([[1e200, 1.0]]), np.array([[1e200], [1.0]])) is None


# --- N4: Frobenius norm of a product error ----------------------------------------------------


def test_product_error_frobenius_upper_is_n4():
    """rows = 2, cols = 3: the eta term carries sqrt(6) rounded up (not sqrt(rows) or sqrt(cols))."""
    xf, yf = Fraction(5, 2), Fraction(7, 4)
    expected = gamma(4) * xf * yf + Fraction(math.nextafter(math.sqrt(6.0), math.inf)) * 4 * ETA_DOC
    assert product_error_frobenius_upper(xf, yf, 4, 2, 3) == expected
    expected_square = gamma(4) * xf * yf + Fraction(math.nextafter(3.0, math.inf)) * 4 * ETA_DOC
    assert product_error_frobenius_upper(xf, yf, 4, 3, 3) == expected_square
    expected_inner_1 = gamma(1) * xf * yf + Fraction(math.nextafter(math.sqrt(6.0), math.inf)) * ETA_DOC
    assert product_error_frobenius_upper(xf, yf, 1, 2, 3) == expected_inner_1


def test_product_error_frobenius_upper_with_no_inner_dimension_is_zero():
    assert product_error_frobenius_upper(Fraction(3), Fraction(2), 0, 2, 3) == 0


def test_product_error_frobenius_upper_bounds_a_real_float_product():
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(4, 6)), rng.normal(size=(6, 3))
    p = _exact(x @ y)
    ex, ey = _exact(x), _exact(y)
    err_sq = sum((p[i][j] - sum(ex[i][l] * ey[l][j] for l in range(6))) ** 2 for i in range(4) for j in range(3))
    assert err_sq > 0  # the float product has rounding errors
    bound = product_error_frobenius_upper(frobenius_upper(x), frobenius_upper(y), 6, 4, 3)
    assert err_sq <= bound * bound


@pytest.mark.parametrize("q", [Fraction(10**400), Fraction(2**1024), Fraction(10**309 + 1, 3)])
def test_square_root_of_a_rational_beyond_binary64_is_an_exact_integer_bound(q):
    """Past binary64's range the upper root is isqrt(ceil(q)) + 1: still >= sqrt(q), never an
    exception from a float that overflowed."""
    r = sqrt_upper(q)
    assert r.denominator == 1 and r * r >= q and (r - 2) ** 2 < q
    assert sqrt_lower(q) * sqrt_lower(q) <= q


def test_frobenius_upper_of_a_matrix_whose_square_overflows_is_a_bound():
    """||X||_F^2 just past the largest float: the squared bound is a finite rational beyond binary64,
    and the root is still bounded exactly."""
    x = np.array([[math.sqrt(1.7976931348623157e308)], [1e154]])
    sq = frobenius_sq_upper(x)
    assert sq is None or sq >= sum(Fraction(v) ** 2 for v in x.ravel())
    one = np.array([[math.sqrt(1.7976931348623157e308)]])
    r = frobenius_upper(one)
    assert r is not None and r * r >= Fraction(one[0, 0]) ** 2
