"""``validated/contractive_decoder.py`` (Lemma D): the binary64 bounds are the documented sums term
by term (pinned on inputs where every float operation is exact), the producer's float value is the
sum it names, a decisive non-strict check is decided by the binary64 route and a strict one by Arb,
and the check decides 1% either side of the threshold 1."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb

from softrank.validated.binary64_norms import (U, max_abs_rowsum_lower, max_abs_rowsum_upper,
                                               nonneg_product_rowsum_upper)
from softrank.validated.contractive_decoder import (check_contractive_decoder, decoder_residual,
                                                    decoder_sum_binary64, decoder_sum_float)
from softrank.validated.float_bounds import matmul_error_rowsum_upper
from softrank.validated.outcome import Outcome
from softrank.validated.softmax_enclosure import SoftmaxEnclosure, logits_balls, rowsoftmax_enclosure


def _dyadic(rng, shape, scale=8):
    return rng.integers(-scale, scale + 1, size=shape) / 16.0  # every sum and product below is exact


def test_binary64_bounds_are_the_documented_sums():
    rng = np.random.default_rng(3)
    a_s, w = np.abs(_dyadic(rng, (3, 5))), 1.5 * _dyadic(rng, (5, 3))
    assert np.max(np.sum(np.abs(w), axis=1)) not in (0.0, 1.0)  # eps * wmax differs from eps / wmax, eps % wmax
    r_s = np.full_like(a_s, 2.0 ** -20)
    eps = Fraction(1, 8)
    lo, hi = decoder_sum_binary64(a_s, r_s, w, eps)
    z = decoder_residual(a_s, w)
    prod_err, rad = matmul_error_rowsum_upper(a_s, w.T), nonneg_product_rowsum_upper(r_s, np.abs(w))
    assert hi == max_abs_rowsum_upper(z) / (1 - U) + prod_err + rad + eps * max_abs_rowsum_upper(w)
    assert lo == max_abs_rowsum_lower(z) / (1 + U) - prod_err - rad + eps * max_abs_rowsum_lower(w)
    assert decoder_sum_binary64(a_s, r_s, w, eps, with_lower=False) == (None, hi)
    exact = max(sum(abs(Fraction(x) - (i == j)) for j, x in enumerate(row)) for i, row in enumerate(a_s @ w))
    exact += eps * max(sum(abs(Fraction(x)) for x in row) for row in w)
    assert lo <= exact <= hi and hi - lo < Fraction(1, 10**4)
    assert decoder_sum_float(a_s, w, 0.125) == float(exact)


def _decoder(seed: int, p: int = 4, n: int = 14):
    """A peaked operator, S its first p rows and W the least-squares left inverse of A_S (so that
    A_S W is close to I_p)."""
    h = 5.0 * np.random.default_rng(seed).normal(size=(10, n))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    rows = np.arange(p)
    a_s = np.asarray(enc.a_mid, dtype=np.float64)[rows]
    return enc, rows, np.linalg.pinv(a_s)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("strict", [False, True])
def test_decides_one_percent_either_side_of_one(seed, strict):
    enc, rows, w = _decoder(seed)
    a_s = np.asarray(enc.a_mid, dtype=np.float64)[rows]
    residual = float(np.max(np.sum(np.abs(a_s @ w - np.eye(len(rows))), axis=1)))
    wmax = float(np.max(np.sum(np.abs(w), axis=1)))
    assert residual < 1e-9
    for ratio, outcome in ((1.01, Outcome.PROVED), (0.99, Outcome.REFUTED)):
        eps = Fraction((1 - residual) / (ratio * wmax)).limit_denominator(10**12)  # sum = residual + eps wmax
        chk = check_contractive_decoder(enc, eps, rows, w, strict=strict)
        assert chk.outcome is outcome, (ratio, chk.reason)
        assert chk.route == ("arb" if strict else "binary64-bound")


def _wide(enc: SoftmaxEnclosure, radius: float) -> SoftmaxEnclosure:
    """The same midpoints with every radius ``radius`` (the Arb rows likewise)."""
    rad = np.full_like(enc.a_rad, radius)
    balls = [[arb(float(x), radius) for x in row] for row in enc.a_mid.tolist()]
    return SoftmaxEnclosure(enc.a_mid, rad, balls=balls)


@pytest.mark.parametrize("strict", [False, True])
def test_bounds_that_straddle_one_leave_the_claim_unresolved(strict):
    enc, rows, w = _decoder(1)
    wmax = float(np.max(np.sum(np.abs(w), axis=1)))
    eps = Fraction(1 / wmax).limit_denominator(10**12)  # the midpoint sum is 1 up to rounding
    chk = check_contractive_decoder(_wide(enc, 1e-3), eps, rows, w, strict=strict)
    assert chk.outcome is Outcome.UNRESOLVED and "not certain" in chk.reason
    refuted = check_contractive_decoder(enc, 2 * eps, rows, w, strict=strict)
    assert refuted.outcome is Outcome.REFUTED and "margin 1 - upper = -" in refuted.reason


def test_a_non_finite_arb_bound_is_unresolved():
    enc, rows, w = _decoder(2)
    inf = SoftmaxEnclosure(enc.a_mid, enc.a_rad, balls=[[arb(0, float("inf"))] * enc.a_mid.shape[1]] * 10)
    chk = check_contractive_decoder(inf, Fraction(1, 1000), rows, w, strict=True)
    assert chk.outcome is Outcome.UNRESOLVED and "not finite" in chk.reason and chk.route == "arb"


def test_a_decoder_that_overflows_binary64_goes_to_arb():
    enc, rows, w = _decoder(3)
    huge = np.full_like(w, 1e308)  # its sums overflow binary64: no binary64 bound, Arb decides
    chk = check_contractive_decoder(enc, Fraction(1, 4), rows, huge)
    assert chk.outcome is Outcome.REFUTED and chk.route == "arb"
    assert "margin 1 - upper = -" in chk.reason and "e+308" in chk.reason  # beyond binary64: a decimal


def _exact_enclosure(mid) -> SoftmaxEnclosure:
    """The zero-radius enclosure of the dyadic matrix ``mid``."""
    mid = np.array(mid, dtype=np.float64)
    return SoftmaxEnclosure(mid, np.zeros_like(mid), balls=[[arb(float(v)) for v in row] for row in mid])


def test_the_arb_referee_decides_when_the_binary64_bound_cannot():
    """p = 1, A_S = (1/2, 1/2), W = t e_0 with t = 2^-58: the sum is 1 - t/2 + eps t = 1 - 2^-61 at
    eps = 1/4, below binary64's resolution at 1, so the binary64 bound reaches 1 (unresolved) and
    the default route must go on to Arb, which proves it (its end points read at 256 bits, not 53);
    the strict route proves it too."""
    enc = _exact_enclosure([[0.5, 0.5]])
    w = np.array([[2.0**-58], [0.0]])
    rows = np.array([0])
    eps = Fraction(1, 4)
    assert decoder_sum_binary64(enc.a_mid[rows], enc.a_rad[rows], w, eps)[1] >= 1
    for strict in (False, True):
        chk = check_contractive_decoder(enc, eps, rows, w, strict=strict)
        assert (chk.outcome, chk.route) == (Outcome.PROVED, "arb")


def test_the_default_route_is_binary64_and_a_refutation_reports_its_margin():
    """Without ``strict`` a clear decoder is proved by the binary64 bound; a W far too large is
    refuted, and the reason's margin is 1 minus the printed upper end."""
    enc = _exact_enclosure([[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    rows = np.array([0, 1])
    w = np.array([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]])  # A_S W = I exactly; eps max_j ||W_j||_1 = 2 eps
    assert np.array_equal(enc.a_mid[rows] @ w, np.eye(2))
    chk = check_contractive_decoder(enc, Fraction(1, 8), rows, w)
    assert (chk.outcome, chk.route) == (Outcome.PROVED, "binary64-bound")
    big = check_contractive_decoder(enc, Fraction(1, 4), rows, 3 * w)
    assert big.outcome is Outcome.REFUTED and big.route == "binary64-bound"
    margin = float(big.reason.rsplit("margin 1 - upper = ", 1)[1])
    assert margin == pytest.approx(1 - float(big.value), rel=1e-3)


def test_a_zero_decoder_is_refuted_at_exactly_one():
    """W = 0 gives ||A_S 0 - I||_inf = 1 exactly: the binary64 bounds straddle 1, Arb's ball is the
    exact 1, and a sum certainly >= 1 (here equal to it) is a refutation."""
    enc = _exact_enclosure([[0.5, 0.5], [0.25, 0.75]])
    chk = check_contractive_decoder(enc, Fraction(1, 4), np.array([0, 1]), np.zeros((2, 2)))
    assert (chk.outcome, chk.route, chk.value) == (Outcome.REFUTED, "arb", "1")
