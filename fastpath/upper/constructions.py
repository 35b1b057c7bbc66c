"""Upper constructions (untrusted, float64): explicit factors X (m x k), Y (N x k) for a given
rank k.  A candidate whose float64 ``||A - X Y^T||_inf`` is at most ``eps - MARGIN`` proves
``r_eps(A) <= k`` (Lemma U) once the validated replay confirms it; the rank search
(``fastpath/upper/rank_search.py``) does that check.

Six constructions, each a function ``build(op, k, target) -> (X, Y)``:

- ``tsvd``     truncated SVD (Eckart-Young in Frobenius; checked in max-row-l1);
- ``rwsvd``    row-reweighted SVD: rows with a large l1 error get more weight in the next SVD;
- ``altl1``    alternating l1 factorization: X by exact row-wise l1 regression (HiGHS LP, only for
               the rows that miss the target), Y by IRLS-weighted least squares (rows weighted by
               their l1 error, entries by 1/|residual|), started from the best reweighted basis;
- ``cpqr``     column-pivoted QR of A: ``B = Q_k Q_k^T A`` (span of k pivot columns);
- ``rpqr``     row-pivoted QR (QR of A^T): ``B = A Y Y^T``, Y an orthonormal basis of k pivot rows;
- ``reprows``  representative rows: ``B = X A[I, :]``, I grown greedily by the worst-fitted row,
               X by row-wise l1 regression.

Steps down from a checked witness (``descend``, ``shrink``) are in ``fastpath/upper/refine.py``.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import scipy.linalg

from softrank.fastpath.float64 import row_l1
from softrank.fastpath.upper.l1_fit import WeightedGrams, fit_rows_l1, regularise
from softrank.fastpath.operator_cache import OperatorCache


def build_tsvd(op: OperatorCache, k: int, target: float = 0.0):
    U, s, Vt = op.svd
    return U[:, :k] * s[:k], Vt[:k].T.copy()


def top_right_vectors(B: np.ndarray, k: int) -> np.ndarray:
    """The top k right singular vectors of B (N x k), from the symmetric eigenproblem of B^T B
    (half the cost of an SVD; only the span is used)."""
    n = B.shape[1]
    if k == 0:
        return np.zeros((n, 0))
    if 4 * k < n:  # only the top k eigenvectors (the MRRR driver): about half the cost
        _, V = scipy.linalg.eigh(B.T @ B, subset_by_index=[n - k, n - 1], driver="evr", check_finite=False)
        return V[:, ::-1].copy()
    _, V = np.linalg.eigh(B.T @ B)
    return V[:, ::-1][:, :k].copy()


def rw_basis(op: OperatorCache, k: int, iters: int = 8) -> tuple[np.ndarray, float]:
    """Best orthonormal basis (N x k) over a few rounds of row reweighting, and its error; the
    basis is kept in ``op.rw_bases[k]`` (the start of alternating l1 at rank k)."""
    A = op.A
    w = np.ones(op.m)
    best_err, best_Y = math.inf, None
    for it in range(iters):
        Y = op.svd[2][:k].T if it == 0 else top_right_vectors(w[:, None] * A, k)
        err = row_l1(A, A @ Y, Y)
        if err.max() < best_err:
            best_err, best_Y = float(err.max()), Y.copy()
        mean = err.mean()
        if mean <= 0:
            break
        w = w * (err / mean)
        w /= w.max()
        w = np.maximum(w, 1e-8)
    op.rw_bases[k] = best_Y
    return best_Y, best_err


def build_rwsvd(op: OperatorCache, k: int, target: float = 0.0):
    Y, _ = rw_basis(op, k)
    return op.A @ Y, Y


def _weighted_y_step(A: np.ndarray, X: np.ndarray, Y: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Y-step of alternating l1: weighted least squares, row weights from the l1 errors, entry
    weights IRLS (raises ``LinAlgError`` on a singular system)."""
    R = A - X @ Y.T
    wr = (err / max(float(err.mean()), 1e-300)) ** 2
    Wt = wr[:, None] / np.maximum(np.abs(R), 1e-6)  # m x N
    G = WeightedGrams(X)(Wt.T)  # G_j = X^T diag(w_:j) X
    rhs = (Wt * A).T @ X
    regularise(G)  # G_j += 1e-12 trace(G_j) I + 1e-300
    return np.linalg.solve(G, rhs[..., None])[..., 0]


def build_altl1(op: OperatorCache, k: int, target: float, rounds: int = 3, Y0: np.ndarray | None = None):
    """Alternating l1: X-step row-wise l1 regression (IRLS, exact LP on the worst rows), Y-step
    IRLS weighted least squares (row weights grow with the row's l1 error, entry weights
    1/|residual|).  Starts from ``Y0`` or the best row-reweighted SVD basis of rank k."""
    Y = Y0 if Y0 is not None else op.rw_bases.get(k)
    if Y is None:
        Y, _ = rw_basis(op, k)
    X, err = fit_rows_l1(op, Y, target, stop_early=False)
    best = (float(err.max()), X, Y)
    for _ in range(rounds):
        if best[0] <= target:
            break
        try:
            Y = _weighted_y_step(op.A, X, Y, err)
        except np.linalg.LinAlgError:
            break
        X, err = fit_rows_l1(op, Y, target, stop_early=False)
        if err.max() < best[0]:
            best = (float(err.max()), X, Y)
    return best[1], best[2]


def build_cpqr(op: OperatorCache, k: int, target: float = 0.0):
    Q, _ = op.cpqr
    Qk = Q[:, :k]
    return Qk, op.A.T @ Qk


def build_rpqr(op: OperatorCache, k: int, target: float = 0.0):
    piv = op.rpqr
    if k == 0:
        return np.zeros((op.m, 0)), np.zeros((op.N, 0))
    Y, _ = np.linalg.qr(op.A[piv[:k]].T)
    return op.A @ Y, Y


def representative_order(op: OperatorCache) -> np.ndarray:
    """Greedy order of representative rows: repeatedly add the row worst fitted (l1 of the least
    squares residual) by the span of the rows chosen so far (kept in ``op.rep_order``)."""
    if op.rep_order is None:
        A = op.A
        order: list[int] = []
        Q = np.zeros((op.N, 0))
        for _ in range(op.p):
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
        op.rep_order = np.array(order, dtype=np.int64)
    return op.rep_order


def build_reprows(op: OperatorCache, k: int, target: float):
    rows = representative_order(op)[:k]
    Y = op.A[rows].T.copy()  # basis: the chosen rows of A themselves
    X, _ = fit_rows_l1(op, Y, target, stop_early=True)
    return X, Y


CONSTRUCTIONS: dict[str, Callable] = {
    "tsvd": build_tsvd,
    "rwsvd": build_rwsvd,
    "altl1": build_altl1,
    "cpqr": build_cpqr,
    "rpqr": build_rpqr,
    "reprows": build_reprows,
}
TARGET_DEPENDENT = ("altl1", "reprows")  # constructions whose result depends on the target error
