"""Row-wise l1 regression for a fixed basis Y (untrusted, float64): the X-step of the alternating
l1 and representative-rows constructions (``fastpath/constructions.py``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from softrank.fastpath.float64 import row_l1
from softrank.fastpath.operator_cache import OperatorCache


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


def fit_rows_l1(op: OperatorCache, Y: np.ndarray, target: float, X0: np.ndarray | None = None,
                stop_early: bool = True, lp_rows: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """X for a fixed basis Y: least squares, then batched IRLS (approximate l1 regression) on the
    rows whose error exceeds ``target``, then exact l1 regression (HiGHS) for at most ``lp_rows``
    rows still above it (worst first).  With ``stop_early``, stops at the first row whose optimal
    l1 error exceeds ``target`` (no X works for this Y).  Returns (X, float64 row errors)."""
    A = op.A
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
        op.lp_solves += 1
        if e < err[i]:
            X[i], err[i] = x, e
        if stop_early and err[i] > target:
            break
    return X, err
