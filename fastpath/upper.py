"""Upper constructions (untrusted, float64): explicit factors X (m x k), Y (N x k) with
``||A - X Y^T||_inf <= eps - MARGIN`` checked in float64, which proves ``r_eps(A) <= k``
(Lemma U) once the validated replay confirms it.

Six constructions, each a function ``build(ctx, k) -> (X, Y)`` for a given rank k:

- ``tsvd``     truncated SVD (Eckart-Young in Frobenius; checked in max-row-l1);
- ``rwsvd``    row-reweighted SVD: rows with a large l1 error get more weight in the next SVD;
- ``altl1``    alternating l1 factorization: X by exact row-wise l1 regression (HiGHS LP, only for
               the rows that miss the target), Y by IRLS-weighted least squares (rows weighted by
               their l1 error, entries by 1/|residual|), started from the best reweighted basis;
- ``cpqr``     column-pivoted QR of A: ``B = Q_k Q_k^T A`` (span of k pivot columns);
- ``rpqr``     row-pivoted QR (QR of A^T): ``B = A Y Y^T``, Y an orthonormal basis of k pivot rows;
- ``reprows``  representative rows: ``B = X A[I, :]``, I grown greedily by the worst-fitted row,
               X by row-wise l1 regression.

``search_ranks`` finds, per eps, the least rank k with a checked candidate by binary search over
k (every candidate is checked in max-row-l1; the search assumes the error falls with k, which is
how it chooses where to look, never how it decides that a witness is valid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog

MARGIN = 1e-9  # a stored witness satisfies ||A - X Y^T||_inf <= eps - MARGIN in float64


def max_row_l1(A: np.ndarray, X: np.ndarray, Y: np.ndarray) -> float:
    """float64 ``||A - X Y^T||_inf`` (maximum row l1)."""
    return float(row_l1(A, X, Y).max())


def row_l1(A: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    if X.shape[1] == 0:
        return np.abs(A).sum(axis=1)
    return np.abs(A - X @ Y.T).sum(axis=1)


class Context:
    """One operator A (float64, m x N) with cached factorizations shared by the constructions."""

    def __init__(self, A: np.ndarray):
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.m, self.N = self.A.shape
        self.p = min(self.m, self.N)
        self._svd = None
        self._cpqr = None
        self._rpqr = None
        self._rw_bases: dict[int, np.ndarray] = {}
        self._rep_order = None
        self.lp_solves = 0

    @property
    def svd(self):
        if self._svd is None:
            U, s, Vt = np.linalg.svd(self.A, full_matrices=False)
            self._svd = (U, s, Vt)
        return self._svd

    @property
    def cpqr(self):
        if self._cpqr is None:
            Q, R, piv = scipy.linalg.qr(self.A, pivoting=True, mode="economic")
            self._cpqr = (Q, piv)
        return self._cpqr

    @property
    def rpqr(self):
        if self._rpqr is None:
            _, _, piv = scipy.linalg.qr(self.A.T, pivoting=True, mode="economic")
            self._rpqr = piv
        return self._rpqr


# ----------------------------------------------------------------------------------------------
# row-wise l1 regression
# ----------------------------------------------------------------------------------------------


def l1_regression(a: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, float]:
    """``min_x ||a - Y x||_1`` by a HiGHS LP; returns (x, float64 residual l1)."""
    n, k = Y.shape
    if k == 0:
        return np.zeros(0), float(np.abs(a).sum())
    cost = np.concatenate([np.zeros(k), np.ones(2 * n)])
    eye = sp.identity(n, format="csr")
    a_eq = sp.hstack([sp.csr_matrix(Y), eye, -eye], format="csr")
    bounds = [(None, None)] * k + [(0, None)] * (2 * n)
    res = linprog(cost, A_eq=a_eq, b_eq=a, bounds=bounds, method="highs")
    if res.status != 0 or res.x is None:
        x = np.linalg.lstsq(Y, a, rcond=None)[0]
    else:
        x = res.x[:k]
    return x, float(np.abs(a - Y @ x).sum())


def irls_rows(A: np.ndarray, Y: np.ndarray, X0: np.ndarray, iters: int = 20) -> np.ndarray:
    """Approximate row-wise l1 regression ``min_x ||a_i - Y x_i||_1`` for all rows at once by
    iteratively reweighted least squares (weights 1/max(|r|, delta), delta shrinking)."""
    m, k = X0.shape
    if k == 0 or m == 0:
        return X0
    X = X0.copy()
    delta = 1e-3
    ridge = 1e-12 * np.eye(k)[None]
    for _ in range(iters):
        R = A - X @ Y.T
        Wt = 1.0 / np.maximum(np.abs(R), delta)  # m x N
        G = np.matmul(Y.T[None, :, :] * Wt[:, None, :], Y)  # G_i = Y^T diag(w_i) Y
        rhs = (Wt * A) @ Y
        G += ridge * np.trace(G, axis1=1, axis2=2)[:, None, None] + 1e-300
        try:
            X = np.linalg.solve(G, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break
        delta = max(delta * 0.5, 1e-9)
    return X


def fit_rows_l1(ctx: Context, Y: np.ndarray, target: float, X0: np.ndarray | None = None,
                stop_early: bool = True, lp_rows: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """X for a fixed basis Y: least squares, then batched IRLS (approximate l1 regression) on the
    rows whose error exceeds ``target``, then exact l1 regression (HiGHS) for at most ``lp_rows``
    rows still above it (worst first).  With ``stop_early``, stops at the first row whose optimal
    l1 error exceeds ``target`` (no X works for this Y).  Returns (X, float64 row errors)."""
    A = ctx.A
    X = np.linalg.lstsq(Y, A.T, rcond=None)[0].T if X0 is None else X0.copy()
    err = row_l1(A, X, Y)
    bad = np.nonzero(err > target)[0]
    if bad.size:
        Xb = irls_rows(A[bad], Y, X[bad])
        eb = row_l1(A[bad], Xb, Y)
        better = eb < err[bad]
        X[bad[better]] = Xb[better]
        err[bad[better]] = eb[better]
    order = np.argsort(-err)
    for i in order[:lp_rows]:
        if err[i] <= target:
            break
        x, e = l1_regression(A[i], Y)
        ctx.lp_solves += 1
        if e < err[i]:
            X[i], err[i] = x, e
        if stop_early and err[i] > target:
            break
    return X, err


# ----------------------------------------------------------------------------------------------
# constructions: build(ctx, k, target) -> (X, Y)
# ----------------------------------------------------------------------------------------------


def build_tsvd(ctx: Context, k: int, target: float = 0.0):
    U, s, Vt = ctx.svd
    return U[:, :k] * s[:k], Vt[:k].T.copy()


def _rw_basis(ctx: Context, k: int, iters: int = 8) -> tuple[np.ndarray, float]:
    """Best orthonormal basis (N x k) over a few rounds of row reweighting, and its error."""
    A = ctx.A
    w = np.ones(ctx.m)
    best_err, best_Y = math.inf, None
    for _ in range(iters):
        _, _, Vt = np.linalg.svd(w[:, None] * A, full_matrices=False)
        Y = Vt[:k].T
        err = row_l1(A, A @ Y, Y)
        if err.max() < best_err:
            best_err, best_Y = float(err.max()), Y.copy()
        mean = err.mean()
        if mean <= 0:
            break
        w = w * (err / mean)
        w /= w.max()
        w = np.maximum(w, 1e-8)
    ctx._rw_bases[k] = best_Y
    return best_Y, best_err


def build_rwsvd(ctx: Context, k: int, target: float = 0.0):
    Y, _ = _rw_basis(ctx, k)
    return ctx.A @ Y, Y


def build_altl1(ctx: Context, k: int, target: float, rounds: int = 3, Y0: np.ndarray | None = None):
    """Alternating l1: X-step row-wise l1 regression (IRLS, exact LP on the worst rows), Y-step
    IRLS weighted least squares (row weights grow with the row's l1 error, entry weights
    1/|residual|).  Starts from ``Y0`` or the best row-reweighted SVD basis of rank k."""
    A = ctx.A
    Y = Y0 if Y0 is not None else ctx._rw_bases.get(k)
    if Y is None:
        Y, _ = _rw_basis(ctx, k)
    X, err = fit_rows_l1(ctx, Y, target, stop_early=False)
    best = (float(err.max()), X, Y)
    for _ in range(rounds):
        if best[0] <= target:
            break
        # Y-step: weighted least squares, row weights from the l1 errors, entry weights IRLS
        R = A - X @ Y.T
        wr = (err / max(float(err.mean()), 1e-300)) ** 2
        Wt = wr[:, None] / np.maximum(np.abs(R), 1e-6)  # m x N
        G = np.matmul(X.T[None, :, :] * Wt.T[:, None, :], X)  # G_j = X^T diag(w_:j) X
        rhs = (Wt * A).T @ X
        G += 1e-12 * np.trace(G, axis1=1, axis2=2)[:, None, None] * np.eye(k)[None] + 1e-300
        try:
            Y = np.linalg.solve(G, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break
        X, err = fit_rows_l1(ctx, Y, target, stop_early=False)
        if err.max() < best[0]:
            best = (float(err.max()), X, Y)
    return best[1], best[2]


def right_singular_basis(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Right singular vectors of ``X Y^T`` (N x k, by decreasing singular value), from the QR
    factors of X and Y (no N x N product)."""
    _, Rx = np.linalg.qr(X)
    Qy, Ry = np.linalg.qr(Y)
    _, _, vt = np.linalg.svd(Rx @ Ry.T)
    return Qy @ vt.T


def descend(ctx: Context, w: "Witness", target: float, lo: int, rounds: int = 4,
            max_steps: int = 16) -> "Witness":
    """From a checked witness of rank k, try rank k - 1 (and, if that fails, k - 2): drop the
    smallest singular components of X Y^T and rerun alternating l1 from the remaining basis;
    repeat while a check passes."""
    A = ctx.A
    best = w
    X, Y = w.X, w.Y
    for _ in range(max_steps):
        k = X.shape[1]
        basis = right_singular_basis(X, Y)
        step = None
        for drop in (1, 2):
            if k - drop < max(lo, 1):
                break
            Y0 = basis[:, :k - drop]
            X1, Y1 = build_altl1(ctx, k - drop, target, rounds=rounds, Y0=Y0)
            e = max_row_l1(A, X1, Y1)
            if e <= target:
                step = (np.ascontiguousarray(X1), np.ascontiguousarray(Y1), e)
                break
        if step is None:
            break
        X, Y, e = step
        best = Witness(X.shape[1], X, Y, "altl1", e)
    return best


def shrink(ctx: Context, w: "Witness", target: float, lo: int, factor: float = 0.93, max_fits: int = 2,
           rounds: int = 2) -> "Witness":
    """Large steps down for high-rank witnesses (where ``descend``'s one-rank steps cost too many
    fits): from a checked witness of rank k, refit alternating l1 at rank ``floor(factor k)``,
    started from the top right singular vectors of X Y^T and, if that fails, from the
    row-reweighted SVD basis; repeat while a check passes.  At most ``max_fits`` fits in all."""
    best, fits = w, 0
    while fits < max_fits:
        k_new = max(lo, int(factor * best.rank))
        if k_new >= best.rank or k_new < 1:
            break
        step = None
        for Y0 in (right_singular_basis(best.X, best.Y)[:, :k_new], None):
            if fits >= max_fits:
                break
            fits += 1
            X1, Y1 = build_altl1(ctx, k_new, target, rounds=rounds, Y0=Y0)
            e = max_row_l1(ctx.A, X1, Y1)
            if e <= target:
                step = Witness(k_new, np.ascontiguousarray(X1), np.ascontiguousarray(Y1), "altl1", e)
                break
        if step is None:
            break
        best = step
    return best


def build_cpqr(ctx: Context, k: int, target: float = 0.0):
    Q, _ = ctx.cpqr
    Qk = Q[:, :k]
    return Qk, ctx.A.T @ Qk


def build_rpqr(ctx: Context, k: int, target: float = 0.0):
    piv = ctx.rpqr
    if k == 0:
        return np.zeros((ctx.m, 0)), np.zeros((ctx.N, 0))
    Y, _ = np.linalg.qr(ctx.A[piv[:k]].T)
    return ctx.A @ Y, Y


def _rep_order(ctx: Context) -> np.ndarray:
    """Greedy order of representative rows: repeatedly add the row worst fitted (l1 of the least
    squares residual) by the span of the rows chosen so far."""
    if ctx._rep_order is None:
        A = ctx.A
        order: list[int] = []
        Q = np.zeros((ctx.N, 0))
        for _ in range(ctx.p):
            R = A - (A @ Q) @ Q.T
            err = np.abs(R).sum(axis=1)
            if order:
                err[order] = -1.0
            i = int(np.argmax(err))
            if err[i] <= 1e-12:
                break
            order.append(i)
            v = R[i] / np.linalg.norm(R[i])
            v -= Q @ (Q.T @ v)
            nv = np.linalg.norm(v)
            if nv <= 1e-12:
                break
            Q = np.hstack([Q, (v / nv)[:, None]])
        ctx._rep_order = np.array(order, dtype=np.int64)
    return ctx._rep_order


def build_reprows(ctx: Context, k: int, target: float):
    order = _rep_order(ctx)
    rows = order[:k]
    Y = ctx.A[rows].T.copy()  # basis: the chosen rows of A themselves
    X, _ = fit_rows_l1(ctx, Y, target, stop_early=True)
    return X, Y


CONSTRUCTIONS: dict[str, Callable] = {
    "tsvd": build_tsvd,
    "rwsvd": build_rwsvd,
    "altl1": build_altl1,
    "cpqr": build_cpqr,
    "rpqr": build_rpqr,
    "reprows": build_reprows,
}


# ----------------------------------------------------------------------------------------------
# rank search
# ----------------------------------------------------------------------------------------------


@dataclass
class Witness:
    rank: int
    X: np.ndarray
    Y: np.ndarray
    construction: str
    error: float  # float64 ||A - X Y^T||_inf


@dataclass
class SearchLog:
    evaluations: dict[int, float] = field(default_factory=dict)  # k -> float64 error


def tsvd_scan(ctx: Context, eps_list, k_max: int | None = None) -> dict[float, Witness | None]:
    """Truncated SVD at every rank 0..k_max (incremental residual): the least checked k per eps."""
    U, s, Vt = ctx.svd
    A = ctx.A
    k_max = len(s) if k_max is None else min(k_max, len(s))
    targets = {eps: eps - MARGIN for eps in eps_list}
    found: dict[float, Witness | None] = {eps: None for eps in eps_list}
    R = A.copy()
    for k in range(0, k_max + 1):
        if k > 0:
            R -= s[k - 1] * np.outer(U[:, k - 1], Vt[k - 1])
        err = float(np.abs(R).sum(axis=1).max())
        for eps, tgt in targets.items():
            if found[eps] is None and err <= tgt:
                X, Y = build_tsvd(ctx, k)
                e = max_row_l1(A, X, Y)  # recheck from the factors actually stored
                if e <= tgt:
                    found[eps] = Witness(k, X, Y, "tsvd", e)
        if all(w is not None for w in found.values()):
            break
    return found


def search_ranks(ctx: Context, name: str, eps_list, lo: dict, hi: dict,
                 log: SearchLog | None = None) -> dict[float, Witness | None]:
    """Least rank per eps in [lo[eps], hi[eps]] at which construction ``name`` gives a checked
    witness (binary search; every evaluated candidate is checked in max-row-l1)."""
    build = CONSTRUCTIONS[name]
    A = ctx.A
    log = log or SearchLog()
    cache: dict[int, tuple[float, np.ndarray, np.ndarray, float]] = {}
    out: dict[float, Witness | None] = {}
    target_dependent = name in ("altl1", "reprows")

    def evaluate(k: int, target: float):
        hit = cache.get(k)
        if hit is None or (target_dependent and hit[0] > target and hit[3] > target):
            X, Y = build(ctx, k, target)
            X = np.ascontiguousarray(X, dtype=np.float64)
            Y = np.ascontiguousarray(Y, dtype=np.float64)
            cache[k] = hit = (max_row_l1(A, X, Y), X, Y, target)
            log.evaluations[k] = hit[0]
        return hit[:3]

    for eps in sorted(eps_list, reverse=True):
        tgt = eps - MARGIN
        a, b = max(0, int(lo[eps])), min(ctx.p, int(hi[eps]))
        best = None
        if a > b:
            out[eps] = None
            continue
        e, X, Y = evaluate(b, tgt)
        if e > tgt:
            out[eps] = None
            continue
        best = Witness(b, X, Y, name, e)
        while a < b:
            mid = (a + b) // 2
            e, X, Y = evaluate(mid, tgt)
            if e <= tgt:
                b = mid
                best = Witness(mid, X, Y, name, e)
            else:
                a = mid + 1
        out[eps] = best
    return out
