"""Lemma U (proofs/lemma_U_upper_witness.md): a certified ``||A - X Y^T||_inf <= eps`` proves
``r_eps(A) <= k`` for factors X (m x k), Y (N x k); no rank test is needed.

Two routes to the upper bound on ``||A - X Y^T||_inf``:

- ``binary64-bound``: the product in BLAS binary64 with the a-priori bounds of
  proofs/binary64_error_bounds.md, against the enclosure of A (or against A_hat with chi charged,
  Lemma S).  Cost close to the plain float64 check.
- ``arb``: every step in Arb balls (``--strict``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb

from softrank.validated.balls import arb_mat_from_floats, arb_max, certainly_gt, decimal_at_least, upper_fraction
from softrank.validated.float_bounds import matmul_error_rowsum_upper, max_rowsum_abs_diff_upper
from softrank.validated.outcome import Check, Outcome, route_assumptions
from softrank.validated.precision import working_precision
from softrank.validated.softmax_enclosure import SoftmaxEnclosure

LEMMA_U = "proofs/lemma_U_upper_witness.md"


def witness_error_upper_binary64(a_mid: np.ndarray, a_rad: np.ndarray | None, x: np.ndarray,
                                 y: np.ndarray) -> Fraction | None:
    """Exact rational upper bound on ``max_i sum_j |A_ij - (X Y^T)_ij|`` for every A with
    ``|A - a_mid| <= a_rad`` (a_rad None means A = a_mid exactly). None on overflow.

    ``|A - XY^T| <= a_rad + |a_mid - fl(XY^T)| + |fl(XY^T) - XY^T|``, row-summed: Lemma B2 for
    the first two terms, Lemma B3 for the product error (proofs/binary64_error_bounds.md)."""
    return _witness_bounds(x, y, [(a_mid, a_rad)])[0]


def _witness_bounds(x: np.ndarray, y: np.ndarray, operators) -> list[Fraction | None]:
    """The bound above for each ``(a_mid, a_rad)`` in ``operators``, with the product fl(X Y^T)
    and its error bound computed once for all of them."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = x @ y.T
    second = matmul_error_rowsum_upper(x, y)
    out = []
    for a_mid, a_rad in operators:
        first = max_rowsum_abs_diff_upper(a_mid, a_rad, p)
        out.append(None if first is None or second is None else first + second)
    return out


def witness_error_ball(balls: list[list[arb]], x: np.ndarray, y: np.ndarray) -> arb:
    """A ball containing ``||A - X Y^T||_inf`` computed entirely in Arb (strict route)."""
    with working_precision("enclosure"):
        if x.shape[1] == 0:
            return arb_max(sum((abs(a) for a in row), arb(0)) for row in balls)
        prod = (arb_mat_from_floats(x) * arb_mat_from_floats(y.T)).tolist()
        return arb_max(sum((abs(a - b) for a, b in zip(arow, brow)), arb(0)) for arow, brow in zip(balls, prod))


def check_upper_witness(enc: SoftmaxEnclosure, x: np.ndarray, y: np.ndarray, eps: Fraction,
                        *, strict: bool = False, chi: Fraction | None = None,
                        a_hat: np.ndarray | None = None, operator_assumption: str = "") -> Check:
    """Lemma U (proofs/lemma_U_upper_witness.md), with Lemma S (proofs/lemma_S_slack_sandwich.md)
    as a second binary64 route when ``chi`` and ``a_hat`` are given.

    Well-formed input and outcome PROVED imply ``||A - X Y^T||_inf <= eps``, hence
    ``r_eps(A) <= x.shape[1]``.  REFUTED means ``||A - X Y^T||_inf > eps`` certainly (from an Arb
    evaluation).  UNRESOLVED otherwise.
    """
    if not strict:
        with_chi = chi is not None and a_hat is not None
        bounds = _witness_bounds(x, y, [(enc.a_mid, enc.a_rad)] + ([(a_hat, None)] if with_chi else []))
        direct = bounds[0]
        via_chi = None if not with_chi or bounds[1] is None else bounds[1] + chi
        candidates = [(v, r) for v, r in ((direct, "binary64-bound"), (via_chi, "binary64-bound+chi")) if v is not None]
        if candidates:
            bound, route = min(candidates, key=lambda t: t[0])
            if bound <= eps:
                return Check(Outcome.PROVED, LEMMA_U, value=decimal_at_least(bound), route=route,
                             assumptions=route_assumptions(operator_assumption, route))
    # Strict route, or the referee when binary64 bounds are inconclusive.
    ball = witness_error_ball(enc.balls, x, y)
    arb_only = route_assumptions(operator_assumption, "arb")
    value = decimal_at_least(upper_fraction(ball)) if ball.is_finite() else "inf"
    if ball.is_finite() and upper_fraction(ball) <= eps:
        return Check(Outcome.PROVED, LEMMA_U, value=value, route="arb", assumptions=arb_only)
    if certainly_gt(ball, eps):
        return Check(Outcome.REFUTED, LEMMA_U, value=value, route="arb", assumptions=arb_only,
                     reason="||A - X Y^T||_inf > eps certainly")
    return Check(Outcome.UNRESOLVED, LEMMA_U, value=value, route="arb", assumptions=arb_only,
                 reason="the ball for ||A - X Y^T||_inf straddles eps")
