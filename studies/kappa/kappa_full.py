"""kappa(T) at any rank, the full head dimension included: a first-order method on the dual
(proofs/kappa_duality_contrast.md), with validated bounds from both of its ends.

With M = S S^T, kappa(T) = inf_M max_(p, q) L(M, p, q), L = (tr(M Sig_p) + tr(M^-1 Sig_q)) / 2
(the Chebyshev radius squared in the metric M is the largest p-weighted variance), and by the
minimax theorem kappa(T) = max_(p, q) F(p, q), F = tr((L_q^T Sig_p L_q)^(1/2)) = ||W_p T W_q^T||_*
(Lemma K1), a concave function of the weights.  Its minimiser M is the geometric mean
M = L_q A^(-1/2) L_q^T (Sig_q = L_q L_q^T, A = L_q^T Sig_p L_q), and its gradient in p_i is
||x_i - xbar_p||_M^2 / 2 up to a constant (in q_j, ||y_j - ybar_q||_(M^-1)^2 / 2).

``solve_kappa_eg`` runs exponentiated-gradient ascent on (p, q) with an adaptive step (a mirror
ascent on the product of simplices; every accepted step raises F).  Each iterate gives a lower
estimate F and, through its M and the weighted means as centres, an upper estimate
sqrt(max_i ||x_i - xbar_p||_M^2 max_j ||y_j - ybar_q||_(M^-1)^2).  Nothing here is trusted:
``bracket_kappa_eg`` hands (p, q) to the validated dual bound (Lemmas K1, K1') and (S, c, d), with
S S^T = M, to the validated primal bound (Lemma K3) of ``softrank.validated.kappa_certificates``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from softrank.studies.theorem.kappa_sdp import chebyshev_centre, dual_lower_best
from softrank.validated import kappa_certificates as kc
from softrank.validated.balls import float_at_least, float_at_most

WEIGHT_FLOOR = 1e-30  # weights never reach 0, so a point dropped early can come back


@dataclass
class KappaEG:
    lower: float  # F(p, q), float
    upper: float  # the best upper estimate seen, float
    p: np.ndarray
    q: np.ndarray
    s: np.ndarray  # S with S S^T = M at the best upper estimate
    cx: np.ndarray  # centres of the rows of X0 and Y0 there (X0 coordinates)
    cy: np.ndarray
    iterations: int
    seconds: float
    status: str

    @property
    def rel_gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else float("nan")


def _moments(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mu = w @ x
    xc = x - mu
    return (xc * w[:, None]).T @ xc, mu


def dual_state(x0: np.ndarray, y0: np.ndarray, p: np.ndarray, q: np.ndarray):
    """F(p, q), the gradients (squared distances to the weighted means in M and M^-1), a factor
    h with h h^T = M, and the weighted means."""
    from scipy.linalg import solve_triangular

    sp, mx = _moments(x0, p)
    sq, my = _moments(y0, q)
    r = sp.shape[0]
    lq = np.linalg.cholesky(sq + 1e-13 * max(np.trace(sq) / r, 1e-300) * np.eye(r))
    w, v = np.linalg.eigh(lq.T @ sp @ lq)
    w = np.maximum(w, max(w.max(), 1e-300) * 1e-13)
    h = lq @ (v / w ** 0.25)  # M = h h^T
    hi = solve_triangular(lq.T, v * w ** 0.25, lower=False)  # M^-1 = hi hi^T
    gp = (((x0 - mx) @ h) ** 2).sum(1)
    gq = (((y0 - my) @ hi) ** 2).sum(1)
    return float(np.sqrt(w).sum()), gp, gq, h, mx, my


def _eg_step(x0, y0, p, q, state, eta):
    """One accepted exponentiated-gradient step (halving eta until F rises), or None."""
    f, gp, gq = state[0], state[1], state[2]
    for _ in range(40):
        p2 = np.maximum(p * np.exp(eta * (gp - gp.max()) / f), WEIGHT_FLOOR)
        q2 = np.maximum(q * np.exp(eta * (gq - gq.max()) / f), WEIGHT_FLOOR)
        p2, q2 = p2 / p2.sum(), q2 / q2.sum()
        new = dual_state(x0, y0, p2, q2)
        if new[0] >= f:
            return p2, q2, new, eta
        eta /= 2
    return None


def solve_kappa_eg(x0: np.ndarray, y0: np.ndarray, tol: float = 2e-4, max_iter: int = 5000,
                   max_seconds: float = 300.0) -> KappaEG:
    """Mirror ascent on the dual until the float relative gap is below ``tol`` (or the limits)."""
    t0 = time.perf_counter()
    m, n = x0.shape[0], y0.shape[0]
    p, q = np.full(m, 1.0 / m), np.full(n, 1.0 / n)
    state, eta = dual_state(x0, y0, p, q), 1.0
    best_up, best = math.inf, None
    status, it = "iteration limit", 0
    for it in range(1, max_iter + 1):
        f, gp, gq, h, mx, my = state
        up = math.sqrt(gp.max() * gq.max())
        if up < best_up:
            best_up, best = up, (h, mx, my)
        if best_up <= f or (best_up - f) / best_up < tol:  # best_up = 0: kappa(C) = 0 (A has rank <= r)
            status = "converged"
            break
        if time.perf_counter() - t0 > max_seconds:
            status = "time limit"
            break
        stepped = _eg_step(x0, y0, p, q, state, eta)
        if stepped is None:
            status = "stalled"
            break
        p, q, state, eta = stepped
        eta *= 1.25
    h, mx, my = best
    return KappaEG(state[0], best_up, p, q, h, h.T @ mx, np.linalg.solve(h, my), it,
                   time.perf_counter() - t0, status)


def _primal_upper(x0, y0, sol: KappaEG) -> Fraction | None:
    """The better validated primal bound: the weighted means as centres, or minimum enclosing
    balls of the rows in the S frames (both sound, Lemma K3)."""
    vals = [kc.kappa_upper_primal(x0, y0, sol.s, sol.cx, sol.cy)]
    try:
        cx, _, _ = chebyshev_centre(x0 @ sol.s)
        cy, _, _ = chebyshev_centre(y0 @ np.linalg.inv(sol.s).T)
        if np.all(np.isfinite(cx)) and np.all(np.isfinite(cy)):
            vals.append(kc.kappa_upper_primal(x0, y0, sol.s, cx, cy))
    except Exception:  # the SOCP is only a proposal; the weighted means stay
        pass
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def dual_lower_robust(x0: np.ndarray, y0: np.ndarray, sol: KappaEG, rel: float = 1e-6) -> Fraction | None:
    """The best validated dual bound (Lemmas K1, K1') from the solver's weights and from the
    weights mixed with a little of the uniform ones, p' = (1 - delta) p + delta / m (likewise q).
    When the optimal weights sit on fewer than r + 1 rows, Sig_p is singular and the float polar
    factor and eigenvector basis of G lose the bound; the mixed weights keep Sig_p and Sig_q
    positive definite at a cost of at most about 2 delta in F (F is concave).  Every variant is
    sound; the mixtures are tried only when the first falls short of F by more than ``rel``."""
    best = dual_lower_best(x0, y0, sol.p, sol.q)
    for delta in (1e-6, 1e-4):
        if best is not None and float(best) >= sol.lower * (1 - rel):
            break
        p = (1 - delta) * sol.p + delta / sol.p.size
        q = (1 - delta) * sol.q + delta / sol.q.size
        v = dual_lower_best(x0, y0, p, q)
        if v is not None and (best is None or v > best):
            best = v
    return best


def bracket_kappa_eg(x0: np.ndarray, y0: np.ndarray, factor: Fraction = Fraction(1), tol: float = 2e-4,
                     max_seconds: float = 300.0) -> dict:
    """Validated bracket lower <= kappa(factor * X0 Y0^T) <= upper (factor >= 0 exact, e.g. the
    scale beta of a qk record; kappa is positively homogeneous)."""
    t0 = time.perf_counter()
    sol = solve_kappa_eg(x0, y0, tol=tol, max_seconds=max_seconds)
    t1 = time.perf_counter()
    lo = dual_lower_robust(x0, y0, sol)
    up = _primal_upper(x0, y0, sol)
    lower = float_at_most(lo * factor) if lo is not None else 0.0
    upper = float_at_least(up * factor) if up is not None else math.inf
    fl = float(factor)
    return {"r": x0.shape[1], "m": x0.shape[0], "N": y0.shape[0], "lower": lower, "upper": upper,
            "rel_gap": (upper - lower) / upper if 0 < upper < math.inf else math.nan,
            "float_lower": sol.lower * fl, "float_upper": sol.upper * fl, "iterations": sol.iterations,
            "status": sol.status, "lower_validated": lo is not None and lower > 0,
            "seconds_solve": t1 - t0, "seconds_validate": time.perf_counter() - t1,
            "seconds": time.perf_counter() - t0}


def numerical_rank(sv: np.ndarray, rel: float = 1e-10) -> int:
    return int(np.sum(sv > sv[0] * rel)) if sv.size and sv[0] > 0 else 0


def kappa_c_record(rec, tol: float = 2e-4, max_seconds: float = 300.0) -> dict:
    """kappa(C) at full rank for one record.  qk without bias: X0 = Q, Y0 = K and factor beta
    (C = (beta P_m Q)(P_N K)^T and centring keeps the radii, so these bounds hold for kappa(C);
    the dual bound for C may use H itself, proofs/kappa_duality_contrast.md).  Otherwise (logits,
    or a bias): the balanced factors of a float SVD of C at its numerical rank, whose product is
    C only up to rounding (``exact_c`` False)."""
    from softrank.studies.theorem.kappa_sdp import balanced_factors
    from softrank.studies.theorem.record_logits import double_centre, logits_float

    if rec.form == "qk" and rec.bias is None:
        row = bracket_kappa_eg(rec.queries, rec.keys, Fraction(float(rec.scale)), tol, max_seconds)
        row.update(exact_c=True, factors="Q, K (stored), times beta")
    else:
        c = double_centre(logits_float(rec))
        r = max(1, numerical_rank(np.linalg.svd(c, compute_uv=False)))
        x0, y0 = balanced_factors(c, r)
        row = bracket_kappa_eg(x0, y0, Fraction(1), tol, max_seconds)
        row.update(exact_c=False, factors=f"balanced SVD factors of C at numerical rank {r}")
    row["record"] = rec.record_id
    return row
