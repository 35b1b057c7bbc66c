"""Lemma E against matrices with exactly known singular values: M = Q1 diag(d) Q2^T with rational
orthogonal Q1, Q2 (products of Householder reflections with integer vectors).  Every enclosure
must contain the exact value; widths are reported (target: relative width < 1e-10 at 256)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb_mat

from helpers import exact_svd_matrix, fmpq_mat_to_float
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
