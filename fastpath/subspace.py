"""Expanding-subspace lower certificates (untrusted, float64): kind ``subspace``.

Lemma G (proofs/lemma_G_expanding_subspace.md): if ``||A y||_inf > eps ||y||_inf`` on a
p-dimensional subspace V, then ``r_eps(A) >= p``.  For a basis W of V normalised so that
``W[pivots] = I_p``, the least ratio ``||A y||_inf / ||y||_inf`` over V is the least value of
one small linear program per coordinate k that can carry the max norm (the pivots and the rows
of W with l1 norm above 1):

    min t  over (x, t):  -t <= A W x <= t,  -1 <= W x <= 1,  W_k x = 1.

HiGHS solves each; its multipliers give the certificate's duals ``u_k`` (of ``|A W x| <= t``) and
``v_k`` (of the box and of ``W_k x = 1``), which the checker replays in balls.  The subspaces
tried here are spanned by leading right singular vectors of A (``svd_subspace_search``: the
largest p whose span expands by more than eps).  Nothing here is trusted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import qr
from scipy.optimize import linprog

#: a subspace is used only when every covered coordinate's float64 bound exceeds eps by this much
#: (relative), so rounding in the replay cannot undo it
RELATIVE_MARGIN = 1e-7


@dataclass
class SubspaceCertificate:
    """A kind-``subspace`` certificate, as the producer proposes it."""

    lower: int
    W: np.ndarray  # N x p, W[pivots] = I_p exactly
    pivots: np.ndarray
    cover: np.ndarray
    u: np.ndarray  # |cover| x m
    v: np.ndarray  # |cover| x N
    margin: float = 0.0  # float64 (least bound - eps) / eps, diagnostic only
    kind: str = field(default="subspace", init=False)

    def as_record(self) -> dict:
        return {"kind": self.kind, "lower": int(self.lower), "W": self.W, "pivots": self.pivots.astype(np.int64),
                "cover": self.cover.astype(np.int64), "u": self.u, "v": self.v,
                "float64_margin": float(self.margin)}


def pivot_basis(basis: np.ndarray, max_swaps: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """A basis W of range(basis) (N x p, full column rank) with ``W[pivots] = I_p`` exactly: pivots
    from column-pivoted QR of ``basis^T``, then max-volume swaps until ``|W| <= 1 + 1e-9``
    entrywise (or ``max_swaps``), which keeps few rows of W above l1 norm 1."""
    p = basis.shape[1]
    _, _, piv = qr(basis.T, pivoting=True, mode="economic")
    pivots = piv[:p].copy()
    W = np.linalg.solve(basis[pivots].T, basis.T).T
    for _ in range(max_swaps):
        l, i = np.unravel_index(np.argmax(np.abs(W)), W.shape)
        if abs(W[l, i]) <= 1 + 1e-9:
            break
        pivots[i] = l
        W = np.linalg.solve(basis[pivots].T, basis.T).T
    order = np.argsort(pivots)
    pivots, W = pivots[order], W[:, order]
    W[pivots] = np.eye(p)
    return W, pivots


def needs_cover(W: np.ndarray, pivots: np.ndarray) -> np.ndarray:
    """The coordinates that can carry the max norm of a vector of range(W): the pivots and the
    rows with l1 norm above 1 (with a float margin: the checker sums exactly)."""
    need = np.abs(W).sum(axis=1) > 1 - 1e-12
    need[pivots] = True
    return np.flatnonzero(need)


def _lp(obj_rows: np.ndarray, W: np.ndarray, k: int, box: bool):
    """min t over (x, t): -t <= obj_rows x <= t, (box: -1 <= W x <= 1), W_k x = 1 (HiGHS)."""
    m, p = obj_rows.shape
    n = W.shape[0]
    ones = np.ones((m, 1))
    blocks = [[obj_rows, -ones], [-obj_rows, -ones]]
    if box:
        blocks += [[W, np.zeros((n, 1))], [-W, np.zeros((n, 1))]]
    b_ub = np.concatenate([np.zeros(2 * m), np.ones(2 * n if box else 0)])
    c = np.zeros(p + 1)
    c[-1] = 1.0
    return linprog(c, A_ub=np.block(blocks), b_ub=b_ub, A_eq=np.append(W[k], 0.0)[None], b_eq=[1.0],
                   bounds=[(None, None)] * p + [(0, None)], method="highs")


def coordinate_bound(AW: np.ndarray, W: np.ndarray, k: int) -> tuple[float, np.ndarray, np.ndarray]:
    """(least ||A y||_inf over y in range(W) with y_k = 1, ||y||_inf <= 1; u_k; v_k).

    The multipliers y >= 0 of the inequalities and w of ``W_k x = 1`` satisfy
    ``W^T A^T u = W^T v`` with ``u = y_+ - y_-`` (rows ``+-A W x <= t``) and ``v = y_box- - y_box+
    - w e_k``.  When no such y exists (the box is infeasible), the least ``||W x||_inf`` with
    ``W_k x = 1`` is some tau > 1 with multipliers v' (``W^T v' = tau W_k^T``, ``||v'||_1 = 1``);
    then ``u = 0``, ``v = tau e_k - v'`` gives ``W^T v = 0`` and num_k >= tau - 1 > 0; the bound
    is reported as inf."""
    m = AW.shape[0]
    n = W.shape[0]
    res = _lp(AW, W, k, box=True)
    if res.status == 2:
        res = _lp(W, W, k, box=False)
        if res.status != 0:
            raise RuntimeError(f"coordinate LP {k}: {res.message}")
        y = -res.ineqlin.marginals
        v = -(y[:n] - y[n:])
        v[k] += float(res.fun)
        return float("inf"), np.zeros(m), v
    if res.status != 0:
        raise RuntimeError(f"coordinate LP {k}: {res.message}")
    y = -res.ineqlin.marginals
    w_eq = -float(res.eqlin.marginals[0])
    u = y[:m] - y[m:2 * m]
    v = y[2 * m + n:] - y[2 * m:2 * m + n]
    v[k] -= w_eq
    return float(res.fun), u, v


def dual_margin(A: np.ndarray, W: np.ndarray, k: int, u: np.ndarray, v: np.ndarray, eps: float) -> float:
    """float64 ``num_k - eps den_k`` of the checker (proofs/lemma_G_expanding_subspace.md)."""
    g = W.T @ (A.T @ u - v)
    num = v[k] - (np.abs(v).sum() - abs(v[k])) - np.abs(g).sum()
    return float(num - eps * np.abs(u).sum())


def subspace_certificate(A: np.ndarray, basis: np.ndarray, eps: float,
                         deadline: float = float("inf")) -> SubspaceCertificate | None:
    """The certificate for range(basis) when it expands by more than eps (float64, with
    ``RELATIVE_MARGIN``); None as soon as a coordinate fails or at the deadline."""
    W, pivots = pivot_basis(basis)
    AW = A @ W
    cover = needs_cover(W, pivots)
    # Pivots first: they are where a failure usually shows.
    order = np.concatenate([pivots, np.setdiff1d(cover, pivots)])
    us, vs, worst = {}, {}, float("inf")
    for k in order.tolist():
        if time.perf_counter() > deadline:
            return None
        value, u, v = coordinate_bound(AW, W, k)
        if value <= eps * (1 + RELATIVE_MARGIN):
            return None
        margin = dual_margin(A, W, k, u, v, eps)
        if not margin > eps * RELATIVE_MARGIN * max(1.0, float(np.abs(u).sum())):
            return None
        us[k], vs[k] = u, v
        worst = min(worst, value)
    ks = cover.tolist()
    return SubspaceCertificate(lower=W.shape[1], W=W, pivots=pivots.astype(np.int64), cover=cover.astype(np.int64),
                               u=np.array([us[k] for k in ks]), v=np.array([vs[k] for k in ks]),
                               margin=worst / eps - 1)


def svd_subspace_search(A: np.ndarray, eps: float, above: int, cap: int, deadline: float = float("inf"),
                        vt: np.ndarray | None = None) -> SubspaceCertificate | None:
    """The certificate for the span of the leading p right singular vectors with the largest
    p in (above, cap] found by doubling then bisection; None if none beats ``above``."""
    if vt is None:
        vt = np.linalg.svd(A)[2]
    cap = min(cap, vt.shape[0])
    best: SubspaceCertificate | None = None
    cache: dict[int, SubspaceCertificate | None] = {}

    def attempt(p: int) -> SubspaceCertificate | None:
        if p not in cache:
            cache[p] = subspace_certificate(A, vt[:p].T, eps, deadline)
        return cache[p]

    lo, hi = above, cap + 1
    step = max(1, above // 4)
    p = above + step
    while p <= cap and time.perf_counter() < deadline:
        c = attempt(p)
        if c is None:
            hi = p
            break
        best, lo = c, p
        step *= 2
        p = lo + step
    while hi - lo > 1 and time.perf_counter() < deadline:
        mid = (lo + hi) // 2
        c = attempt(mid)
        if c is None:
            hi = mid
        else:
            best, lo = c, mid
    return best
