"""The certain comparison shared by Lemmas F and P: an enclosed tail norm ``lo <= t <= hi`` against
a threshold ``thr_lo <= T <= thr_hi`` (all exact rationals).  PROVED needs ``lo^2 > thr_hi``
(with lo > 0); REFUTED needs ``hi^2 <= thr_lo``; anything else is UNRESOLVED, never false.
The reason states the inequality and by how much it is missed (relative margin).
"""

from __future__ import annotations

from fractions import Fraction

from softrank.validated.balls import decimal_at_least, decimal_at_most, scientific_text
from softrank.validated.outcome import Check, Outcome, route_assumptions


def decide_tail(lemma: str, what: str, lo: Fraction, hi: Fraction, thr_hi: Fraction, route: str,
                operator_assumption: str = "", thr_lo: Fraction | None = None) -> Check:
    thr_lo = thr_hi if thr_lo is None else thr_lo
    assumptions = route_assumptions(operator_assumption, route)
    lo_sq, hi_sq = lo * lo, hi * hi
    value = decimal_at_most(lo_sq)
    margin = (lo_sq - thr_hi) / thr_hi if thr_hi > 0 else None
    margin_text = "" if margin is None else f", relative margin {scientific_text(margin)}"
    if lo > 0 and lo_sq > thr_hi:
        return Check(Outcome.PROVED, lemma, value=value, route=route, assumptions=assumptions)
    bounds = f"tail^2 in [{decimal_at_most(lo_sq)}, {decimal_at_least(hi_sq)}], threshold <= {decimal_at_least(thr_hi)}"
    if hi_sq <= thr_lo:
        return Check(Outcome.REFUTED, lemma, value=value, route=route, assumptions=assumptions,
                     reason=f"{what} fails certainly: {bounds}{margin_text}")
    return Check(Outcome.UNRESOLVED, lemma, value=value, route=route, assumptions=assumptions,
                 reason=f"{what} not certain: {bounds}{margin_text}")
