"""The tau bound of validated/tau.py pinned to proofs/tau_bound.md on small exact inputs:
``check_tau_bound`` (tau_hat = max_i 2 tanh(osc(H_i - T_i - c)/4), the certified distance, the
per-row decision and its counts, reasons, lemma, route and assumptions), the cycle lower bound
``q_lower_cycle``, ``tau_from_q_ball``, and the ``InputError`` (errors.py) line with which
the tau study refuses a record it cannot use."""

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from flint import arb

from softrank.validated import tau
from softrank.validated.balls import lower_fraction, upper_fraction
from softrank.errors import InputError
from softrank.validated.outcome import ARB_ASSUMPTIONS, Outcome


def _rows(h):
    return [[arb(float(v)) for v in row] for row in h]


def _softmax(v):
    top = max(v)
    e = [math.exp(a - top) for a in v]
    return [a / sum(e) for a in e]


def _t_exact(x0, y0):
    return [[sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(xr, yr)), Fraction(0)) for yr in y0]
            for xr in x0]


# m = 3 rows, n = 4 columns, r = 2 (all different); c is not constant
X0 = np.array([[1.0, 0.5], [-0.25, 2.0], [0.75, -1.0]])
Y0 = np.array([[0.5, 1.0], [-1.0, 0.25], [2.0, -0.5], [0.0, 1.5]])
C = np.array([0.25, -0.5, 1.0, 0.125])
H = np.array([[1.5, -0.75, 2.25, 1.0], [0.5, 0.25, -1.5, 3.25], [-0.5, 1.75, 0.0, -2.0]])


def _expected(x0, y0, c, h):
    """Per row: (2 tanh(osc(H_i - T_i - c)/4), ||softmax(H_i) - softmax(T_i + c)||_1) in float."""
    t = _t_exact(x0, y0)
    out = []
    for i, hrow in enumerate(h):
        base = [t[i][j] + Fraction(float(c[j])) for j in range(len(c))]
        f = [Fraction(float(hrow[j])) - base[j] for j in range(len(c))]
        osc = float(max(f) - min(f))
        dist = sum(abs(a - b) for a, b in zip(_softmax([float(v) for v in hrow]), _softmax([float(v) for v in base])))
        out.append((2 * math.tanh(osc / 4), dist))
    return out


# ---- check_tau_bound -------------------------------------------------------------------------

def test_tau_hat_and_distance_are_the_largest_row_values():
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    rows = _expected(X0, Y0, C, H)
    tau_hat, dist = max(r[0] for r in rows), max(r[1] for r in rows)
    assert chk.check.outcome is Outcome.PROVED and chk.check.proved
    assert chk.rows_proved == 3 and chk.rows == 3
    assert chk.tau_hat_upper >= tau_hat * (1 - 1e-15) and chk.tau_hat_upper == pytest.approx(tau_hat, rel=1e-14)
    assert chk.distance_upper == pytest.approx(dist, rel=1e-13)
    assert chk.distance_upper <= chk.tau_hat_upper


def test_check_names_lemma_route_assumptions_and_prints_tau_hat_rounded_up():
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    assert chk.check.lemma == tau.LEMMA_TAU == "proofs/tau_bound.md"
    assert chk.check.route == "arb" and chk.check.assumptions == ARB_ASSUMPTIONS and chk.check.reason == ""
    assert float(chk.check.value) == pytest.approx(chk.tau_hat_upper, rel=1e-15)
    assert Fraction(chk.check.value) >= Fraction(max(r[0] for r in _expected(X0, Y0, C, H))) * (1 - Fraction(1, 10**15))


def test_column_term_enters_as_t_plus_c():
    # with c = 0 the same logits give another tau_hat: c is used, and added to T
    zero = tau.check_tau_bound(_rows(H), X0, Y0, np.zeros(4))
    rows = _expected(X0, Y0, np.zeros(4), H)
    assert zero.tau_hat_upper == pytest.approx(max(r[0] for r in rows), rel=1e-14)
    assert abs(zero.tau_hat_upper - tau.check_tau_bound(_rows(H), X0, Y0, C).tau_hat_upper) > 1e-3


def test_logits_equal_to_t_plus_c_up_to_row_constants_give_tau_hat_zero_and_unresolved_rows():
    # H_i = T_i + c + const: osc = 0 on every row, both sides are 0 up to rounding; nothing is proved
    t = np.array([[float(v) for v in row] for row in _t_exact(X0, Y0)])
    h = t + C + np.array([[0.0], [1.0], [-2.0]])
    chk = tau.check_tau_bound(_rows(h), X0, Y0, C)
    assert chk.check.outcome is Outcome.UNRESOLVED and chk.rows_proved == 0
    assert chk.check.reason == "3 rows not certain"
    assert 0 <= chk.tau_hat_upper < 1e-30


def test_exactly_zero_sides_are_not_proved_and_not_refuted():
    # uniform rows: softmax is exactly (1/2, 1/2) on both sides; lhs = rhs = 0 exactly
    chk = tau.check_tau_bound(_rows([[0.0, 0.0], [0.0, 0.0]]), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros(2))
    assert chk.check.outcome is Outcome.UNRESOLVED and chk.rows_proved == 0
    assert chk.check.reason == "2 rows not certain"
    assert chk.tau_hat_upper == 0 and chk.distance_upper == 0 and chk.check.value == "0"


@pytest.mark.parametrize("m", [3, 2])
def test_one_wide_row_leaves_the_operator_unresolved_and_counts_the_others(m):
    rows = _rows(H[:m])
    rows[1] = [v + arb(0, 20) for v in rows[1]]
    chk = tau.check_tau_bound(rows, X0[:m], Y0, C)
    assert chk.check.outcome is Outcome.UNRESOLVED
    assert chk.rows_proved == m - 1 and chk.rows == m and chk.check.reason == "1 rows not certain"
    assert chk.tau_hat_upper > 1.9  # the wide row's rhs ball reaches near 2


def test_non_finite_logit_ball_gives_infinite_bounds():
    rows = _rows(H)
    rows[2][1] = arb(0, float("inf"))
    chk = tau.check_tau_bound(rows, X0, Y0, C)
    assert chk.check.outcome is Outcome.UNRESOLVED and chk.rows_proved == 2
    assert chk.tau_hat_upper == math.inf and chk.distance_upper == math.inf and chk.check.value == "inf"


def test_operator_without_rows_is_vacuously_proved_with_tau_hat_zero():
    chk = tau.check_tau_bound([], np.zeros((0, 2)), Y0, C)
    assert chk.check.outcome is Outcome.PROVED and chk.rows == 0 and chk.rows_proved == 0
    assert chk.tau_hat_upper == 0 and chk.distance_upper == 0 and chk.check.value == "0"


def test_many_rows_all_proved():
    # more rows than small integers Python caches: the count is compared by value
    m = 300
    rng = np.random.default_rng(4)
    x0 = np.round(rng.standard_normal((m, 1)) * 8) / 8
    y0 = np.array([[1.0], [-0.5], [0.25]])
    i = np.arange(m)
    h = x0 @ y0.T + np.column_stack([(i % 5 + 1) / 8, np.zeros(m), -(i % 3 + 1) / 16])
    chk = tau.check_tau_bound(_rows(h), x0, y0, np.zeros(3))
    assert chk.check.outcome is Outcome.PROVED and chk.rows_proved == m == chk.rows


def _substituted_sides(monkeypatch, sides):
    """Replace the per-row sides by the given (lhs, rhs) pairs: the lemma is true, so only
    substituted sides can violate it, and the decision alone is tested."""
    it = iter(sides)
    monkeypatch.setattr(tau, "perturbation_sides_ball", lambda x, y: next(it))


def test_certainly_violated_row_is_refuted_and_counted(monkeypatch):
    _substituted_sides(monkeypatch, [(arb(0.25), arb(0.5)), (arb(1), arb(0.5)), (arb(0.5, 0.25), arb(0.5))])
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    assert chk.check.outcome is Outcome.REFUTED
    assert chk.check.reason == "1 rows violate the perturbation bound certainly"
    assert chk.rows_proved == 1
    assert chk.tau_hat_upper == 0.5 and chk.distance_upper == 1


def test_refutation_needs_a_certain_violation(monkeypatch):
    # margins -2.5 and -0.5 are certain violations; an overlapping ball (-0.25 +- 0.5) is not
    _substituted_sides(monkeypatch, [(arb(3), arb(0.5)), (arb(1), arb(0.5)), (arb(0.75), arb(0.5, 0.5))])
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    assert chk.check.outcome is Outcome.REFUTED
    assert chk.check.reason == "2 rows violate the perturbation bound certainly" and chk.rows_proved == 0


def test_every_certain_positive_margin_is_proved(monkeypatch):
    # certain margins 0.25, 0.5 and 2 (two of them below one): all proved
    _substituted_sides(monkeypatch, [(arb(0.25), arb(0.5)), (arb(0), arb(0.5)), (arb(0), arb(2))])
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    assert chk.check.outcome is Outcome.PROVED and chk.rows_proved == 3 and chk.tau_hat_upper == 2


def test_infinite_side_alone_makes_the_bounds_infinite(monkeypatch):
    _substituted_sides(monkeypatch, [(arb(0.25), arb(0.5)), (arb(0.25), arb(0, float("inf"))), (arb(0), arb(1))])
    chk = tau.check_tau_bound(_rows(H), X0, Y0, C)
    assert chk.tau_hat_upper == math.inf and chk.distance_upper == math.inf and chk.check.value == "inf"


# ---- q_lower_cycle and tau_from_q_ball -------------------------------------------------------

def _cycle_mean(h, x0, y0, rows, cols):
    t = _t_exact(x0, y0)
    k = len(cols)
    f = [[Fraction(float(v)) - t[i][j] for j, v in enumerate(row)] for i, row in enumerate(h)]
    return sum(f[rows[l]][cols[l]] - f[rows[l]][cols[(l + 1) % k]] for l in range(k)) / k


@pytest.mark.parametrize("rows, cols", [([2, 0, 1], [1, 3, 0]), ([0, 1], [2, 1]), ([1, 1, 2, 0], [0, 2, 3, 1])],
                         ids=["three", "two", "four"])
def test_cycle_bound_is_the_mean_of_f_differences_around_the_cycle(rows, cols):
    ball = tau.q_lower_cycle(_rows(H), X0, Y0, rows, cols)
    expected = _cycle_mean(H, X0, Y0, rows, cols)
    assert expected != 0
    assert lower_fraction(ball) <= expected <= upper_fraction(ball)
    assert upper_fraction(ball) - lower_fraction(ball) < Fraction(1, 2**45)


def test_cycle_of_one_column_is_zero():
    ball = tau.q_lower_cycle(_rows(H), X0, Y0, [1], [2])
    assert ball.is_exact() and ball == 0


def test_long_cycle_through_one_row_telescopes_to_zero():
    k = 257  # longer than Python's cached small integers: lengths are compared by value
    y0 = np.arange(k, dtype=float).reshape(k, 1) / 4
    h = [[arb(float(v)) for v in np.arange(k) % 7]]
    ball = tau.q_lower_cycle(h, np.array([[0.5]]), y0, [0] * k, list(range(k)))
    assert lower_fraction(ball) <= 0 <= upper_fraction(ball)


@pytest.mark.parametrize("rows, cols", [([], []), ([0], [0, 1]), ([0, 1, 2], [0, 1])],
                         ids=["empty", "too-few-rows", "too-many-rows"])
def test_cycle_needs_as_many_rows_as_columns_and_at_least_one(rows, cols):
    with pytest.raises(ValueError, match="a cycle needs k >= 1 columns and k rows"):
        tau.q_lower_cycle(_rows(H), X0, Y0, rows, cols)


@pytest.mark.parametrize("q", [1.5, 0.25, 6.0])
def test_tau_from_q_is_two_tanh_of_a_quarter(q):
    ball = tau.tau_from_q_ball(arb(q))
    assert ball.rad() < 1e-30
    assert float(ball.mid()) == pytest.approx(2 * math.tanh(q / 4), rel=1e-15)


def test_tau_from_q_maps_lower_end_to_lower_end():
    ball = tau.tau_from_q_ball(arb(1, 0.5))  # q in [0.5, 1.5]
    low, high = 2 * math.tanh(0.5 / 4), 2 * math.tanh(1.5 / 4)
    assert low - 1e-6 < float(ball.lower()) <= low * (1 + 1e-15)
    assert high * (1 - 1e-15) <= float(ball.upper()) < high + 1e-6


# ---- malformed input -------------------------------------------------------------------------

def test_input_error_is_one_line_naming_where_and_field():
    err = InputError("store/records/r1", "logits", "bad value\nsecond line")
    assert (err.where, err.field, err.message) == ("store/records/r1", "logits", "bad value\nsecond line")
    assert err.one_line() == "store/records/r1: field 'logits' bad value second line"
    assert str(err) == err.one_line()


def test_input_error_without_a_field_names_only_where():
    err = InputError("arguments", "", "no records selected")
    assert err.one_line() == "arguments: no records selected"
    assert str(err) == "arguments: no records selected"


def test_tau_study_refuses_logits_outside_the_theory_range_with_one_line():
    from softrank.studies.theorem.record_logits import logits_float

    rec = SimpleNamespace(form="logits", logits=np.array([[0.0, 1e120], [1e120, 0.0]]), path="store/records/big")
    with pytest.raises(InputError) as info:
        logits_float(rec)
    assert info.value.where == "store/records/big" and info.value.field == "logits"
    assert info.value.one_line().startswith("store/records/big: field 'logits' the centred logits reach max |C|")
