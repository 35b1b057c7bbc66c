"""Regression: a ball for a sum of squares can reach below zero (x * x of a ball around 0), and
its square root was NaN, which left 8 of 364 Frobenius checks of the default panel unresolved
under --strict. The exact value is >= 0, so the checkers intersect with [0, inf) first."""

from fractions import Fraction

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import lower_fraction, upper_fraction

from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.outcome import Outcome
from softrank.validated.singular_values import _arb_frobenius_upper
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure


def test_frobenius_bound_of_balls_around_zero_is_finite_and_sound():
    rows = [[arb("0 +/- 1e-20"), arb("1e-30 +/- 1e-20")], [arb("-2e-30 +/- 3e-20"), arb(0)]]
    bound = _arb_frobenius_upper(rows)
    assert bound is not None and 0 <= bound < Fraction(1, 10**19)


def test_strict_frobenius_lower_one_is_proved_on_a_peaked_operator():
    rng = np.random.default_rng(5)
    h = 6.0 * rng.normal(size=(24, 24))
    enc = rowsoftmax_enclosure(logits_balls(logits=h))
    for strict in (False, True):
        chk = check_frobenius_tail(enc, Fraction(1, 4), 1, strict=strict)
        assert chk.outcome is Outcome.PROVED, (strict, chk.reason)


def test_arb_mat_of_enclosure_keeps_balls():
    enc = rowsoftmax_enclosure(logits_balls(logits=np.zeros((3, 3))))
    m = arb_mat(enc.balls)
    third = Fraction(1, 3)
    assert all(lower_fraction(m[i, j]) <= third <= upper_fraction(m[i, j]) for i in range(3) for j in range(3))


def test_the_arb_referee_decides_when_the_binary64_bound_cannot():
    """A = diag(1, 1/2) exactly, lower = 2: the tail is sigma_2^2 = 1/4 against m eps^2 = 2 eps^2,
    with 2 eps^2 below 1/4 by a relative 2^-50: within binary64's singular-value bounds (unresolved
    there), so the default route goes on to Arb, which proves it; with a relative 2^-45 to spare the
    binary64 route decides first."""
    import math

    from softrank.validated.softmax_enclosure import SoftmaxEnclosure

    mid = np.array([[1.0, 0.0], [0.0, 0.5]])

    def enclosure():
        return SoftmaxEnclosure(mid, np.zeros_like(mid), balls=[[arb(float(v)) for v in row] for row in mid])

    for gap, route in ((50, "arb"), (45, "binary64-bound")):
        eps = Fraction(math.isqrt(int(Fraction(2 ** 200, 8) * (1 - Fraction(1, 2 ** gap)))), 2 ** 100)
        assert 2 * eps * eps < Fraction(1, 4) * (1 - Fraction(1, 2 ** gap)) * (1 + Fraction(1, 2 ** 90))
        chk = check_frobenius_tail(enclosure(), eps, 2)
        assert (chk.outcome, chk.route) == (Outcome.PROVED, route)


def test_without_lemma_e_bounds_the_strict_route_is_unresolved_and_says_why(monkeypatch):
    """When Lemma E's Arb route gives no bounds (a float SVD too far from orthogonal), the strict
    check is an UNRESOLVED result naming the reason, not a missing result or an exception."""
    import softrank.validated.frobenius_tail as ft
    from softrank.validated.singular_values import UNAVAILABLE

    monkeypatch.setattr(ft, "svd_bounds_arb", lambda *args, **kwargs: None)
    enc = rowsoftmax_enclosure(logits_balls(logits=np.eye(4)))
    chk = check_frobenius_tail(enc, Fraction(1, 4), 1, strict=True)
    assert chk.outcome is Outcome.UNRESOLVED and chk.reason == UNAVAILABLE and chk.route == "arb"
