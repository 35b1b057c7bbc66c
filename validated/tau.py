"""The tau bound on an operator (proofs/tau_bound.md): A lies within
``tau_hat = max_i 2 tanh(osc(H_i - T_i - c)/4)`` of ``rowsoftmax(T + 1 c^T)`` in ||.||_inf, and
``tau_hat >= tau(T) = 2 tanh(q(C - T)/4)`` with equality when c carries the optimal column term.

T = X0 Y0^T is defined by binary64 factors (exact reals), c is a binary64 vector, and the logits
are rows of balls containing the exact H (``softmax_enclosure.logits_balls``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import decimal_at_least, float_at_least, upper_fraction
from softrank.validated.outcome import ARB_ASSUMPTIONS, Check, Outcome
from softrank.validated.precision import PRECISION, working_precision
from softrank.validated.softmax_perturbation import perturbation_sides_ball

LEMMA_TAU = "proofs/tau_bound.md"


@dataclass
class TauCheck:
    check: Check
    tau_hat_upper: float  # upper end of the ball for max_i 2 tanh(osc_i/4)
    distance_upper: float  # upper end of the ball for ||A - rowsoftmax(T + 1 c^T)||_inf
    rows_proved: int
    rows: int


def check_tau_bound(h_rows: list[list[arb]], x0: np.ndarray, y0: np.ndarray, c: np.ndarray,
                    prec_bits: int = PRECISION["perturbation"]) -> TauCheck:
    """Well-formed input and outcome PROVED imply, for the exact operator A = rowsoftmax(H) and the
    exact T = X0 Y0^T, every row i satisfies
    ``||A_i - softmax(T_i + c)||_1 <= 2 tanh(osc(H_i - T_i - c)/4)`` (proofs/tau_bound.md), so
    ``||A - rowsoftmax(T + 1 c^T)||_inf <= tau_hat`` with ``tau_hat`` the returned upper value, and
    tau(T) <= tau_hat.  REFUTED: some row certainly violates its inequality (impossible unless the
    lemma or the arithmetic is wrong).  UNRESOLVED: some row's balls overlap."""
    m, r = x0.shape
    n = y0.shape[0]
    with working_precision(prec_bits):
        t = (arb_mat(m, r, x0.ravel().tolist()) * arb_mat(r, n, np.ascontiguousarray(y0.T).ravel().tolist())).tolist()
        cb = [arb(float(v)) for v in c]
        proved = refuted = 0
        tau_hat, dist = arb(0), arb(0)
        for i in range(m):
            x = [tv + cv for tv, cv in zip(t[i], cb)]
            lhs, rhs = perturbation_sides_ball(x, h_rows[i])
            if rhs - lhs > 0:
                proved += 1
            elif rhs - lhs < 0:
                refuted += 1
            if rhs.is_finite() and lhs.is_finite():
                tau_hat, dist = tau_hat.max(rhs), dist.max(lhs)
            else:
                tau_hat = dist = arb("nan")
    finite = tau_hat.is_finite() and dist.is_finite()
    tau_up = float_at_least(upper_fraction(tau_hat)) if finite else float("inf")
    dist_up = float_at_least(upper_fraction(dist)) if finite else float("inf")
    if refuted:
        outcome, reason = Outcome.REFUTED, f"{refuted} rows violate the perturbation bound certainly"
    elif proved == m:
        outcome, reason = Outcome.PROVED, ""
    else:
        outcome, reason = Outcome.UNRESOLVED, f"{m - proved} rows not certain"
    chk = Check(outcome, LEMMA_TAU, value=decimal_at_least(upper_fraction(tau_hat)) if finite else "inf", route="arb", reason=reason,
                assumptions=list(ARB_ASSUMPTIONS))
    return TauCheck(chk, tau_up, dist_up, proved, m)


def q_lower_cycle(h_rows: list[list[arb]], x0: np.ndarray, y0: np.ndarray, rows: list[int], cols: list[int],
                  prec_bits: int = PRECISION["perturbation"]) -> arb:
    """Well-formed input implies q(C - T) >= every point of the returned ball's lower end
    (proofs/tau_bound.md, cycle lemma): for a cycle of columns j_1 .. j_k (j_{k+1} = j_1) with rows
    i_1 .. i_k, q(C - T) >= (1/k) sum_l (F_{i_l j_l} - F_{i_l j_{l+1}}), F = H - T.
    Returns the ball for that mean (use its lower end)."""
    k = len(cols)
    if k == 0 or len(rows) != k:
        raise ValueError("a cycle needs k >= 1 columns and k rows")
    with working_precision(prec_bits):
        total = arb(0)
        for l in range(k):
            i, j, j2 = rows[l], cols[l], cols[(l + 1) % k]
            t1 = sum((arb(float(a)) * arb(float(b)) for a, b in zip(x0[i], y0[j])), arb(0))
            t2 = sum((arb(float(a)) * arb(float(b)) for a, b in zip(x0[i], y0[j2])), arb(0))
            total += (h_rows[i][j] - t1) - (h_rows[i][j2] - t2)
        return total / k


def tau_from_q_ball(q: arb, prec_bits: int = PRECISION["perturbation"]) -> arb:
    """The ball for 2 tanh(q/4) (tanh is increasing, so lower ends map to lower ends)."""
    with working_precision(prec_bits):
        return 2 * (q / 4).tanh()
