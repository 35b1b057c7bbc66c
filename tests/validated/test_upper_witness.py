"""The validated upper-witness kernels: enclosure of rowsoftmax, chi, both routes of Lemma U,
cross-checked against each other, against mpmath at 60 digits, and against exact rationals."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb

from softrank.validated.balls import (
    certainly_gt, certainly_le, float_at_least, float_at_most, lower_fraction, upper_fraction,
)
from softrank.validated.float_bounds import gamma, matmul_error_rowsum_upper, max_rowsum_abs_diff_upper
from softrank.validated.outcome import Outcome
from softrank.validated.softmax_enclosure import chi_upper, logits_balls, rowsoftmax_enclosure
from softrank.validated.upper_witness import check_upper_witness, witness_error_ball, witness_error_upper_binary64


def softmax64(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def mp_softmax_row(row):
    with mpmath.workdps(60):
        e = [mpmath.exp(mpmath.mpf(float(v))) for v in row]
        s = mpmath.fsum(e)
        return [x / s for x in e]


@pytest.mark.parametrize("spread", [0.1, 5.0, 60.0, 700.0])
def test_enclosure_contains_high_precision_softmax(spread):
    rng = np.random.default_rng(int(spread * 10))
    h = rng.normal(size=(7, 9)) * spread
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    with mpmath.workdps(60):
        for i in range(h.shape[0]):
            for j, a in enumerate(mp_softmax_row(h[i])):
                assert abs(a - mpmath.mpf(enc.a_mid[i, j])) <= mpmath.mpf(enc.a_rad[i, j])
    assert np.all(enc.a_rad < 1e-15)


def test_qk_form_encloses_the_same_operator_as_its_exact_logits():
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(5, 4)), rng.normal(size=(6, 4))
    bias = rng.normal(size=(5, 6))
    enc = rowsoftmax_enclosure(logits_balls(queries=q, keys=k, scale=0.125, bias=bias))
    with mpmath.workdps(60):
        for i in range(5):
            h = [mpmath.mpf(0.125) * mpmath.fsum(mpmath.mpf(q[i, l]) * mpmath.mpf(k[j, l]) for l in range(4)) + mpmath.mpf(bias[i, j]) for j in range(6)]
            e = [mpmath.exp(x) for x in h]
            s = mpmath.fsum(e)
            for j in range(6):
                assert abs(e[j] / s - mpmath.mpf(enc.a_mid[i, j])) <= mpmath.mpf(enc.a_rad[i, j])


def exact_uniform_case(rng, m, n, k):
    """H = 0, so A = 1/N exactly: the exact witness error is a rational we can compute."""
    h = np.zeros((m, n))
    x, y = rng.normal(size=(m, k)) / math.sqrt(n), rng.normal(size=(n, k)) / math.sqrt(n)
    exact = max(sum(abs(Fraction(1, n) - sum(Fraction(x[i, l]) * Fraction(y[j, l]) for l in range(k))) for j in range(n)) for i in range(m))
    return h, x, y, exact


@pytest.mark.parametrize("seed", range(5))
def test_both_routes_bound_the_exact_error_and_agree(seed):
    rng = np.random.default_rng(seed)
    h, x, y, exact = exact_uniform_case(rng, 6, 7, 3)
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    bound = witness_error_upper_binary64(enc.a_mid, enc.a_rad, x, y)
    ball = witness_error_ball(enc.balls, x, y)
    assert exact <= bound
    assert lower_fraction(ball) <= exact <= upper_fraction(ball)
    assert bound - exact < Fraction(1, 10**13)  # the a-priori route is tight, not just sound


@pytest.mark.parametrize("n,k", [(32, 4), (64, 16), (128, 32)])
def test_binary64_route_is_sound_against_arb_on_random_operators(n, k):
    rng = np.random.default_rng(n + k)
    h = rng.normal(size=(n, n)) * 3
    a = softmax64(h)
    u, s, vt = np.linalg.svd(a)
    x, y = u[:, :k] * s[:k], vt[:k].T.copy()
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    bound = witness_error_upper_binary64(enc.a_mid, enc.a_rad, x, y)
    ball = witness_error_ball(enc.balls, x, y)
    assert bound >= lower_fraction(ball)  # never below a value the true error may take
    assert float(bound - upper_fraction(ball)) < 1e-12 * float(bound)


def test_chi_bounds_the_exact_distance_to_a_hat():
    n = 7
    h = np.zeros((3, n))
    a_hat = np.full((3, n), 1.0 / n)  # rounded 1/7
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    chi = chi_upper(enc, a_hat)
    exact = n * abs(Fraction(1, n) - Fraction(1.0 / n))
    assert exact <= chi < exact + Fraction(1, 10**14)


def test_check_is_three_valued_at_the_edge():
    rng = np.random.default_rng(9)
    h, x, y, exact = exact_uniform_case(rng, 5, 6, 2)
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    assert check_upper_witness(enc, x, y, exact + Fraction(1, 10**9)).outcome is Outcome.PROVED
    assert check_upper_witness(enc, x, y, exact + Fraction(1, 10**9), strict=True).outcome is Outcome.PROVED
    assert check_upper_witness(enc, x, y, exact - Fraction(1, 10**9)).outcome is Outcome.REFUTED
    # eps equal to the exact error: the ball straddles it, so the only honest answer is unresolved.
    at_edge = check_upper_witness(enc, x, y, exact)
    assert at_edge.outcome is Outcome.UNRESOLVED
    # eps below the exact error by 1e-40: never proved.
    assert check_upper_witness(enc, x, y, exact - Fraction(1, 10**40)).outcome is not Outcome.PROVED


def test_certain_comparisons_and_outward_conversions():
    ball = arb("1 +/- 0.25")
    assert not certainly_le(ball, Fraction(1)) and not certainly_gt(ball, Fraction(1))
    assert certainly_le(ball, Fraction(3, 2)) and certainly_gt(ball, Fraction(1, 2))
    for q in (Fraction(1, 3), Fraction(-2, 7), Fraction(10**30, 3), Fraction(1, 10**320)):
        assert Fraction(float_at_least(q)) >= q and Fraction(float_at_most(q)) <= q
    assert gamma(10) > 10 * Fraction(1, 2**53)


def test_float_bounds_return_none_on_overflow():
    big = np.full((2, 2), 1e308)
    assert max_rowsum_abs_diff_upper(big, None, -big) is None
    assert matmul_error_rowsum_upper(np.full((2, 1), 1e200), np.full((2, 1), 1e200)) is None


def test_rank_zero_witness():
    h = np.array([[0.0, 1.0], [2.0, -1.0]])
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    x, y = np.zeros((2, 0)), np.zeros((2, 0))
    assert check_upper_witness(enc, x, y, Fraction(99, 100)).outcome is Outcome.REFUTED  # ||A||_inf = 1


def test_the_rank_zero_witness_error_is_the_row_mass_one():
    h = np.random.default_rng(4).normal(size=(5, 7))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    chk = check_upper_witness(enc, np.zeros((5, 0)), np.zeros((7, 0)), Fraction(1, 4), strict=True)
    assert chk.outcome is Outcome.REFUTED and 1.0 <= float(chk.value) < 1.0 + 1e-12


def test_an_arb_route_proof_prints_its_bound():
    h = np.random.default_rng(5).normal(size=(6, 6))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    chk = check_upper_witness(enc, softmax64(h), np.eye(6), Fraction(1, 4), strict=True)
    assert chk.proved and chk.route == "arb" and chk.value != "inf" and 0 <= float(chk.value) < 1e-12


def test_an_overflowing_a_hat_leaves_the_direct_route_in_charge():
    """Lemma S's term overflows (a_hat far from A: no bound), the direct Lemma U bound still proves."""
    h = np.random.default_rng(6).normal(size=(4, 4))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    huge = np.full((4, 4), 1e308)
    huge[:, 1::2] = -1e308
    chk = check_upper_witness(enc, softmax64(h), np.eye(4), Fraction(1, 4), chi=Fraction(1, 10 ** 15), a_hat=huge)
    assert chk.proved and chk.route == "binary64-bound"


def test_a_bound_exactly_equal_to_eps_proves_on_each_route():
    """Lemma U needs error <= eps: a binary64 bound equal to eps proves on the binary64 route (not only
    through the Arb referee), and on the strict route an Arb upper end equal to eps proves."""
    rng = np.random.default_rng(11)
    h = rng.normal(size=(5, 6))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    u, s, vt = np.linalg.svd(softmax64(h))
    x, y = u[:, :2] * s[:2], vt[:2].T
    bound = witness_error_upper_binary64(enc.a_mid, enc.a_rad, x, y)
    chk = check_upper_witness(enc, x, y, bound)
    assert chk.proved and chk.route == "binary64-bound"
    top = upper_fraction(witness_error_ball(enc.balls, x, y))
    assert top < bound  # the Arb ball is tighter, so at eps = top the binary64 route cannot prove
    assert check_upper_witness(enc, x, y, top).route == "arb"
    chk = check_upper_witness(enc, x, y, top, strict=True)
    assert chk.proved and chk.route == "arb"


def test_the_enclosure_radius_is_the_documented_sum():
    """a_rad = up(up(rad) + |a_mid| 2^-52 + 2^-1070) (rad: Arb's radius, as a float rounded up):
    on uniform rows (A = 1/3, Arb's radius about 2^-80) it is |a_mid| 2^-52 to within 2^-70."""
    enc = rowsoftmax_enclosure(logits_balls(logits=np.zeros((2, 3))))
    want = enc.a_mid * 2.0**-52
    assert np.all(want <= enc.a_rad) and np.all(enc.a_rad <= want * (1 + 2.0**-16))
