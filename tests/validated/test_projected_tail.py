"""Lemma P's checker (``validated/projected_tail.py``) pinned to its documented formulas
(proofs/lemma_P_projected_tail.md): the threshold ``s eps^2 omega^2`` with ``omega^2`` bounded by
N1 (binary64 route) or exactly in Arb balls (Arb route), the charge
``delta_F = ||a_rad_S||_F ||W||_F + gamma_N ||a_mid_S||_F ||W||_F + sqrt(s q) N eta`` handed to
Lemma E, and the decisions at the threshold on both routes.

Every input is dyadic with few bits, so each float operation on it is exact and the expected
quantities are computed here in exact rationals from the lemma's formulas.  The enclosures are
built directly (``a_mid``, ``a_rad`` and Arb balls ``a_mid +- a_rad``): Lemma P holds for any
operator A enclosed that way.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from flint import arb

import softrank.validated.projected_tail as pt
from softrank.validated.binary64_norms import frobenius_upper, product_error_frobenius_upper
from softrank.validated.outcome import Check, Outcome
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.softmax_enclosure import SoftmaxEnclosure

U = F(1, 2**53)  # unit roundoff (proofs/binary64_error_bounds.md)
ETA = F(1, 2**1074)  # smallest positive binary64 number, ibid.


def _gamma(n: int) -> F:
    return n * U / (1 - n * U)


def _enclosure(mid, rad=None) -> SoftmaxEnclosure:
    """The enclosure ``|A - mid| <= rad`` with Arb rows ``mid +- rad`` (exact for dyadic data)."""
    mid = np.array(mid, dtype=np.float64)
    rad = np.zeros_like(mid) if rad is None else np.array(rad, dtype=np.float64)
    balls = [[arb(float(m), float(r)) for m, r in zip(mr, rr)] for mr, rr in zip(mid, rad)]
    return SoftmaxEnclosure(mid, rad, balls=balls)


def _exact(x: np.ndarray) -> list[list[F]]:
    return [[F(v) for v in row] for row in x.tolist()]


def _omega_sq(w: np.ndarray) -> F:
    """max_j ||W_j||_2^2, exactly (0 for a W without rows)."""
    return max((sum((v * v for v in row), F(0)) for row in _exact(w)), default=F(0))


def _product_frobenius_sq(a: np.ndarray, w: np.ndarray) -> F:
    """||a W||_F^2, exactly."""
    ae, we = _exact(a), _exact(w)
    return sum((sum((ae[i][j] * we[j][c] for j in range(len(we))), F(0)) ** 2
                for i in range(len(ae)) for c in range(w.shape[1])), F(0))


def _sqrt_exact(x: F) -> F:
    """The exact square root of a rational square (the tests choose such norms)."""
    r = F(math.isqrt(x.numerator), math.isqrt(x.denominator))
    assert r * r == x, "test data must have rational norms"
    return r


@pytest.fixture
def spy(monkeypatch):
    """Records the delta handed to Lemma E's binary64 route and every threshold comparison, while
    the real functions still compute the result."""
    calls = {"delta": [], "decide": []}
    real_svd, real_decide = pt.svd_bounds_binary64, pt.decide_tail

    def svd_spy(m_f, delta_f=F(0), svd=None):
        calls["delta"].append(delta_f)
        return real_svd(m_f, delta_f, svd)

    def decide_spy(lemma, what, lo, hi, thr_hi, route, operator_assumption="", thr_lo=None):
        chk = real_decide(lemma, what, lo, hi, thr_hi, route, operator_assumption, thr_lo=thr_lo)
        calls["decide"].append({"thr_hi": thr_hi, "thr_lo": thr_lo, "route": route, "outcome": chk.outcome,
                                "lo": lo, "hi": hi})
        return chk

    monkeypatch.setattr(pt, "svd_bounds_binary64", svd_spy)
    monkeypatch.setattr(pt, "decide_tail", decide_spy)
    return calls


# s = 2 rows, N = 2, q = 1 (so k = 0 and the tail is ||A_S W||_F^2):
# A_S W = (3/8, 3/8)^T, tail^2 = 9/32; omega^2 = 1/4 (below 1); s eps^2 omega^2 = tail^2 at eps = 3/4.
BOUNDARY_A = [[0.5, 0.25], [0.25, 0.5]]
BOUNDARY_W = np.array([[0.5], [0.5]])
ROWS2 = np.array([0, 1])


def _boundary_eps() -> F:
    a = np.array(BOUNDARY_A)
    tail_sq, om_sq, s = _product_frobenius_sq(a, BOUNDARY_W), _omega_sq(BOUNDARY_W), 2
    assert om_sq < 1
    eps = _sqrt_exact(tail_sq / (s * om_sq))
    assert s * eps * eps * om_sq == tail_sq and 0 < eps < 1
    return eps


@pytest.mark.parametrize("strict", [False, True])
def test_decisions_either_side_of_s_eps_squared_omega_squared(strict):
    """Exactly at the threshold nothing is certain; a relative 2^-30 either side decides, on the
    binary64 route by default and on the Arb route when strict."""
    enc, eps = _enclosure(BOUNDARY_A), _boundary_eps()
    decided_on = "arb" if strict else "binary64-bound"
    above = check_projected_tail(enc, eps * (1 - F(1, 2**30)), 1, ROWS2, BOUNDARY_W, strict=strict)
    below = check_projected_tail(enc, eps * (1 + F(1, 2**30)), 1, ROWS2, BOUNDARY_W, strict=strict)
    at = check_projected_tail(enc, eps, 1, ROWS2, BOUNDARY_W, strict=strict)
    assert (above.outcome, above.route) == (Outcome.PROVED, decided_on)
    assert (below.outcome, below.route) == (Outcome.REFUTED, decided_on)
    # the binary64 bound is inconclusive there, so the Arb referee gives the answer on both routes
    assert (at.outcome, at.route) == (Outcome.UNRESOLVED, "arb")


def test_at_the_threshold_neither_route_refutes(spy):
    """At equality the tail is not <= any threshold below s eps^2 omega^2 and not > any above: each
    route's comparison is UNRESOLVED (a larger refutation threshold would refute a true bound)."""
    enc, eps = _enclosure(BOUNDARY_A), _boundary_eps()
    assert check_projected_tail(enc, eps, 1, ROWS2, BOUNDARY_W).outcome is Outcome.UNRESOLVED
    assert [(c["route"], c["outcome"]) for c in spy["decide"]] == [("binary64-bound", Outcome.UNRESOLVED),
                                                                   ("arb", Outcome.UNRESOLVED)]


def test_the_default_route_is_binary64_and_strict_is_keyword_only():
    enc, eps = _enclosure(BOUNDARY_A), _boundary_eps() / 2
    assert check_projected_tail(enc, eps, 1, ROWS2, BOUNDARY_W).route == "binary64-bound"
    by_name = check_projected_tail(enc=enc, eps=eps, lower=1, rows=ROWS2, w=BOUNDARY_W, strict=True)
    assert (by_name.outcome, by_name.route) == (Outcome.PROVED, "arb")
    with pytest.raises(TypeError):
        check_projected_tail(enc, eps, 1, ROWS2, BOUNDARY_W, True)  # strict is keyword-only


# s = 2 of m = 3 rows, N = 3, q = 2 (s != N), with exactly rational Frobenius norms:
# ||a_mid_S||_F = 1, ||a_rad_S||_F = 1/4, ||W||_F = 3/2, omega^2 = 5/4, sqrt(s q) = 2.
CHARGE_A = [[0.75, 0.0, 0.25], [0.5, 0.5, 0.5], [0.25, 0.5, 0.25]]
CHARGE_R = [[0.125, 0.125, 0.0], [0.25, 0.25, 0.25], [0.125, 0.0, 0.125]]
CHARGE_W = np.array([[1.0, 0.5], [0.5, 0.5], [0.5, 0.5]])
CHARGE_ROWS = np.array([0, 2])


@pytest.mark.parametrize("eps", [F(1, 64), F(1, 4), F(3, 4)])
def test_delta_and_thresholds_are_the_documented_formulas(spy, eps):
    enc = _enclosure(CHARGE_A, CHARGE_R)
    a_s, r_s, w = enc.a_mid[CHARGE_ROWS], enc.a_rad[CHARGE_ROWS], CHARGE_W
    s, n, q = len(CHARGE_ROWS), w.shape[0], w.shape[1]
    chk = check_projected_tail(enc, eps, 1, CHARGE_ROWS, w)
    assert isinstance(chk, Check)

    # delta_F (Lemma P, "How the enclosure of A is charged"), exactly as the helpers bound each norm
    [delta] = spy["delta"]
    w_f, a_f, r_f = frobenius_upper(w), frobenius_upper(a_s), frobenius_upper(r_s)
    assert delta == r_f * w_f + product_error_frobenius_upper(a_f, w_f, n, s, q)
    # ... and sandwiched by the formula on the exact norms: a bound, and a tight one
    a_fro, r_fro, w_fro = (_sqrt_exact(sum((v * v for row in _exact(x) for v in row), F(0))) for x in (a_s, r_s, w))
    assert (a_fro, r_fro, w_fro) == (1, F(1, 4), F(3, 2))
    formula = r_fro * w_fro + _gamma(n) * a_fro * w_fro + _sqrt_exact(F(s * q)) * n * ETA
    assert formula <= delta <= formula * (1 + F(1, 2**40))

    # thresholds: s eps^2 times N1's bounds on omega^2 (binary64), or omega^2 itself (Arb balls)
    om_sq = _omega_sq(w)
    assert om_sq == F(5, 4)
    om_hi = (om_sq + q * ETA) / (1 - _gamma(q))  # the float row sums of squares are exact here
    om_lo = max(F(0), (om_sq - q * ETA) / (1 + _gamma(q)))
    first = spy["decide"][0]
    assert first["route"] == "binary64-bound"
    assert (first["thr_hi"], first["thr_lo"]) == (s * eps * eps * om_hi, s * eps * eps * om_lo)
    assert first["thr_lo"] < s * eps**2 * om_sq < first["thr_hi"]


@pytest.mark.parametrize("eps", [F(1, 64), F(1, 4), F(3, 4)])
@pytest.mark.parametrize("w", [CHARGE_W, np.array([[0.25, 0.0], [0.0, 0.25], [0.125, 0.125]])],
                         ids=["omega_sq_above_1", "omega_sq_below_1"])
def test_arb_route_thresholds_are_s_eps_squared_omega_squared_exactly(spy, eps, w):
    enc = _enclosure(CHARGE_A, CHARGE_R)
    check_projected_tail(enc, eps, 1, CHARGE_ROWS, w, strict=True)
    [call] = spy["decide"]
    want = len(CHARGE_ROWS) * eps * eps * _omega_sq(w)
    assert call["route"] == "arb" and call["thr_hi"] == want and call["thr_lo"] == want


def test_an_enclosure_too_wide_to_decide_is_unresolved_on_both_routes():
    """With radius 1/8 around BOUNDARY_A, A = mid - rad has tail^2 = 1/8 and A = mid + rad has 1/2,
    either side of the threshold (just below the midpoint's 9/32): neither outcome may be certain,
    however small the float errors are (delta_F must charge the radius)."""
    rad = [[0.125, 0.125], [0.125, 0.125]]
    enc, eps = _enclosure(BOUNDARY_A, rad), _boundary_eps() * (1 - F(1, 2**10))
    thr = 2 * eps * eps * _omega_sq(BOUNDARY_W)
    lo_a, hi_a = np.array(BOUNDARY_A) - np.array(rad), np.array(BOUNDARY_A) + np.array(rad)
    assert _product_frobenius_sq(lo_a, BOUNDARY_W) < thr < _product_frobenius_sq(hi_a, BOUNDARY_W)
    for strict in (False, True):
        assert check_projected_tail(enc, eps, 1, ROWS2, BOUNDARY_W, strict=strict).outcome is Outcome.UNRESOLVED


def test_the_arb_referee_decides_when_the_binary64_bound_cannot(spy):
    """N = 2, q = 1 with cancellation: A W = 1 - (1 - 2^-20) = 2^-20 while ||A||_F ||W||_F ~ 2, so
    the binary64 charge gamma_N ||A|| ||W|| ~ 2^-51 exceeds the margin 2^-55; the Arb route is exact."""
    enc = _enclosure([[1.0, 1.0]])
    w = np.array([[1.0], [-1.0 + 2.0**-20]])
    rows = np.array([0])
    tail_sq, om_sq = _product_frobenius_sq(enc.a_mid, w), _omega_sq(w)
    assert (tail_sq, om_sq) == (F(1, 2**40), 1)
    eps = F(1, 2**20) * (1 - F(1, 2**35))
    assert tail_sq > eps * eps * om_sq
    chk = check_projected_tail(enc, eps, 1, rows, w)
    assert (chk.outcome, chk.route) == (Outcome.PROVED, "arb")
    assert [(c["route"], c["outcome"]) for c in spy["decide"]] == [("binary64-bound", Outcome.UNRESOLVED),
                                                                   ("arb", Outcome.PROVED)]


def test_a_w_whose_norm_overflows_binary64_is_decided_by_arb(spy):
    """W = 2^600 BOUNDARY_W: ||W||_F^2 is beyond binary64, so the binary64 route has no bound and is
    skipped (not entered with a missing norm); A_S W is BOUNDARY's (A scaled by 2^-600), and Arb decides."""
    a = (np.array(BOUNDARY_A) * 2.0**-600).tolist()
    w = BOUNDARY_W * 2.0**600
    enc = _enclosure(a)
    tail_sq, om_sq = _product_frobenius_sq(enc.a_mid[ROWS2], w), _omega_sq(w)
    eps = _sqrt_exact(tail_sq / (2 * om_sq))
    assert eps == F(3, 4) / 2**600
    for factor, want in ((1 - F(1, 2**30), Outcome.PROVED), (1 + F(1, 2**30), Outcome.REFUTED)):
        chk = check_projected_tail(enc, eps * factor, 1, ROWS2, w)
        assert (chk.outcome, chk.route) == (want, "arb")
    assert spy["delta"] == []


def test_a_product_beyond_binary64_is_unresolved_not_missing():
    """A W = 2^1024 is not a binary64 number: no Lemma E bound exists on either route, and the
    result is still a Check, UNRESOLVED."""
    enc = _enclosure([[1.0, 1.0]])
    w = np.array([[2.0**1023], [2.0**1023]])
    with np.errstate(over="ignore"):
        chk = check_projected_tail(enc, F(1, 2), 1, np.array([0]), w)
    assert isinstance(chk, Check) and chk.outcome is Outcome.UNRESOLVED


def test_an_operator_without_columns_has_a_zero_tail(spy):
    """N = 0: A_S W is the s x q zero matrix and omega^2 = 0 (no rows of W), so the threshold is 0
    and the tail 0 <= 0 is refuted (on the Arb route, exact here)."""
    enc = SoftmaxEnclosure(np.zeros((2, 0)), np.zeros((2, 0)), balls=[[], []])
    for strict in (False, True):
        spy["decide"].clear()
        chk = check_projected_tail(enc, F(1, 2), 1, ROWS2, np.zeros((0, 1)), strict=strict)
        assert (chk.outcome, chk.route) == (Outcome.REFUTED, "arb")
        last = spy["decide"][-1]
        assert (last["route"], last["thr_hi"], last["thr_lo"], last["hi"]) == ("arb", 0, 0, 0)
