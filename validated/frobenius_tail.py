"""Lemma F (proofs/lemma_F_frobenius_tail.md): ``sum_{i>k} sigma_i(A)^2 > m eps^2`` proves
``r_eps(A) >= k + 1``.

A is known only through its enclosure ``|A - a_mid| <= a_rad``.  The tail norm
``t_k(X) = sqrt(sum_{i>k} sigma_i(X)^2)`` is the Frobenius distance from X to the rank-k
matrices (Eckart-Young-Mirsky), hence 1-Lipschitz: ``t_k(A) >= t_k(a_mid) - ||A - a_mid||_F``
with ``||A - a_mid||_F <= ||a_rad||_F``.  This charge enters Lemma E as ``delta_F``; the Arb
route runs Lemma E on the ball matrix of A directly.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb_mat

from softrank.validated.binary64_norms import frobenius_upper
from softrank.validated.outcome import Check, Outcome, route_assumptions
from softrank.validated.singular_values import UNAVAILABLE, svd_bounds_arb, svd_bounds_binary64, tail_norm_enclosed
from softrank.validated.softmax_enclosure import SoftmaxEnclosure
from softrank.validated.tail_decision import decide_tail

LEMMA_F = "proofs/lemma_F_frobenius_tail.md"


def check_frobenius_tail(enc: SoftmaxEnclosure, eps: Fraction, lower: int, *, strict: bool = False,
                         operator_assumption: str = "") -> Check:
    """Lemma F.  Well-formed input (``lower >= 1``) and outcome PROVED imply
    ``sum_{i >= lower} sigma_i(A)^2 > m eps^2``, hence ``r_eps(A) >= lower`` for the exact operator
    A enclosed by ``enc``.  REFUTED: that tail is certainly ``<= m eps^2``.  Else UNRESOLVED."""
    k = lower - 1
    m, n = enc.a_mid.shape
    threshold_sq = m * eps * eps
    what = f"sum_(i>{k}) sigma_i(A)^2 > m eps^2 = {float(threshold_sq):.17g}"
    if k >= min(m, n):
        return Check(Outcome.REFUTED, LEMMA_F, value="0", route="exact",
                     assumptions=route_assumptions(operator_assumption, "exact"),
                     reason=f"{what} fails: rank(A) <= min(m, N) = {min(m, n)} <= k, so the tail is 0")
    last = None
    if not strict:
        bounds = _svd_bounds(enc, "binary64")
        if bounds is not None:
            lo, hi = tail_norm_enclosed(bounds, k)
            last = decide_tail(LEMMA_F, what, lo, hi, threshold_sq, bounds.route, operator_assumption)
            if last.outcome is not Outcome.UNRESOLVED:
                return last
    # Strict route, or the referee when the binary64 bound is inconclusive.
    bounds = _svd_bounds(enc, "arb")
    if bounds is None:
        return last or Check(Outcome.UNRESOLVED, LEMMA_F, route="arb", reason=UNAVAILABLE,
                             assumptions=route_assumptions(operator_assumption, "arb"))
    lo, hi = tail_norm_enclosed(bounds, k)
    return decide_tail(LEMMA_F, what, lo, hi, threshold_sq, bounds.route, operator_assumption)


def _svd_bounds(enc: SoftmaxEnclosure, route: str):
    """Lemma E's singular-value bounds of the enclosed A by one route; they depend on the
    enclosure alone, so they are computed once per enclosure and shared by every eps and claim."""
    key = ("lemma-E", route)
    if key not in enc.memo:
        if route == "binary64":
            delta = frobenius_upper(enc.a_rad)
            enc.memo[key] = None if delta is None else svd_bounds_binary64(enc.a_mid, delta)
        else:
            enc.memo[key] = svd_bounds_arb(arb_mat(enc.balls), enc.a_mid)
    return enc.memo[key]
