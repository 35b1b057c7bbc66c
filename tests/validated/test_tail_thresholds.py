"""``validated/frobenius_tail.py`` and ``validated/projected_tail.py`` at their thresholds: with eps
chosen so that the tail is 1% above (below) the lemma's threshold, the check proves (refutes) the
claim, on both routes, each naming the route that decided; the exact shortcut when the claimed
rank exceeds what the product can have; the threshold is the lemma's ``m eps^2`` (Lemma F) and
``s eps^2 max_j ||W_j||^2`` (Lemma P), not a neighbour of it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.outcome import Outcome
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure


def _operator(seed: int, m: int = 16, n: int = 12, scale: float = 3.0):
    h = scale * np.random.default_rng(seed).normal(size=(m, n))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    return enc, np.asarray(enc.a_mid, dtype=np.float64)


def _tail(M: np.ndarray, k: int) -> float:
    s = np.linalg.svd(M, compute_uv=False)
    return float(np.sum(s[k:] ** 2))


def _eps(tail: float, weight: float, ratio: float) -> Fraction:
    """The eps at which weight * eps^2 = tail / ratio (a rational near it)."""
    return Fraction(float(np.sqrt(tail / (ratio * weight)))).limit_denominator(10**12)


@pytest.mark.parametrize("seed, k", [(1, 2), (2, 5), (3, 8)])
@pytest.mark.parametrize("strict", [False, True])
def test_frobenius_tail_decides_one_percent_either_side_of_m_eps_squared(seed, k, strict):
    enc, a = _operator(seed)
    m = a.shape[0]
    tail = _tail(a, k)
    above = check_frobenius_tail(enc, _eps(tail, m, 1.01), k + 1, strict=strict)
    below = check_frobenius_tail(enc, _eps(tail, m, 0.99), k + 1, strict=strict)
    assert above.outcome is Outcome.PROVED and below.outcome is Outcome.REFUTED, (above.reason, below.reason)
    route = "arb" if strict else "binary64"
    assert above.route.startswith(route) and below.route.startswith(route)


def test_frobenius_tail_beyond_the_rank_is_refuted_exactly():
    enc, _ = _operator(4, m=6, n=5)
    for lower in (6, 7, 20):  # k = lower - 1 >= min(m, N) = 5
        chk = check_frobenius_tail(enc, Fraction(1, 100), lower)
        assert chk.outcome is Outcome.REFUTED and chk.route == "exact" and "min(m, N) = 5" in chk.reason
    assert check_frobenius_tail(enc, Fraction(1, 100), 5).route != "exact"  # k = 4 < min(m, N) = 5


def _projection(seed: int, n: int, q: int, scale: float) -> np.ndarray:
    w = np.random.default_rng(100 + seed).normal(size=(n, q))
    w[0] *= scale  # one heavy row: omega is a maximum over rows, not an average
    return w


@pytest.mark.parametrize("seed, k, q, heavy", [(1, 1, 6, 3.0), (2, 3, 8, 1.0), (3, 2, 4, 3.0), (4, 1, 5, 0.05)])
@pytest.mark.parametrize("strict", [False, True])
def test_projected_tail_decides_one_percent_either_side_of_s_eps_squared_omega_squared(seed, k, q, heavy, strict):
    enc, a = _operator(seed)
    rows = np.array([0, 2, 3, 5, 7, 8, 11, 13, 14])
    w = _projection(seed, a.shape[1], q, heavy)
    if heavy < 1:  # every row of W shorter than 1: omega^2 < 1
        w *= 0.1
        assert np.max(np.sum(w * w, axis=1)) < 1
    s, omega_sq = len(rows), float(np.max(np.sum(w * w, axis=1)))
    tail = _tail(a[rows] @ w, k)
    above = check_projected_tail(enc, _eps(tail, s * omega_sq, 1.01), k + 1, rows, w, strict=strict)
    below = check_projected_tail(enc, _eps(tail, s * omega_sq, 0.99), k + 1, rows, w, strict=strict)
    assert above.outcome is Outcome.PROVED and below.outcome is Outcome.REFUTED, (above.reason, below.reason)
    route = "arb" if strict else "binary64"
    assert above.route.startswith(route) and below.route.startswith(route)


def test_projected_tail_beyond_the_rank_of_the_product_is_refuted_exactly():
    enc, a = _operator(5)
    rows, w = np.array([1, 4, 6, 9]), _projection(5, a.shape[1], 3, 1.0)
    for lower in (4, 5):  # k >= min(s, q) = 3
        chk = check_projected_tail(enc, Fraction(1, 1000), lower, rows, w)
        assert chk.outcome is Outcome.REFUTED and chk.route == "exact" and "min(s, q) = 3" in chk.reason
    assert check_projected_tail(enc, Fraction(1, 1000), 3, rows, w).route != "exact"
    wide = _projection(5, a.shape[1], 6, 1.0)  # q = 6 > s = 4: the bound is s
    assert check_projected_tail(enc, Fraction(1, 1000), 5, rows, wide).route == "exact"


def test_a_tolerance_far_below_binary64_margins_is_decided():
    """eps = 10^-300 (a legal tolerance): the relative margin (about 10^600) is beyond binary64; the
    checks still decide, and print it as a decimal."""
    enc, a = _operator(6)
    tiny = Fraction(1, 10**300)
    assert check_frobenius_tail(enc, tiny, 3).outcome is Outcome.PROVED
    rows, w = np.array([0, 1, 2, 3]), _projection(6, a.shape[1], 4, 1.0)
    assert check_projected_tail(enc, tiny, 2, rows, w).outcome is Outcome.PROVED
