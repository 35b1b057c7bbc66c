"""Steps down from a checked witness (untrusted, float64): refit alternating l1 at a lower rank,
started from the top right singular vectors of the witness, and keep the result while its float64
check passes.  ``descend`` takes one-rank steps (moderate ranks), ``shrink`` large steps (high
ranks, where one-rank steps cost too many fits)."""

from __future__ import annotations

import numpy as np

from softrank.fastpath.upper.constructions import build_altl1
from softrank.fastpath.float64 import max_row_l1
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.rank_search import Witness


def right_singular_basis(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Right singular vectors of ``X Y^T`` (N x k, by decreasing singular value), from the QR
    factors of X and Y (no N x N product)."""
    _, Rx = np.linalg.qr(X)
    Qy, Ry = np.linalg.qr(Y)
    _, _, vt = np.linalg.svd(Rx @ Ry.T)
    return Qy @ vt.T


def _step_down(op: OperatorCache, X: np.ndarray, Y: np.ndarray, target: float, lo: int, rounds: int):
    """Rank k - 1, else k - 2, from the top singular directions of X Y^T: (X, Y, error) or None."""
    k = X.shape[1]
    basis = right_singular_basis(X, Y)
    for drop in (1, 2):
        if k - drop < max(lo, 1):
            break
        X1, Y1 = build_altl1(op, k - drop, target, rounds=rounds, Y0=basis[:, :k - drop])
        e = max_row_l1(op.A, X1, Y1)
        if e <= target:
            return np.ascontiguousarray(X1), np.ascontiguousarray(Y1), e
    return None


def descend(op: OperatorCache, w: Witness, target: float, lo: int, rounds: int = 4,
            max_steps: int = 16) -> Witness:
    """From a checked witness of rank k, try rank k - 1 (and, if that fails, k - 2): drop the
    smallest singular components of X Y^T and rerun alternating l1 from the remaining basis;
    repeat while a check passes."""
    best = w
    X, Y = w.X, w.Y
    for _ in range(max_steps):
        step = _step_down(op, X, Y, target, lo, rounds)
        if step is None:
            break
        X, Y, e = step
        best = Witness(X.shape[1], X, Y, "altl1", e)
    return best


def shrink(op: OperatorCache, w: Witness, target: float, lo: int, factor: float = 0.93, max_fits: int = 2,
           rounds: int = 2) -> Witness:
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
            X1, Y1 = build_altl1(op, k_new, target, rounds=rounds, Y0=Y0)
            e = max_row_l1(op.A, X1, Y1)
            if e <= target:
                step = Witness(k_new, np.ascontiguousarray(X1), np.ascontiguousarray(Y1), "altl1", e)
                break
        if step is None:
            break
        best = step
    return best
