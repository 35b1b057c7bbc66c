"""The softmax perturbation check of validated/softmax_perturbation.py pinned to
proofs/softmax_perturbation.md: the softmax, oscillation and both-sides balls against their
formulas on small exact inputs, and the three-valued decision (proved only when rhs - lhs > 0
certainly; unresolved at equality, for exactly zero sides and for wide balls; refuted when the
inequality certainly fails), with its lemma, route, assumptions, value and reasons."""

import math

import pytest
from flint import arb, ctx

from softrank.validated import softmax_perturbation as sp
from softrank.validated.balls import lower_fraction, upper_fraction
from softrank.validated.outcome import ARB_ASSUMPTIONS, Outcome
from softrank.validated.precision import PRECISION


def _b(values):
    return [arb(float(v)) for v in values]


def _softmax(v):
    top = max(v)
    e = [math.exp(a - top) for a in v]
    return [a / sum(e) for a in e]


def _close(ball, expected, rel=1e-14):
    """The ball is narrow and its midpoint agrees with the float reference."""
    assert ball.rad() < 1e-30
    assert abs(float(ball.mid()) - expected) <= rel * max(abs(expected), 1e-300)


# ---- softmax and oscillation balls -----------------------------------------------------------

def test_softmax_balls_match_the_softmax_of_three_distinct_logits():
    x = [0.0, 2.0, -1.5]  # the largest midpoint is not the first entry
    with ctx.workprec(128):
        balls = sp.softmax_balls(_b(x))
    for ball, expected in zip(balls, _softmax(x)):
        _close(ball, expected)
    with ctx.workprec(128):
        total = sum(balls[1:], balls[0])
    assert lower_fraction(total) <= 1 <= upper_fraction(total)


def test_softmax_balls_of_equal_logits_are_exactly_uniform():
    balls = sp.softmax_balls(_b([3.0, 3.0, 3.0, 3.0]))
    assert all(b.is_exact() and b == arb(0.25) for b in balls)


@pytest.mark.parametrize("h, expected", [([5.0, 1.0, 2.0], 4), ([-3.0, 1.0, 0.5], 4), ([1.0, 7.0, 2.0], 6),
                                         ([1.0, -7.0, 2.0], 9), ([2.5, -0.5, 0.75, 1.0], 3)],
                         ids=["first-is-max", "first-is-min", "second-is-max", "second-is-min", "four"])
def test_oscillation_is_max_minus_min_exactly(h, expected):
    osc = sp.oscillation_ball(_b(h))
    assert osc.is_exact() and osc == expected


def test_oscillation_of_one_entry_is_zero():
    osc = sp.oscillation_ball(_b([4.5]))
    assert osc.is_exact() and osc == 0


# ---- both sides ------------------------------------------------------------------------------

def test_sides_are_the_l1_distance_and_two_tanh_of_a_quarter_oscillation():
    x, y = [0.5, -1.0, 2.0], [1.25, 0.5, -0.5]
    with ctx.workprec(128):
        lhs, rhs = sp.perturbation_sides_ball(_b(x), _b(y))
    dist = sum(abs(a - b) for a, b in zip(_softmax(y), _softmax(x)))
    h = [b - a for a, b in zip(x, y)]
    _close(lhs, dist, rel=1e-13)
    _close(rhs, 2 * math.tanh((max(h) - min(h)) / 4))


# ---- the decision ----------------------------------------------------------------------------

def test_strict_inequality_is_proved_with_lemma_route_value_and_assumptions():
    x, y = [0.0, 1.5, -0.75], [0.5, 1.0, 0.25]
    chk, lhs, rhs = sp.check_softmax_perturbation(_b(x), _b(y))
    assert chk.outcome is Outcome.PROVED and chk.proved
    assert 0 < float(rhs.mid()) - float(lhs.mid()) < 1  # a margin below one
    assert chk.lemma == sp.LEMMA_SOFTMAX_PERTURBATION == "proofs/softmax_perturbation.md"
    assert chk.route == "arb" and chk.assumptions == ARB_ASSUMPTIONS and chk.reason == ""
    assert chk.value == lhs.str(10)  # the left side, ten significant digits
    _close(lhs, sum(abs(a - b) for a, b in zip(_softmax(y), _softmax(x))), rel=1e-13)


def test_equality_case_is_unresolved_with_its_reason():
    a = 3.0  # x = (-a/4, a/4), h = (a/2, -a/2): both sides equal 2 tanh(a/4)
    chk, lhs, rhs = sp.check_softmax_perturbation(_b([-a / 4, a / 4]), _b([a / 4, -a / 4]))
    assert chk.outcome is Outcome.UNRESOLVED and chk.reason == "balls overlap"
    assert chk.value == lhs.str(10) and chk.route == "arb" and chk.assumptions == ARB_ASSUMPTIONS


def test_no_perturbation_of_a_uniform_row_is_unresolved_not_proved():
    # both sides are exactly zero: 0 <= 0 holds, but the check proves only a strict inequality
    chk, lhs, rhs = sp.check_softmax_perturbation(_b([1.0, 1.0]), _b([1.0, 1.0]))
    assert lhs.is_exact() and rhs.is_exact() and lhs == 0 and rhs == 0
    assert chk.outcome is Outcome.UNRESOLVED and chk.reason == "balls overlap"


def test_wide_balls_are_unresolved():
    chk, _, _ = sp.check_softmax_perturbation([arb(0, 2), arb(1)], [arb(0.5), arb(0.25, 2)])
    assert chk.outcome is Outcome.UNRESOLVED


@pytest.mark.parametrize("lhs, rhs", [(1.0, 0.5), (3.0, 0.5)], ids=["margin-half", "margin-two-and-half"])
def test_certain_violation_is_refuted(monkeypatch, lhs, rhs):
    # the lemma is true, so a violation needs substituted sides: the decision alone is tested
    monkeypatch.setattr(sp, "perturbation_sides_ball", lambda x, y: (arb(lhs), arb(rhs)))
    chk, got_lhs, got_rhs = sp.check_softmax_perturbation(_b([0.0]), _b([0.0]))
    assert chk.outcome is Outcome.REFUTED and chk.reason == "lhs > 2 tanh(osc/4) certainly"
    assert chk.value == arb(lhs).str(10) and chk.route == "arb" and chk.assumptions == ARB_ASSUMPTIONS
    assert got_lhs == arb(lhs) and got_rhs == arb(rhs)


@pytest.mark.parametrize("lhs, rhs, outcome", [(0.25, 2.5, Outcome.PROVED), (arb(0.5, 0.25), 0.5, Outcome.UNRESOLVED),
                                               (0.5, arb(0.5, 0.75), Outcome.UNRESOLVED)],
                         ids=["wide-margin", "lhs-ball-overlaps", "rhs-ball-overlaps"])
def test_decision_reads_only_certain_comparisons(monkeypatch, lhs, rhs, outcome):
    monkeypatch.setattr(sp, "perturbation_sides_ball", lambda x, y: (arb(lhs), arb(rhs)))
    chk, _, _ = sp.check_softmax_perturbation(_b([0.0]), _b([0.0]))
    assert chk.outcome is outcome


def test_default_precision_is_perturbation_prec_bits():
    x, y = _b([0.0, 1.5, -0.75]), _b([0.5, 1.0, 0.25])
    _, lhs, rhs = sp.check_softmax_perturbation(x, y)
    _, lhs128, rhs128 = sp.check_softmax_perturbation(x, y, prec_bits=128)
    assert PRECISION["perturbation"] == 128
    assert lhs.mid() == lhs128.mid() and lhs.rad() == lhs128.rad()
    assert rhs.mid() == rhs128.mid() and rhs.rad() == rhs128.rad()
