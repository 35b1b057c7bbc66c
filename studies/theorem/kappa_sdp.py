"""Untrusted solvers for the intrinsic size kappa(T) (proofs/kappa_duality_contrast.md).

``solve_kappa_sdp(X0, Y0)``: the small SDP over M = S S^T,

    minimise (R_X + R_Y)/2  subject to
      x_i^T M x_i - 2 x_i^T e + t <= R_X           (one linear constraint per query)
      [[M, e], [e^T, t]] >= 0                       (so t >= e^T M^{-1} e)
      [[M, y_j - d], [(y_j - d)^T, R_Y]] >= 0       (one (r+1) x (r+1) LMI per key)

solved with cvxpy + Clarabel.  The multipliers of the query constraints give p, the (r, r) entries
of the key LMIs' multipliers give q; the primal gives S = chol(M), c = M^{-1} e, d.  Nothing here is
trusted: ``bracket_kappa`` hands (p, q, K) and (S, c, d) to ``softrank.validated.kappa_certificates``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from softrank.validated import kappa_certificates as kc


CLARABEL_TIME_LIMIT_S = 8.0


@dataclass
class KappaSDP:
    value: float  # optimal (R_X + R_Y)/2 (float, untrusted)
    M: np.ndarray
    c: np.ndarray  # centre of the rows of X0 in X0 coordinates
    d: np.ndarray  # centre of the rows of Y0
    p: np.ndarray  # query weights (sum 1)
    q: np.ndarray  # key weights (sum 1)
    status: str
    seconds: float


def _solve_subset(x0: np.ndarray, y0: np.ndarray, keys: np.ndarray, solver: str):
    import cvxpy as cp

    m, r = x0.shape
    M = cp.Variable((r, r), symmetric=True)
    e = cp.Variable((r, 1))
    t = cp.Variable((1, 1))
    d = cp.Variable((r, 1))
    rx = cp.Variable()
    ry = cp.Variable()
    quad = cp.sum(cp.multiply(x0 @ M, x0), axis=1)
    con_x = quad - 2 * (x0 @ e)[:, 0] + t[0, 0] <= rx
    cons = [con_x, cp.bmat([[M, e], [e.T, t]]) >> 0]
    key_lmis = []
    for j in keys:
        v = y0[j][:, None] - d
        key_lmis.append(cp.bmat([[M, v], [v.T, cp.reshape(ry, (1, 1), order="C")]]) >> 0)
    cons += key_lmis
    prob = cp.Problem(cp.Minimize((rx + ry) / 2), cons)
    import warnings

    try:
        if solver == "CLARABEL":
            # Clarabel is accurate and usually fast; on a few blocks its factorisation crawls (seen
            # at 64 x 64, r = 16 on a loaded machine): cap it and fall back to SCS.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prob.solve(solver="CLARABEL", time_limit=CLARABEL_TIME_LIMIT_S)
    except cp.error.SolverError:
        pass
    if prob.status != "optimal":
        prob.solve(solver="SCS", eps=1e-9, max_iters=20000)
    if M.value is None:
        raise RuntimeError(f"kappa SDP failed: {prob.status}")
    p = np.maximum(np.asarray(con_x.dual_value, dtype=float).ravel(), 0)
    qk = np.array([max(float(np.asarray(l.dual_value)[r, r]), 0.0) for l in key_lmis])
    Mv = np.asarray(M.value, dtype=float)
    Mv = (Mv + Mv.T) / 2
    return prob, Mv, np.asarray(e.value).ravel(), np.asarray(d.value).ravel(), float(ry.value), p, qk


def solve_kappa_sdp(x0: np.ndarray, y0: np.ndarray, solver: str = "CLARABEL", active_set: bool = True,
                    start_keys: int = 32, max_rounds: int = 8) -> KappaSDP:
    """The SDP above.  With ``active_set`` the key LMIs are added lazily: solve with the keys
    farthest from the key mean, add every key whose constraint the solution violates, repeat.  The
    result is the full problem's optimum once no key is violated (float tolerance 1e-9 relative);
    soundness never depends on it (the bounds are validated over all keys)."""
    t0 = time.perf_counter()
    m, r = x0.shape
    n = y0.shape[0]
    if not active_set or n <= start_keys:
        keys = np.arange(n)
    else:
        dist = np.linalg.norm(y0 - y0.mean(0), axis=1)
        keys = np.sort(np.argsort(-dist)[:start_keys])
    for _ in range(max_rounds):
        prob, Mv, e, d, ry, p, qk = _solve_subset(x0, y0, keys, solver)
        if prob.solver_stats.solver_name == "SCS":
            solver = "SCS"  # Clarabel gave up on this operator: do not wait for it again
        minv = np.linalg.inv(Mv)
        yd = y0 - d
        val = np.einsum("ij,jk,ik->i", yd, minv, yd)
        viol = np.setdiff1d(np.nonzero(val > ry * (1 + 1e-9) + 1e-12)[0], keys)
        if viol.size == 0:
            break
        keys = np.union1d(keys, viol[np.argsort(-val[viol])][: max(16, keys.size)])
    q = np.zeros(n)
    q[keys] = qk
    p = p / p.sum() if p.sum() > 0 else np.full(m, 1 / m)
    q = q / q.sum() if q.sum() > 0 else np.full(n, 1 / n)
    c = np.linalg.solve(Mv, e)
    return KappaSDP(float(prob.value), Mv, c, d, p, q,
                    f"{prob.status} {prob.solver_stats.solver_name} (keys {keys.size}/{n})",
                    time.perf_counter() - t0)


def polar_k(x0: np.ndarray, y0: np.ndarray, p: np.ndarray, q: np.ndarray, rel_cut: float = 1e-10) -> np.ndarray:
    """K with U0 K V0^T the polar factor of U0 V0^T, U0 = W_p X0, V0 = W_q Y0 (Lemma K1').

    From thin SVDs U0 = Uu Su Vu^T, V0 = Uv Sv Vv^T (singular values below rel_cut * max dropped,
    which separates an exact null direction, e.g. after centring, from the rest) and the small SVD
    Su Vu^T Vv Sv = W Sigma Z^T: K = Vu Su^-1 W Z^T Sv^-1 Vv^T.  Any K is sound; this one is sharp."""

    def factor(x, w):
        w = w / w.sum()
        xc = (x - w @ x) * np.sqrt(w)[:, None]
        u, sv, vt = np.linalg.svd(xc, full_matrices=False)
        keep = sv > sv.max() * rel_cut if sv.size and sv.max() > 0 else np.zeros(sv.shape, bool)
        return sv[keep], vt[keep].T

    su, vu = factor(x0, p)
    sv, vv = factor(y0, q)
    W, _, Zt = np.linalg.svd((su[:, None] * (vu.T @ vv)) * sv[None, :], full_matrices=False)
    return (vu / su) @ W @ Zt @ (vv / sv).T


def eigen_similarity(x0, y0, p, q, k, rel_cut: float = 1e-12) -> np.ndarray | None:
    """A float matrix D of eigenvectors of G = A B (A = K^T Sig_p K, B = Sig_q, both PSD), so that
    ||D^-1 G D||_inf is close to the spectral radius of G.  Built stably: B = L L^T on its range,
    L^T A L = W Lam W^T (symmetric), eigenvectors A L W for the non-zero part and the null space
    of B for the rest.  Only a proposal: the validated kernel encloses D^-1 G D exactly."""
    a = k.T @ weighted_cov(x0, p) @ k
    wb, vb = np.linalg.eigh(weighted_cov(y0, q))
    keep = wb > wb.max() * rel_cut
    ell = vb[:, keep] * np.sqrt(wb[keep])
    _, w = np.linalg.eigh(ell.T @ a @ ell)
    cols = a @ ell @ w
    norms = np.linalg.norm(cols, axis=0)
    if np.any(norms == 0):
        return None
    d = np.concatenate([cols / norms, vb[:, ~keep]], axis=1)
    return d if np.all(np.isfinite(d)) and np.linalg.cond(d) < 1e10 else None


def dual_lower_best(x0, y0, p, q):
    """The better of the validated dual bounds with D = I and D = eigenvectors (both sound)."""
    k = polar_k(x0, y0, p, q)
    vals = [kc.kappa_lower_dual(x0, y0, p, q, k)]
    d = eigen_similarity(x0, y0, p, q, k)
    if d is not None:
        vals.append(kc.kappa_lower_dual(x0, y0, p, q, k, similarity=d))
    vals = [v for v in vals if v is not None]
    return max(vals) if vals else None


def weighted_cov(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    w = w / w.sum()
    mu = w @ x
    xc = x - mu
    return (xc * w[:, None]).T @ xc


def chebyshev_centre(x: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """Minimum enclosing ball of the rows (SOCP, Clarabel): centre, radius, dual weights."""
    import cvxpy as cp

    c = cp.Variable(x.shape[1])
    t = cp.Variable()
    con = cp.norm(x - np.ones((x.shape[0], 1)) @ cp.reshape(c, (1, x.shape[1]), order="C"), axis=1) <= t
    cp.Problem(cp.Minimize(t), [con]).solve(solver="CLARABEL")
    w = np.maximum(np.asarray(con.dual_value, dtype=float).ravel(), 0)
    return np.asarray(c.value).ravel(), float(t.value), w


def balanced_factors(t_mat: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    """X0 = U_r Sig^{1/2}, Y0 = V_r Sig^{1/2} of a float SVD (they define T := X0 Y0^T exactly)."""
    u, s, vt = np.linalg.svd(t_mat, full_matrices=False)
    h = np.sqrt(s[:r])
    return np.ascontiguousarray(u[:, :r] * h), np.ascontiguousarray(vt[:r].T * h)


def best_rectangle(x0: np.ndarray, y0: np.ndarray, chunk: int = 32) -> tuple[int, int, int, int, float]:
    """argmax over (a, a', b, b') of |T_ab - T_ab' - T_a'b + T_a'b'| / 4 = max_{a, a'} osc(T_a - T_a') / 4."""
    t = x0 @ y0.T
    best = (0, 0, 0, 0, -1.0)
    for s in range(0, t.shape[0], chunk):
        diff = t[s:s + chunk, None, :] - t[None, :, :]
        osc = diff.max(2) - diff.min(2)
        i, i2 = np.unravel_index(np.argmax(osc), osc.shape)
        if osc[i, i2] / 4 > best[4]:
            row = diff[i, i2]
            best = (s + int(i), int(i2), int(np.argmax(row)), int(np.argmin(row)), float(osc[i, i2] / 4))
    return best


@dataclass
class KappaBracket:
    lower: float  # validated (lower end of a ball, as a float rounded down)
    upper: float  # validated
    sdp_value: float
    contrast_lower: float  # validated
    kappa_bal: float  # float64, untrusted
    kappa_bal_upper: float  # validated upper bound on rad(X0) rad(Y0) with the float centres
    seconds_sdp: float
    seconds_total: float
    status: str
    r: int
    shape: tuple[int, int]
    notes: list[str] = field(default_factory=list)
    p: np.ndarray | None = None  # the SDP's query weights (reusable as a certificate for other T)
    q: np.ndarray | None = None

    @property
    def rel_gap(self) -> float:
        return (self.upper - self.lower) / self.upper if self.upper > 0 else float("nan")

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("lower", "upper", "sdp_value", "contrast_lower", "kappa_bal",
                                            "kappa_bal_upper", "seconds_sdp", "seconds_total", "status", "r")}
        d["m"], d["N"] = self.shape
        d["rel_gap"] = self.rel_gap
        d["bal_over_kappa"] = self.kappa_bal / self.upper if self.upper > 0 else None
        d["notes"] = self.notes
        return d


def _down(fr) -> float:
    from softrank.validated.balls import float_at_most

    return float_at_most(fr)


def _up(fr) -> float:
    from softrank.validated.balls import float_at_least

    return float_at_least(fr)


def bracket_kappa(x0: np.ndarray, y0: np.ndarray) -> KappaBracket:
    """Validated bracket lower <= kappa(X0 Y0^T) <= upper from the SDP's dual and primal."""
    t0 = time.perf_counter()
    m, r = x0.shape
    # Scale so the SDP is well conditioned; kappa scales linearly in T.
    scale = float(np.sqrt(np.abs(x0).max() * np.abs(y0).max())) or 1.0
    sol = solve_kappa_sdp(x0 / np.sqrt(scale), y0 / np.sqrt(scale))
    notes = []
    lo = dual_lower_best(x0, y0, sol.p, sol.q)
    if lo is None:
        notes.append("dual bound not certain")
        lo = 0
    # Primal: S = chol(M) (M = S S^T), centres in the S frames.
    try:
        S = np.linalg.cholesky(sol.M)
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(sol.M)
        S = v * np.sqrt(np.maximum(w, 1e-300))
    xs, ys = x0 @ S, y0 @ np.linalg.inv(S).T
    cx, _, _ = chebyshev_centre(xs)
    cy, _, _ = chebyshev_centre(ys)
    up = kc.kappa_upper_primal(x0, y0, S, cx, cy)
    if up is None:
        notes.append("primal bound unavailable")
        up = float("inf")
    a, a2, b, b2, _ = best_rectangle(x0, y0)
    con = kc.kappa_lower_contrast(x0, y0, a, a2, b, b2)
    bx, rbx, _ = chebyshev_centre(x0)
    by, rby, _ = chebyshev_centre(y0)
    bal_up = kc.radius_upper(x0, bx) * kc.radius_upper(y0, by)
    return KappaBracket(lower=_down(lo), upper=_up(up) if up != float("inf") else up,
                        sdp_value=sol.value * scale, contrast_lower=_down(con), kappa_bal=rbx * rby,
                        kappa_bal_upper=_up(bal_up), seconds_sdp=sol.seconds,
                        seconds_total=time.perf_counter() - t0, status=sol.status, r=r, shape=(m, y0.shape[0]),
                        notes=notes, p=sol.p, q=sol.q)
