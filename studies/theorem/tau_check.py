"""tau(T) and the validated check that A lies within tau_hat of rowsoftmax(T + 1 c^T), T the
rank-r truncation of C (proofs/tau_bound.md).  The column term c comes from an LP (HiGHS,
untrusted); a validated lower end of tau comes from Karp's maximum-mean cycle (the cycle lemma)."""

from __future__ import annotations

import math
import time

import numpy as np

from softrank.studies.theorem.kappa_sdp import balanced_factors
from softrank.studies.theorem.record_logits import double_centre, logits_balls_of, logits_float
from softrank.validated.balls import lower_fraction
from softrank.validated.outcome import Outcome
from softrank.validated.tau import check_tau_bound, q_lower_cycle, tau_from_q_ball


def q_lp(e: np.ndarray) -> tuple[float, np.ndarray]:
    """q(E) = inf_b max_i osc(E_i - b^T): returns (q, b) from HiGHS (float64, untrusted).

    Variables (b_1..b_N, lo_1..lo_m, hi_1..hi_m, t); b_1 = 0 fixes the shift freedom."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, vstack

    m, n = e.shape
    nv = n + 2 * m + 1
    ii = np.repeat(np.arange(m), n)
    jj = np.tile(np.arange(n), m)
    rows = np.arange(m * n)
    # -b_j - hi_i <= -E_ij
    a1 = coo_matrix((np.concatenate([-np.ones(m * n), -np.ones(m * n)]),
                     (np.concatenate([rows, rows]), np.concatenate([jj, n + m + ii]))), shape=(m * n, nv))
    # b_j + lo_i <= E_ij
    a2 = coo_matrix((np.concatenate([np.ones(m * n), np.ones(m * n)]),
                     (np.concatenate([rows, rows]), np.concatenate([jj, n + ii]))), shape=(m * n, nv))
    # hi_i - lo_i - t <= 0
    r3 = np.arange(m)
    a3 = coo_matrix((np.concatenate([np.ones(m), -np.ones(m), -np.ones(m)]),
                     (np.concatenate([r3, r3, r3]), np.concatenate([n + m + r3, n + r3, np.full(m, nv - 1)]))),
                    shape=(m, nv))
    a = vstack([a1, a2, a3]).tocsr()
    ub = np.concatenate([-e.ravel(), e.ravel(), np.zeros(m)])
    cost = np.zeros(nv)
    cost[-1] = 1
    bounds = [(0, 0)] + [(None, None)] * (nv - 1)
    res = linprog(cost, A_ub=a, b_ub=ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"q LP failed: {res.message}")
    b = res.x[:n]
    q = float(np.max((e - b).max(1) - (e - b).min(1)))  # the value actually attained by b
    return q, b



def max_mean_cycle(f: np.ndarray) -> tuple[float, list[int], list[int]]:
    """Karp's maximum cycle mean on the column graph with w(j, j') = max_i (F_ij - F_ij'), and one
    cycle attaining it (float64, untrusted): returns (mean, rows, cols)."""
    m, n = f.shape
    w = np.empty((n, n))
    arg = np.empty((n, n), dtype=np.int64)
    for j in range(n):
        d = f[:, [j]] - f  # d[i, j'] = F_ij - F_ij'
        arg[j] = np.argmax(d, axis=0)
        w[j] = d[arg[j], np.arange(n)]
    np.fill_diagonal(w, -np.inf)  # a self-loop has weight 0; q >= 0 anyway
    dk = np.full((n + 1, n), -np.inf)
    pred = np.zeros((n + 1, n), dtype=np.int64)
    dk[0] = 0.0
    for k in range(1, n + 1):
        cand = dk[k - 1][:, None] + w  # cand[u, v]
        pred[k] = np.argmax(cand, axis=0)
        dk[k] = cand[pred[k], np.arange(n)]
    with np.errstate(invalid="ignore"):
        ratios = (dk[n][None, :] - dk[:n]) / (n - np.arange(n))[:, None]
    ratios[~np.isfinite(ratios)] = np.inf
    lam = np.min(ratios, axis=0)
    v = int(np.argmax(lam))
    walk = [v]
    for k in range(n, 0, -1):
        walk.append(int(pred[k][walk[-1]]))
    walk = walk[::-1]  # walk[0] -> walk[1] -> ... along edges
    best = (-np.inf, [], [])
    seen: dict[int, int] = {}
    for pos, node in enumerate(walk):
        if node in seen:
            cyc = walk[seen[node]:pos]
            mean = np.mean([w[cyc[l], cyc[(l + 1) % len(cyc)]] for l in range(len(cyc))])
            if mean > best[0]:
                rows = [int(arg[cyc[l], cyc[(l + 1) % len(cyc)]]) for l in range(len(cyc))]
                best = (float(mean), rows, [int(c) for c in cyc])
        seen[node] = pos
    return best


def tau_check_record(rec, r: int) -> dict:
    """tau(T) for T the rank-r truncation of C (balanced float factors define T exactly), and the
    validated check that A lies within tau_hat of rowsoftmax(T + 1 c^T)."""
    t0 = time.perf_counter()
    h = logits_float(rec)
    c_mat = double_centre(h)
    x0, y0 = balanced_factors(c_mat, r)
    e = c_mat - x0 @ y0.T
    q, b = q_lp(e)
    col = h.mean(0) + b
    t_lp = time.perf_counter()
    balls = logits_balls_of(rec)
    chk = check_tau_bound(balls, x0, y0, col)
    # Validated lower bound on q (cycle lemma) from Karp's maximum-mean cycle of F = H - T.
    _, rows, cols = max_mean_cycle(h - x0 @ y0.T)
    tau_lo = tau_from_q_ball(q_lower_cycle(balls, x0, y0, rows, cols))
    tau_lower = float(lower_fraction(tau_lo)) if tau_lo.is_finite() else 0.0
    return {
        "record": rec.record_id, "m": h.shape[0], "N": h.shape[1], "r": r,
        "q_lp": q, "tau_lp": 2 * math.tanh(q / 4), "tau_hat_validated": chk.tau_hat_upper,
        "distance_validated_upper": chk.distance_upper, "outcome": chk.check.outcome.value,
        "rows_proved": chk.rows_proved, "rows": chk.rows,
        "tau_lower_validated": tau_lower, "cycle_length": len(cols),
        "tau_bracket_rel_gap": (chk.tau_hat_upper - tau_lower) / chk.tau_hat_upper if chk.tau_hat_upper > 0 else 0.0,
        # A within tau(T) of rowsoftmax(T + 1 c^T): certified distance below the certified tau lower end.
        "within_tau_certified": bool(chk.check.outcome is Outcome.PROVED and chk.distance_upper < tau_lower),
        "seconds_lp": t_lp - t0, "seconds_check": time.perf_counter() - t_lp,
    }

