"""Step P of proofs/softmax_binary64.md (the exponential) against validated/softmax_binary64.py:
the reduction's range and error (P1), Horner's rounding (P2), the polynomial's error and kappa
(P3), each transcribed here from the proof in exact rationals and compared for equality with the
code's rational (a bound lowered by a few eta would still round to the same float KAPPA, so only
the rationals show it); the import-time range check; the coefficients c_j = fl(1/j!)."""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import mpmath
import pytest

from softrank.validated import softmax_binary64 as sb
from softrank.validated.balls import float_at_least

U = Fraction(1, 2**53)
ETA = Fraction(1, 2**1074)
N = 12  # the degree
K = 1010  # |k| <= K
R = Fraction(0.347)  # R_MAX as the binary64 number the code holds


def m2() -> Fraction:
    """M2 = K |LN2_LO| (1 + u) + eta/2 >= |fl(k LN2_LO)|."""
    return K * abs(Fraction(sb.LN2_LO)) * (1 + U) + ETA / 2


def test_constants_are_the_proofs():
    assert (sb.DEGREE, sb.K_MAX, Fraction(sb.R_MAX), sb.TINY_CUT) == (N, K, R, -700.0)
    assert len(sb.COEFFS) == N + 1
    assert all(c == float(Fraction(1, factorial(j))) for j, c in enumerate(sb.COEFFS))
    assert sb.M2 == m2()


def test_ln2_split_and_its_error_enclose_ln2():
    mpmath.mp.prec = 400
    ln2 = mpmath.log(2)
    hi = Fraction(sb.LN2_HI)
    assert (hi * 2**40).denominator == 1 and 0 < hi < 1  # a multiple of 2^-40: k LN2_HI is exact
    total = hi + Fraction(sb.LN2_LO)
    assert abs(mpmath.mpf(total.numerator) / total.denominator - ln2) <= mpmath.mpf(sb.LN2_SPLIT_ERR.numerator) / sb.LN2_SPLIT_ERR.denominator
    assert sb.LN2_SPLIT_ERR < Fraction(1, 2**100)
    assert mpmath.mpf(sb.LN2_UPPER.numerator) / sb.LN2_UPPER.denominator >= ln2
    assert sb.LN2_UPPER - Fraction(693147180559945, 10**15) < Fraction(1, 10**14)
    inv_err = abs(mpmath.mpf(sb.INV_LN2) - 1 / ln2)
    assert mpmath.mpf(sb.INV_LN2_ERR.numerator) / sb.INV_LN2_ERR.denominator >= inv_err


def test_p1_range_of_the_reduced_argument():
    """|r_f| (1 - u - u/(1 - u)) <= ln2 phi + 2 u M2 + eta/2 + K Delta with
    phi = 1/2 + u K + eta/2 + 700 |INV_LN2 - 1/ln2|."""
    phi = Fraction(1, 2) + U * K + ETA / 2 + 700 * sb.INV_LN2_ERR
    want = (sb.LN2_UPPER * phi + 2 * U * m2() + ETA / 2 + K * sb.LN2_SPLIT_ERR) / (1 - U - U / (1 - U))
    assert sb.reduction_bound() == want
    assert Fraction(34657, 100000) < want <= R


def test_p1_reduction_error():
    """nu = u R + u (R/(1 - u) + M2) + u M2 + eta/2 + K Delta."""
    want = U * R + U * (R / (1 - U) + m2()) + U * m2() + ETA / 2 + K * sb.LN2_SPLIT_ERR
    assert sb.reduction_error() == want


def proof_horner_error(r: Fraction) -> Fraction:
    """B_n = c_n, M_j = r B_(j+1) (1 + u) + eta/2 + c_j, B_j = M_j (1 + u), E_n = 0,
    E_j = r E_(j+1) + u r B_(j+1) + eta/2 + u M_j; returns E_0."""
    c = [Fraction(x) for x in sb.COEFFS]
    b, e = c[N], Fraction(0)
    for j in range(N - 1, -1, -1):
        m = r * b * (1 + U) + ETA / 2 + c[j]
        e = r * e + U * r * b + ETA / 2 + U * m
        b = m * (1 + U)
    return e


@pytest.mark.parametrize("r", [R, Fraction(1, 8), Fraction(0)])
def test_p2_horner_error(r):
    assert sb.horner_error(r) == proof_horner_error(r)


def test_p3_polynomial_error_and_kappa():
    coef = sum(abs(Fraction(c) - Fraction(1, factorial(j))) * R**j for j, c in enumerate(sb.COEFFS))
    e_r = sb._exp_upper(R)
    mpmath.mp.prec = 300
    exact = mpmath.exp(mpmath.mpf(R.numerator) / R.denominator)
    assert exact <= mpmath.mpf(e_r.numerator) / e_r.denominator <= exact * (1 + mpmath.mpf(2) ** -150)
    assert sb.polynomial_error() == coef + R ** (N + 1) / factorial(N + 1) * e_r
    kappa1 = (proof_horner_error(R) + sb.polynomial_error()) * e_r
    nu = sb.reduction_error()
    kappa = (1 + kappa1) * (1 + nu / (1 - nu)) - 1
    assert sb.exp_relative_error() == kappa
    assert sb.KAPPA == Fraction(float_at_least(kappa)) and 7 * U < sb.KAPPA < 8 * U  # about 7.2 u


def test_a_range_bound_above_r_max_stops_the_proof(monkeypatch):
    """kappa is only proved when reduction_bound() <= R_MAX: at R_MAX just below the bound the
    computation raises; at R_MAX equal to it, it goes through."""
    bound = sb.reduction_bound()
    monkeypatch.setattr(sb, "R_MAX", bound - Fraction(1, 2**80))
    with pytest.raises(ArithmeticError, match="R_MAX"):
        sb.exp_relative_error()
    monkeypatch.setattr(sb, "R_MAX", bound)
    assert sb.exp_relative_error() > 0
