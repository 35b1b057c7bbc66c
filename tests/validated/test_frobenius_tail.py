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
