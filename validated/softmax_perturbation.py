"""The softmax perturbation inequality, checked in Arb balls (proofs/softmax_perturbation.md):

    ||softmax(x + h) - softmax(x)||_1 <= 2 tanh(osc(h) / 4),   osc(h) = max h - min h.

Inputs are rows of balls containing exact reals (zero-radius balls for binary64 data, wider balls
for enclosed quantities such as logits).  A comparison counts only when it is certain.
"""

from __future__ import annotations

from flint import arb

from softrank.validated.outcome import ARB_ASSUMPTIONS, Check, Outcome
from softrank.validated.precision import PRECISION, working_precision

LEMMA_SOFTMAX_PERTURBATION = "proofs/softmax_perturbation.md"


def softmax_balls(x: list[arb]) -> list[arb]:
    """Balls containing softmax(x) (shifted by the largest midpoint; the shift cancels exactly)."""
    shift = arb(max(float(v.mid()) for v in x))
    e = [(v - shift).exp() for v in x]
    total = sum(e[1:], e[0])
    return [v / total for v in e]


def oscillation_ball(h: list[arb]) -> arb:
    """A ball containing osc(h) = max_j h_j - min_j h_j."""
    hi, lo = h[0], h[0]
    for v in h[1:]:
        hi, lo = hi.max(v), lo.min(v)
    return hi - lo


def perturbation_sides_ball(x: list[arb], y: list[arb]) -> tuple[arb, arb]:
    """Balls containing (||softmax(y) - softmax(x)||_1, 2 tanh(osc(y - x)/4)) (h = y - x)."""
    sx, sy = softmax_balls(x), softmax_balls(y)
    lhs = sum((abs(a - b) for a, b in zip(sy, sx)), arb(0))
    rhs = 2 * (oscillation_ball([b - a for a, b in zip(x, y)]) / 4).tanh()
    return lhs, rhs


def check_softmax_perturbation(x: list[arb], y: list[arb], prec_bits: int = PRECISION["perturbation"]) -> tuple[Check, arb, arb]:
    """Well-formed input (balls containing the exact x and y = x + h) and outcome PROVED imply
    ``||softmax(y) - softmax(x)||_1 <= 2 tanh(osc(y - x)/4)`` for the exact vectors
    (proofs/softmax_perturbation.md).  REFUTED: the reverse strict inequality certainly holds (a
    counterexample to the lemma).  UNRESOLVED: the balls overlap (e.g. at equality).
    Returns (check, lhs ball, rhs ball)."""
    with working_precision(prec_bits):
        lhs, rhs = perturbation_sides_ball(x, y)
        diff = rhs - lhs
    if diff > 0:
        return Check(Outcome.PROVED, LEMMA_SOFTMAX_PERTURBATION, value=lhs.str(10), route="arb",
                     assumptions=list(ARB_ASSUMPTIONS)), lhs, rhs
    if diff < 0:
        return Check(Outcome.REFUTED, LEMMA_SOFTMAX_PERTURBATION, value=lhs.str(10), route="arb",
                     assumptions=list(ARB_ASSUMPTIONS), reason="lhs > 2 tanh(osc/4) certainly"), lhs, rhs
    return Check(Outcome.UNRESOLVED, LEMMA_SOFTMAX_PERTURBATION, value=lhs.str(10), route="arb",
                 assumptions=list(ARB_ASSUMPTIONS), reason="balls overlap"), lhs, rhs
