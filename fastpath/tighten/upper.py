"""Lower upper ends (untrusted, float64): a smoothed-minimax optimiser stepping down from a checked
witness, for ``softrank tighten`` (``fastpath/tighten/records.py``).

At rank k the factors X (m x k) and Y (N x k) are moved jointly by Adam on a smoothed maximum of
the row l1 errors of ``A - X Y^T``::

    f(X, Y) = mu log sum_i exp(r_i / mu),   r_i = sum_j sqrt(R_ij^2 + delta^2),   R = A - X Y^T

started from the top k singular directions of the previous witness ``X0 Y0^T`` (balanced
factors).  The iterate with the least float64 ``||A - X Y^T||_inf`` is kept; when it misses the
target, every row of X above the target is refit by exact l1 regression for the fixed Y
(``fastpath/upper/l1_fit.py: fit_rows_l1``) and Adam runs once more from there.  ``descend_minimax``
steps the rank down (5% of the rank at first, halving the step after a failure, continuing from
the latest success) until a one-rank step fails, the lower end is reached or the time is up; a
failing one-rank step is tried once more with a larger Adam step (``RETRY_STEP_FACTOR``), which
sometimes leaves the basin where the first run stalled.

Every witness returned satisfies ``||A - X Y^T||_inf <= eps - MARGIN`` in float64 (the check of
``fastpath/upper/rank_search.py``); nothing here is trusted: the validated replay re-checks it.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
from softrank.fastpath.float64 import max_row_l1
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.minimax import CONSTRUCTION, DescentSettings, adam_step, balanced_truncation, refit_rows
from softrank.fastpath.upper.rank_search import MARGIN, Witness

#: a failing one-rank step is tried once more with the Adam step this many times larger
RETRY_STEP_FACTOR = 10 / 3


#: the settings of tighten's runs: the bracket descent's type (``DescentSettings``, one for both
#: searches) with longer runs (tighten has the time).  Tighten reads lr, mu, delta, iters, patience,
#: min_lr, step_fraction and refit_within: one temperature at every rank, every row in the
#: gradient, no stall window, its own rank steps
TIGHTEN_SETTINGS = DescentSettings(iters=4000)


def minimax_adam(A: np.ndarray, X: np.ndarray, Y: np.ndarray, target: float, deadline: float,
                 s: DescentSettings = TIGHTEN_SETTINGS) -> tuple[float, np.ndarray, np.ndarray]:
    """Adam on the smoothed maximum row l1 error from (X, Y); stops once the float64 error is
    at most ``target``, after ``s.iters`` iterations, when the step has been halved below
    ``s.min_lr`` or at ``deadline`` (``time.perf_counter``).  Returns the best iterate
    (float64 error, X, Y)."""
    X, Y = X.copy(), Y.copy()
    mX, vX, mY, vY = (np.zeros_like(X), np.zeros_like(X), np.zeros_like(Y), np.zeros_like(Y))
    best, lr, since = (np.inf, X.copy(), Y.copy()), s.lr, 0
    for t in range(1, s.iters + 1):
        R = A - X @ Y.T
        err = float(np.abs(R).sum(axis=1).max())
        since += 1
        if err < best[0]:
            since = 0 if err < best[0] - 1e-5 else since
            best = (err, X.copy(), Y.copy())
        if err <= target or (t % 50 == 0 and time.perf_counter() > deadline):
            break
        if since > s.patience:
            lr, since = lr / 2, 0
            if lr < s.min_lr:
                break
        S = np.sqrt(R * R + s.delta * s.delta)
        r = S.sum(axis=1)
        w = np.exp((r - r.max()) / s.mu)
        G = (w / w.sum())[:, None] * (R / S)  # minus the gradient of f with respect to X Y^T
        gX, gY = -(G @ Y), -(G.T @ X)
        adam_step(X, gX, mX, vX, t, lr)
        adam_step(Y, gY, mY, vY, t, lr)
    return best


def fit_rank(op: OperatorCache, w: Witness, k: int, target: float, deadline: float,
             s: DescentSettings = TIGHTEN_SETTINGS) -> Witness | None:
    """A checked witness of rank k from the witness ``w`` (rank > k), or None: Adam from the top
    k directions of ``w``; if it misses by little (``s.refit_within``), exact row refits and one
    more Adam run."""
    X, Y = balanced_truncation(w.X, w.Y, k)
    err, X, Y = minimax_adam(op.A, X, Y, target, deadline, s)
    if target < err <= target * (1 + s.refit_within) and time.perf_counter() < deadline:
        err_r, Xr = refit_rows(op, X, Y, target)
        if err_r < err:
            err, X = err_r, Xr
            if err > target:
                err, X, Y = minimax_adam(op.A, X, Y, target, deadline, s)
    err = max_row_l1(op.A, X, Y)  # the check, from the factors that would be stored
    if err > target:
        return None
    return Witness(k, np.ascontiguousarray(X), np.ascontiguousarray(Y), CONSTRUCTION, err)


def descend_minimax(op: OperatorCache, w: Witness, eps: float, lower: int, deadline: float,
                    s: DescentSettings = TIGHTEN_SETTINGS, log: list | None = None) -> Witness:
    """From a checked witness, lower the rank while ``fit_rank`` succeeds (see the module
    docstring); never below ``lower`` (a proved or claimed lower end).  Returns the best checked
    witness (``w`` itself when no step succeeds).  ``log`` collects (rank, success, seconds)."""
    target = eps - MARGIN
    best = w
    step = max(1, round(s.step_fraction * w.rank))
    while best.rank - 1 >= max(lower, 1) and time.perf_counter() < deadline:
        k = max(best.rank - step, lower, 1)
        t0 = time.perf_counter()
        found = fit_rank(op, best, k, target, deadline, s)
        if log is not None:
            log.append((k, found is not None, time.perf_counter() - t0))
        if found is None and best.rank - k == 1 and time.perf_counter() < deadline:
            retry = replace(s, lr=s.lr * RETRY_STEP_FACTOR)  # the last step, once more
            found = fit_rank(op, best, k, target, deadline, retry)
            if log is not None:
                log.append((k, found is not None, time.perf_counter() - t0))
        if found is not None:
            best = found
        elif best.rank - k == 1:
            break
        else:
            step = max(1, (best.rank - k) // 2)
    return best
