"""Lemma E against matrices with exactly known singular values: M = Q1 diag(d) Q2^T with rational
orthogonal Q1, Q2 (products of Householder reflections with integer vectors).  Every enclosure
must contain the exact value; widths are reported (target: relative width < 1e-10 at 256)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, arb_mat, ctx

from helpers import exact_svd_matrix, fmpq_mat_to_float
from softrank.validated.balls import arb_mat_from_floats, float_at_least, float_at_most, upper_fraction
from softrank.validated.binary64_norms import U, frobenius_upper
from softrank.validated.singular_values import (
    svd_bounds_arb,
    svd_bounds_binary64,
    singular_values_enclosed,
    tail_norm_enclosed,
)

WIDTHS: dict[tuple, float] = {}


def _case(a: int, b: int, p: int, seed: int, spread: int = 4):
    rng = np.random.default_rng(seed)
    d = [Fraction(int(x), 7) * (-1) ** int(s) for x, s in zip(rng.integers(7, 7 * spread, size=p), rng.integers(0, 2, size=p))]
    m, sing = exact_svd_matrix(a, b, d, rng)
    m_f = fmpq_mat_to_float(m)
    # Round-to-nearest: |M - fl(M)| <= u/(1-u) |fl(M)| entrywise (no underflow at these sizes).
    delta = frobenius_upper(m_f) * U / (1 - U)
    return m, m_f, delta, sing


def _check_contains(enclosure, sing) -> float:
    worst = 0.0
    for (lo, hi), s in zip(enclosure, sing):
        assert lo <= s <= hi, (float(lo), float(s), float(hi))
        assert lo >= 0
        if s > 0:
            worst = max(worst, float((hi - lo) / s))
    return worst


def _check_tails(bounds, sing):
    for k in sorted({0, 1, len(sing) // 2, len(sing) - 1}):
        exact_sq = sum((s * s for s in sing[k:]), Fraction(0))
        lo, hi = tail_norm_enclosed(bounds, k)
        assert lo * lo <= exact_sq <= hi * hi


@pytest.mark.parametrize("a,b,p,seed", [(5, 5, 5, 0), (12, 7, 7, 1), (9, 16, 5, 2), (32, 32, 32, 3), (64, 48, 48, 4)])
def test_enclosures_contain_exact_singular_values(a, b, p, seed):
    m, m_f, delta, sing = _case(a, b, p, seed)
    b64 = svd_bounds_binary64(m_f, delta)
    assert b64 is not None and b64.route == "binary64-bound"
    WIDTHS[(a, b, "binary64")] = _check_contains(singular_values_enclosed(b64), sing)
    _check_tails(b64, sing)
    ball = svd_bounds_arb(arb_mat(m), m_f)
    assert ball is not None and ball.route == "arb"
    WIDTHS[(a, b, "arb")] = _check_contains(singular_values_enclosed(ball), sing)
    _check_tails(ball, sing)
    print(f"\nLemma E {a}x{b}: max relative width binary64-bound {WIDTHS[(a, b, 'binary64')]:.3e}, "
          f"arb {WIDTHS[(a, b, 'arb')]:.3e}")
    assert WIDTHS[(a, b, "arb")] < 1e-10


def test_size_256_relative_width_below_1e_10():
    m, m_f, delta, sing = _case(256, 256, 256, 7)
    b64 = svd_bounds_binary64(m_f, delta)
    w64 = _check_contains(singular_values_enclosed(b64), sing)
    ball = svd_bounds_arb(arb_mat(m), m_f)
    warb = _check_contains(singular_values_enclosed(ball), sing)
    print(f"\nLemma E at 256x256: max relative width binary64-bound {w64:.3e}, arb {warb:.3e}")
    assert w64 < 1e-10
    assert warb < 1e-10


def test_perturbation_charge_is_needed():
    """Without charging ||M - fl(M)||_F the enclosure is of fl(M), not of M: with delta = 0 the
    radius only covers the float SVD's own error; with delta it must still contain sigma(M)."""
    m, m_f, delta, sing = _case(16, 16, 16, 11)
    assert delta > 0
    b = svd_bounds_binary64(m_f, delta)
    b0 = svd_bounds_binary64(m_f, Fraction(0))
    assert b.rho - b0.rho >= delta * (1 - Fraction(1, 10**6))
    _check_contains(singular_values_enclosed(b), sing)


def test_rank_deficient_zero_singular_values_enclosed():
    m, m_f, delta, sing = _case(10, 8, 3, 5)
    assert sing[-1] == 0
    encl = singular_values_enclosed(svd_bounds_binary64(m_f, delta))
    _check_contains(encl, sing)
    # the zero singular values have tiny upper ends
    assert all(float(hi) < 1e-12 for lo, hi in encl[3:])


def test_bad_svd_is_rejected_not_trusted():
    """A 'float SVD' that is not one (U not orthogonal) gives no bounds rather than wrong ones."""
    rng = np.random.default_rng(3)
    m_f = rng.normal(size=(6, 6))
    u, s, vt = np.linalg.svd(m_f)
    assert svd_bounds_binary64(m_f, svd=(2 * u, s, vt)) is None
    # a wrong s with orthogonal factors: the residual rho absorbs the error; still contains truth
    s_true = np.linalg.svd(m_f, compute_uv=False)
    bad = svd_bounds_binary64(m_f, svd=(u, s * 1.001, vt))
    for (lo, hi), x in zip(singular_values_enclosed(bad), s_true):
        assert lo <= Fraction(float(x)) * (1 + Fraction(1, 10**9)) and hi >= Fraction(float(x)) * (1 - Fraction(1, 10**9))
    assert math.isfinite(float(bad.rho)) and bad.rho > Fraction(1, 10**4)


# --- The formulas of Lemma E's checker on inputs where every float operation is exact ----------
# (the expressions below are transcribed from proofs/lemma_E_singular_values.md and
# proofs/binary64_error_bounds.md, so that a weakened or dropped term is seen even when it is far
# below the rounding errors of realistic inputs).

ETA_DOC = Fraction(1, 2**1074)
U_DOC = Fraction(1, 2**53)


def _gamma(n: int) -> Fraction:
    return n * U_DOC / (1 - n * U_DOC)


def _n1_upper(sum_sq: float, n: int) -> Fraction:
    """N1: a bound >= the exact sum of squares whose binary64 evaluation (length n) is ``sum_sq``."""
    return (Fraction(sum_sq) + n * ETA_DOC) / (1 - _gamma(n))


def _n1_lower(sum_sq: float, n: int) -> Fraction:
    return max(Fraction(0), (Fraction(sum_sq) - n * ETA_DOC) / (1 + _gamma(n)))


def _sqrt_up(q: Fraction) -> Fraction:
    """N5: one step above the float square root of the float >= q."""
    return Fraction(math.nextafter(math.sqrt(float_at_least(q)), math.inf)) if q > 0 else Fraction(0)


def _sqrt_down(q: Fraction) -> Fraction:
    f = float_at_most(q) if q > 0 else 0.0
    return Fraction(math.nextafter(math.sqrt(f), 0.0)) if f > 0 else Fraction(0)


def _one_by_one_defect(q: float) -> Fraction:
    """The binary64 route's f for a 1 x 1 factor [[q]]: D = fl(fl(q^2) - 1),
    f = ||D||_F / (1 - u) + gamma_1 ||Q||_F^2 + eta, rounded up to a float."""
    d_entry = float(q * q) - 1.0
    d = _sqrt_up(_n1_upper(d_entry * d_entry, 1))
    return Fraction(float_at_least(d / (1 - U_DOC) + _gamma(1) * _n1_upper(q * q, 1) + ETA_DOC))


def _one_by_one_svd(u: float, s: float, vt: float):
    return np.array([[u]]), np.array([s]), np.array([[vt]])


@pytest.mark.parametrize("u,vt", [(0.0, 1.0), (1.0, 0.0), (2.0, 1.0), (1.0, 2.0), (0.0, 0.0)])
def test_arb_route_gives_no_bounds_when_a_defect_bound_reaches_one(u, vt):
    """||U^T U - I|| = 1 exactly for U = [[0]] (and 3 for U = [[2]]): Lemma E needs f < 1."""
    m = np.array([[0.5]])
    assert svd_bounds_arb(arb_mat([[0.5]]), m, svd=_one_by_one_svd(u, 1.0, vt)) is None


def test_arb_route_accepts_defects_below_one_and_rounds_the_factors_outward():
    """U = [[1/2]], V = [[3/4]]: f_u = 3/4 and f_v = 7/16 exactly, so
    c_lo <= sqrt((1/4)(9/16)) = 3/8 and c_hi >= sqrt((7/4)(23/16)) = sqrt(161/64), one step
    outside the float square roots (N5), then rounded outward to floats."""
    b = svd_bounds_arb(arb_mat([[0.375]]), np.array([[0.375]]), svd=_one_by_one_svd(0.5, 1.0, 0.75))
    assert b is not None and b.route == "arb"
    assert (b.f_u, b.f_v, b.rho) == (Fraction(3, 4), Fraction(7, 16), 0)
    assert b.c_lo == Fraction(math.nextafter(0.375, 0.0))
    assert b.c_hi == Fraction(math.nextafter(math.sqrt(161 / 64), math.inf))
    assert b.c_lo ** 2 <= Fraction(9, 64) <= Fraction(161, 64) <= b.c_hi ** 2
    ((lo, hi),) = singular_values_enclosed(b)
    assert lo <= Fraction(3, 8) <= hi  # sigma(M) = 3/8


def test_binary64_route_rejects_defect_at_least_one():
    m = np.array([[1.0]])
    assert svd_bounds_binary64(m, svd=_one_by_one_svd(2.0, 0.5, 1.0)) is None
    assert svd_bounds_binary64(m, svd=_one_by_one_svd(1.0, 1.0, 0.0)) is None
    assert svd_bounds_binary64(m, svd=_one_by_one_svd(0.5, 4.0, 1.0)) is not None


SQRT2_BELOW = math.nextafter(math.sqrt(2.0), 0.0)


def test_the_binary64_defect_bound_of_the_float_below_sqrt2_is_exactly_one():
    """The case f = 1 of the rejection test below (|q^2 - 1| = 1 - 4u, and the bound adds ~4u)."""
    assert _one_by_one_defect(SQRT2_BELOW) == 1
    assert abs(Fraction(SQRT2_BELOW) ** 2 - 1) < 1


@pytest.mark.parametrize("u,s,vt", [(1e70, 1e250, 1.0), (1.5, 1.7e308, 1.0), (1.4, 1.7e308, 1.5),
                                    (SQRT2_BELOW, 1.7e308, 1.0), (1.4, 1.7e308, SQRT2_BELOW)])
def test_binary64_route_rejects_a_bad_factor_before_further_float_work(u, s, vt):
    """A factor with f >= 1 (U = [[1e70]], U or V = [[1.5]], or f = 1 exactly) is rejected before
    U s is formed, so that product (which would overflow here) is never attempted: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert svd_bounds_binary64(np.array([[1.0]]), svd=_one_by_one_svd(u, s, vt)) is None


def test_binary64_route_gives_no_bound_when_a_norm_overflows():
    """M = [[1e200]] with its exact SVD: the residual is 0, but ||U s||_F^2 overflows."""
    with np.errstate(over="ignore"):
        assert svd_bounds_binary64(np.array([[1e200]]), svd=_one_by_one_svd(1.0, 1e200, 1.0)) is None
        # U = [[1e80]]: ||U||_F^2 = 1e160 is finite but ||fl(U^T U) - I||_F^2 overflows
        assert svd_bounds_binary64(np.array([[1.0]]), svd=_one_by_one_svd(1e80, 1.0, 1.0)) is None
        assert svd_bounds_binary64(np.array([[1.0]]), svd=_one_by_one_svd(1.0, 1.0, 1e80)) is None
    assert svd_bounds_binary64(np.array([[1e100]]), svd=_one_by_one_svd(1.0, 1e100, 1.0)) is not None


@pytest.mark.parametrize("q,r", [(0.5, 0.75), (1 + 2.0**-32, 1 - 2.0**-40), (1 + 2.0**-20, 0.875)])
def test_binary64_orthogonality_defect_is_the_documented_sum(q, r):
    """f = ||D||_F/(1 - u) + gamma_a ||U||_F^2 + p a eta (rounded up), for 1 x 1 factors; it is at
    least the exact ||U^T U - I|| = |q^2 - 1| and exceeds it by a few ulps only."""
    b = svd_bounds_binary64(np.array([[q * r]]), svd=_one_by_one_svd(q, 1.0, r))
    assert b is not None and b.route == "binary64-bound"
    assert b.f_u == _one_by_one_defect(q)
    assert b.f_v == _one_by_one_defect(r)
    for f, x in ((b.f_u, q), (b.f_v, r)):
        exact = abs(Fraction(x) ** 2 - 1)
        assert exact <= f <= exact + 8 * U_DOC


def test_binary64_defect_of_exactly_orthonormal_factors_is_the_a_priori_term():
    """U = I_3 (every product exact, D = 0): f_u is not 0 but gamma_3 ||U||_F^2 (plus the eta
    terms), since the bound cannot know that Q^T Q was computed exactly."""
    s = np.array([3.0, 2.0, 1.0])
    b = svd_bounds_binary64(np.diag(s), svd=(np.eye(3), s, np.eye(3)))
    d = _sqrt_up(_n1_upper(0.0, 9))
    expected = Fraction(float_at_least(d / (1 - U_DOC) + _gamma(3) * _n1_upper(3.0, 9) + 9 * ETA_DOC))
    assert b.f_u == b.f_v == expected
    assert 3 * _gamma(3) < expected < 4 * _gamma(3)


def _rho_terms(a: int, b: int, s: np.ndarray) -> Fraction:
    """Lemma E's rho without delta_F, for U, V with orthonormal unit columns and M_f = U S V^T
    computed exactly (R = 0): ||R||_F/(1-u) + gamma_p ||Us||_F ||V||_F + sqrt(ab) p eta
    + (u ||Us||_F + sqrt(ap) eta) ||V||_F / (1-u)."""
    p = s.shape[0]
    r_f = _sqrt_up(_n1_upper(0.0, a * b))
    us_f = _sqrt_up(_n1_upper(float(np.sum(s * s)), a * p))
    v_f = _sqrt_up(_n1_upper(float(p), p * b))
    return (r_f / (1 - U_DOC) + _gamma(p) * us_f * v_f + _sqrt_up(Fraction(a * b)) * p * ETA_DOC
            + (U_DOC * us_f + _sqrt_up(Fraction(a * p)) * ETA_DOC) / (1 - U_DOC) * v_f)


def _exact_rank3_case():
    a, b = 5, 4
    s = np.array([3.0, 2.0, 1.0])
    u, vt = np.eye(a)[:, :3], np.eye(b)[:3, :]
    return u, s, vt, (u * s) @ vt


def test_binary64_rho_is_the_documented_sum():
    u, s, vt, m_f = _exact_rank3_case()
    x = _rho_terms(5, 4, s)
    b = svd_bounds_binary64(m_f, svd=(u, s, vt))
    assert b.rho == Fraction(float_at_least(x))
    delta = Fraction(1, 3)
    assert svd_bounds_binary64(m_f, delta, svd=(u, s, vt)).rho == Fraction(float_at_least(x + delta))


def test_binary64_rho_charges_every_term_even_the_eta_sized_ones():
    """delta_F is chosen so that the documented sum lies 2^-1100 above a float F: the rho that is
    reported must be the next float above F.  A term dropped or shrunk, however small (the
    sqrt(ap) eta of the scaling error is about 7 eta), moves the sum below F."""
    u, s, vt, m_f = _exact_rank3_case()
    x = _rho_terms(5, 4, s)
    f = Fraction(math.nextafter(float_at_least(x), math.inf))
    delta = f - x + Fraction(1, 2**1100)
    assert delta > 0
    b = svd_bounds_binary64(m_f, delta, svd=(u, s, vt))
    assert b.rho >= x + delta
    assert b.rho == Fraction(math.nextafter(float(f), math.inf))


def test_binary64_rho_charges_no_more_than_the_documented_sum():
    """delta_F is chosen so that the documented sum is exactly a float F: rho must be F itself;
    any extra charge, however small, would round up past it."""
    u, s, vt, m_f = _exact_rank3_case()
    x = _rho_terms(5, 4, s)
    f = Fraction(math.nextafter(float_at_least(x), math.inf))
    b = svd_bounds_binary64(m_f, f - x, svd=(u, s, vt))
    assert b.rho == f


def test_tail_uses_n1_on_the_binary64_route_and_exact_sums_on_the_arb_route():
    u, s, vt, m_f = _exact_rank3_case()
    b64 = svd_bounds_binary64(m_f, svd=(u, s, vt))
    ball = svd_bounds_arb(arb_mat(m_f.tolist()), m_f, svd=(u, s, vt))
    assert (ball.f_u, ball.f_v, ball.rho) == (0, 0, 0)
    for k, tail_sq in ((0, 14.0), (1, 5.0), (2, 1.0), (3, 0.0)):
        n = 3 - k
        lo, hi = tail_norm_enclosed(b64, k)
        assert hi == b64.c_hi * _sqrt_up(_n1_upper(tail_sq, n)) + b64.rho
        assert lo == max(Fraction(0), b64.c_lo * _sqrt_down(_n1_lower(tail_sq, n)) - b64.rho)
        lo, hi = tail_norm_enclosed(ball, k)
        assert hi == ball.c_hi * _sqrt_up(Fraction(tail_sq))
        assert lo == ball.c_lo * _sqrt_down(Fraction(tail_sq))
        assert lo * lo <= Fraction(tail_sq) <= hi * hi


def test_tail_route_is_compared_by_value():
    """Bounds whose route is "arb" (an equal string built at run time) take the exact sum."""
    u, s, vt, m_f = _exact_rank3_case()
    b64 = svd_bounds_binary64(m_f, svd=(u, s, vt))
    as_arb = dataclasses.replace(b64, route="".join(["ar", "b"]))
    lo, hi = tail_norm_enclosed(as_arb, 1)
    assert hi == b64.c_hi * _sqrt_up(Fraction(5)) + b64.rho
    assert hi < tail_norm_enclosed(b64, 1)[1]


def _arb_defect(q: np.ndarray, prec: int) -> Fraction:
    """||Q^T Q - I||_F bounded by Arb balls at ``prec`` bits, as the Arb route documents."""
    with ctx.workprec(prec):
        qb = arb_mat_from_floats(q)
        g = (qb.transpose() * qb - arb_mat_from_floats(np.eye(q.shape[1]))).tolist()
        total = arb(0)
        for row in g:
            for x in row:
                total += x * x
        return upper_fraction(total.nonnegative_part().sqrt())


def _gram_schmidt(columns: list[list[int]]) -> np.ndarray:
    """Nearly orthonormal float columns, computed with Python's IEEE arithmetic alone (the same
    floats on every platform)."""
    out: list[list[float]] = []
    for c in columns:
        v = [float(x) for x in c]
        for q in out:
            d = sum(a * b for a, b in zip(v, q))
            v = [a - d * b for a, b in zip(v, q)]
        n = math.sqrt(sum(a * a for a in v))
        out.append([a / n for a in v])
    return np.array(out).T


def test_arb_route_evaluates_its_balls_at_128_bits():
    """The defect f_u of the Arb route is the upper end of the ball computation at 128 bits (for
    this U the end point does depend on the precision: 127 or 129 bits give other end points); it
    encloses the exact ||U^T U - I||_F tightly."""
    u = _gram_schmidt([[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8]])
    s = np.array([3.0, 2.0, 1.0])
    m = u * s
    b = svd_bounds_arb(arb_mat(m.tolist()), m, svd=(u, s, np.eye(3)))
    assert b.f_u == _arb_defect(u, 128)
    assert _arb_defect(u, 127) != b.f_u and _arb_defect(u, 129) != b.f_u
    eu = np.array(_frac(u), dtype=object)
    exact_sq = sum((x * x for row in (eu.T @ eu - np.eye(3, dtype=object)).tolist() for x in row), Fraction(0))
    assert 0 < exact_sq <= b.f_u ** 2 <= exact_sq * (1 + Fraction(1, 2**40))


def _frac(x: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in x.tolist()]


def test_binary64_route_near_the_top_of_binary64_gives_no_bound_rather_than_an_exception():
    """A matrix whose Frobenius norm is near the largest float: the residual bound rho may pass
    binary64's range, and the route then declines (None); it never raises."""
    big = math.sqrt(1.7976931348623157e308)
    for m in (np.array([[big]]), np.array([[big, big], [big, -big]]), np.array([[1e308, 1e308]])):
        b = svd_bounds_binary64(m)
        if b is not None:
            assert b.rho >= 0 and math.isfinite(float(b.rho))
