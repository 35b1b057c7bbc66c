"""Row-wise l1 regression for a fixed basis Y (untrusted, float64): the X-step of the alternating
l1 and representative-rows constructions (``fastpath/upper/constructions.py``)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.optimize import linprog

from softrank.fastpath.float64 import row_l1
from softrank.fastpath.operator_cache import OperatorCache


def _edge_step(a: np.ndarray, Y: np.ndarray, Z: np.ndarray, x: np.ndarray, l: int, u_l: float):
    """One simplex step of l1 regression: release row ``Z[l]`` from the interpolated rows (the
    direction along which the objective falls at rate |u_l| - 1), move to the breakpoint where the
    slope turns non-negative and interpolate the row met there instead.  Returns (Z, x)."""
    e = np.zeros(len(Z))
    e[l] = -np.sign(u_l)
    d = np.linalg.solve(Y[Z], e)
    c = Y @ d
    r = a - Y @ x
    out = np.ones(len(a), dtype=bool)
    out[Z] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(out & (np.abs(c) > 1e-300), r / c, -1.0)
    cand = np.nonzero(t >= 0.0)[0]
    order = cand[np.argsort(t[cand], kind="stable")]
    slope = 1.0 - abs(u_l)
    for j in order:
        slope += 2.0 * abs(c[j])
        if slope >= 0.0:
            Z = Z.copy()
            Z[l] = j
            return Z, x + t[j] * d
    raise np.linalg.LinAlgError("unbounded l1 step")


def l1_vertex(a: np.ndarray, Y: np.ndarray, x0: np.ndarray, max_steps: int = 64) -> tuple[np.ndarray, float] | None:
    """``min_x ||a - Y x||_1`` from an approximate minimiser ``x0``: interpolate ``a`` exactly on
    the k rows where ``a - Y x0`` is smallest, then simplex steps (``_edge_step``) until the vertex
    is optimal: a dual vector u with ``|u| <= 1``, ``u = sign(r)`` off the interpolated rows and
    ``Y^T u = 0``.  Returns (x, residual l1), or None (singular, degenerate or too many steps)."""
    k = Y.shape[1]
    Z = np.argsort(np.abs(a - Y @ x0), kind="stable")[:k]
    try:
        x = np.linalg.solve(Y[Z], a[Z])
        for _ in range(max_steps):
            r = a - Y @ x
            off = np.ones(len(a), dtype=bool)
            off[Z] = False
            u = np.linalg.solve(Y[Z].T, -Y[off].T @ np.sign(r[off]))
            if not np.all(np.isfinite(u)) or not np.all(np.isfinite(x)):
                return None
            l = int(np.argmax(np.abs(u)))
            if abs(u[l]) <= 1.0 + 1e-9:
                return x, float(np.abs(a - Y @ x).sum())
            Z, x = _edge_step(a, Y, Z, x, l, u[l])
    except np.linalg.LinAlgError:
        return None
    return None


def l1_regression(a: np.ndarray, Y: np.ndarray, x0: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """``min_x ||a - Y x||_1``: the optimal vertex near ``x0`` when it is proved optimal
    (``l1_vertex``), else a HiGHS LP; returns (x, float64 residual l1)."""
    n, k = Y.shape
    if k == 0:
        return np.zeros(0), float(np.abs(a).sum())
    if x0 is not None:
        hit = l1_vertex(a, Y, x0)
        if hit is not None:
            return hit
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


def least_squares_rows(A: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """X minimising ``||A - X Y^T||_F`` row by row, by a QR factorization of Y (an SVD-based
    least-squares solve when Y is numerically rank deficient)."""
    if Y.shape[1] == 0:
        return np.zeros((A.shape[0], 0))
    Q, R = np.linalg.qr(Y)
    d = np.abs(np.diag(R))
    if d.min() <= 1e-10 * d.max():
        return np.linalg.lstsq(Y, A.T, rcond=None)[0].T
    return (A @ Q) @ scipy.linalg.solve_triangular(R, np.eye(R.shape[0]), lower=False).T


class WeightedGrams:
    """``G_i = Y^T diag(w_i) Y`` for many weight vectors w_i and one Y (N x k): one matrix product
    of the weights with the products of pairs of columns of Y (the upper triangle when k is large,
    where the product dominates, then gathered into both triangles; all k^2 pairs when k is small)."""

    HALF_FROM = 24

    def __init__(self, Y: np.ndarray):
        n, self.k = Y.shape
        if self.k >= self.HALF_FROM:
            iu, ju = np.triu_indices(self.k)
            self.pairs = Y[:, iu] * Y[:, ju]
            where = np.empty((self.k, self.k), dtype=np.intp)  # (i, j) -> its column of the product
            where[iu, ju] = where[ju, iu] = np.arange(iu.size)
            self.where = where.ravel()
        else:
            self.pairs = (Y[:, :, None] * Y[:, None, :]).reshape(n, self.k * self.k)
            self.where = None

    def __call__(self, Wt: np.ndarray) -> np.ndarray:
        H = Wt @ self.pairs
        if self.where is not None:
            H = np.take(H, self.where, axis=1)
        return H.reshape(Wt.shape[0], self.k, self.k)


def regularise(G: np.ndarray) -> None:
    """In place, ``G_i += 1e-12 trace(G_i) I + 1e-300`` for every k x k matrix G_i of the stack,
    without the two m x k x k temporaries of that expression (12% of an IRLS step at k = 150):
    the same numbers bit for bit (off the diagonal ``G_ij + (0 + 1e-300)``, on it
    ``G_ii + (1e-12 trace + 1e-300)``)."""
    k = G.shape[-1]
    tr = np.einsum("ijj->i", G)
    if not np.all(np.isfinite(tr)):  # inf * 0 off the diagonal: keep the plain expression's NaNs
        G += 1e-12 * tr[:, None, None] * np.eye(k)[None] + 1e-300
        return
    i = np.arange(k)
    diag = G[:, i, i] + (1e-12 * tr[:, None] + 1e-300)
    G += 1e-300
    G[:, i, i] = diag


def irls_rows(A: np.ndarray, Y: np.ndarray, X0: np.ndarray, iters: int = 20) -> np.ndarray:
    """Approximate row-wise l1 regression ``min_x ||a_i - Y x_i||_1`` for all rows at once by
    iteratively reweighted least squares (weights 1/max(|r|, delta), delta shrinking)."""
    m, k = X0.shape
    if k == 0 or m == 0:
        return X0
    X = X0.copy()
    delta = 1e-3
    grams = WeightedGrams(Y)
    for _ in range(iters):
        R = A - X @ Y.T
        Wt = 1.0 / np.maximum(np.abs(R), delta)  # m x N
        G = grams(Wt)  # G_i = Y^T diag(w_i) Y
        rhs = (Wt * A) @ Y
        regularise(G)  # G_i += 1e-12 trace(G_i) I + 1e-300
        try:
            X = np.linalg.solve(G, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break
        delta = max(delta * 0.5, 1e-9)
    return X


def fit_rows_l1(op: OperatorCache, Y: np.ndarray, target: float, X0: np.ndarray | None = None,
                stop_early: bool = True, lp_rows: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """X for a fixed basis Y: least squares, then batched IRLS (approximate l1 regression) on the
    rows whose error exceeds ``target``, then exact l1 regression (HiGHS) for at most ``lp_rows``
    rows still above it (worst first).  With ``stop_early``, stops at the first row whose optimal
    l1 error exceeds ``target`` (no X works for this Y).  Returns (X, float64 row errors)."""
    A = op.A
    X = least_squares_rows(A, Y) if X0 is None else X0.copy()
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
        x, e = l1_regression(A[i], Y, X[i])
        op.lp_solves += 1
        if e < err[i]:
            X[i], err[i] = x, e
        if stop_early and err[i] > target:
            break
    return X, err
