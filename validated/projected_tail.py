"""Lemma P (proofs/lemma_P_projected_tail.md): rows S (|S| = s), any W (N x q),
``omega = max_j ||W_j||_2``: ``sum_{i>k} sigma_i(A_S W)^2 > s eps^2 omega^2`` proves
``r_eps(A) >= k + 1``.

``A_S W`` is not formed exactly: with ``M_f = fl(a_mid_S W)``,
``||A_S W - M_f||_F <= ||a_rad_S||_F ||W||_F + gamma_N ||a_mid_S||_F ||W||_F + sqrt(s q) N eta``
(enclosure of A, then R3), charged to Lemma E as ``delta_F``.  The Arb route forms ``A_S W`` as a
ball matrix.  No orthonormality of W is assumed.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import arb_mat_from_floats, lower_fraction, upper_fraction
from softrank.validated.binary64_norms import (frobenius_upper, max_row_sq_lower, max_row_sq_upper,
                                               product_error_frobenius_upper)
from softrank.validated.outcome import Check, Outcome, route_assumptions
from softrank.validated.precision import working_precision
from softrank.validated.singular_values import UNAVAILABLE, svd_bounds_arb, svd_bounds_binary64, tail_norm_enclosed
from softrank.validated.softmax_enclosure import SoftmaxEnclosure
from softrank.validated.tail_decision import decide_tail

LEMMA_P = "proofs/lemma_P_projected_tail.md"


def _omega_sq_arb(w: np.ndarray) -> tuple[Fraction, Fraction]:
    """Exact-rational bounds on ``max_j ||W_j||_2^2`` from Arb balls."""
    with working_precision("singular_values"):
        best_lo, best_hi = Fraction(0), Fraction(0)
        for row in w.tolist():
            t = arb(0)
            for x in row:
                t += arb(x) * arb(x)
            best_lo = max(best_lo, lower_fraction(t))
            best_hi = max(best_hi, upper_fraction(t))
    return best_lo, best_hi


def check_projected_tail(enc: SoftmaxEnclosure, eps: Fraction, lower: int, rows: np.ndarray, w: np.ndarray,
                         *, strict: bool = False, operator_assumption: str = "") -> Check:
    """Lemma P.  Well-formed input (distinct ``rows`` in [0, m), W of shape (N, q), ``lower >= 1``)
    and outcome PROVED imply ``sum_{i >= lower} sigma_i(A_S W)^2 > s eps^2 omega^2``, hence
    ``r_eps(A) >= lower`` for the exact operator A enclosed by ``enc``.  REFUTED: the tail is
    certainly ``<= s eps^2 omega^2``.  Else UNRESOLVED."""
    k = lower - 1
    s, q = len(rows), w.shape[1]
    what = f"sum_(i>{k}) sigma_i(A_S W)^2 > s eps^2 omega^2 (s={s}, q={q})"
    if k >= min(s, q):
        return Check(Outcome.REFUTED, LEMMA_P, value="0", route="exact",
                     assumptions=route_assumptions(operator_assumption, "exact"),
                     reason=f"{what} fails: rank(A_S W) <= min(s, q) = {min(s, q)} <= k, so the tail is 0")
    a_s = enc.a_mid[rows]
    m_f = a_s @ w
    last = None
    if not strict:
        om_hi, om_lo = max_row_sq_upper(w), max_row_sq_lower(w)
        w_f, a_f, r_f = frobenius_upper(w), frobenius_upper(a_s), frobenius_upper(enc.a_rad[rows])
        if None not in (om_hi, om_lo, w_f, a_f, r_f) and np.all(np.isfinite(m_f)):
            delta = r_f * w_f + product_error_frobenius_upper(a_f, w_f, a_s.shape[1], s, q)
            bounds = svd_bounds_binary64(m_f, delta)
            if bounds is not None:
                lo, hi = tail_norm_enclosed(bounds, k)
                last = decide_tail(LEMMA_P, what, lo, hi, s * eps * eps * om_hi, bounds.route, operator_assumption,
                                   thr_lo=s * eps * eps * om_lo)
                if last.outcome is not Outcome.UNRESOLVED:
                    return last
    # Strict route, or the referee when the binary64 bound is inconclusive.
    with working_precision("singular_values"):
        prod = arb_mat([enc.balls[i] for i in rows.tolist()]) * arb_mat_from_floats(w)
    om_lo, om_hi = _omega_sq_arb(w)
    bounds = svd_bounds_arb(prod, m_f if np.all(np.isfinite(m_f)) else np.zeros_like(m_f))
    if bounds is None:
        return last or Check(Outcome.UNRESOLVED, LEMMA_P, route="arb", reason=UNAVAILABLE,
                             assumptions=route_assumptions(operator_assumption, "arb"))
    lo, hi = tail_norm_enclosed(bounds, k)
    return decide_tail(LEMMA_P, what, lo, hi, s * eps * eps * om_hi, bounds.route, operator_assumption,
                       thr_lo=s * eps * eps * om_lo)
