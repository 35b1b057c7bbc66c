"""Budgeted smoothed-minimax descent (untrusted): the upper ends of the default bracket.

At rank k the factors X (m x k) and Y (N x k) are moved jointly by Adam on a smoothed maximum of
the row l1 errors of ``A - X Y^T``::

    f(X, Y) = mu log sum_i exp(r_i / mu),   r_i = sum_j sqrt(R_ij^2 + delta^2),   R = A - X Y^T

started from the top k singular directions of a checked witness (balanced factors).  Three things
make it cheap enough for every operator of a panel, where ``softrank tighten``'s deadline-driven
optimiser (``fastpath/tighten/upper.py``) is not:

- **float32 iterations.**  The iterates are computed in float32 and aimed ``AIM`` (relative)
  below the float64 target; only the factors that come out are checked, in float64.
- **Active rows.**  The weight of row i in the gradient is ``exp((r_i - max r) / mu)``; rows more
  than ``band * mu`` below the largest smoothed error (``N delta`` added for the smoothing) carry
  weights below e^-band and are left out of the gradient.
- **Stall stop and an iteration budget.**  Every ``check`` iterations the least error is recorded;
  a run stops when the gain over the last ``window`` iterations, extrapolated linearly over the
  iterations it has left, cannot reach the target.  ``descend`` counts iterations, not seconds,
  so its result does not depend on the machine's load.

``descend`` steps the rank down from a witness (5% of the rank at first, doubling the step after a
quick success up to a sixteenth of the rank, halving it after a failure) until a one-rank step fails, the lower end is reached
or the budget is spent; a run that ends just above the target has the rows above it refit by exact
l1 regression for the fixed Y (``fit_rows_l1``) and one more run.  Every witness it returns
satisfies ``||A - X Y^T||_inf <= eps - MARGIN`` in float64 (``max_row_l1``); the validated replay
re-checks it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from softrank.fastpath.float64 import MARGIN, max_row_l1
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.l1_fit import fit_rows_l1
from softrank.fastpath.upper.rank_search import Witness

CONSTRUCTION = "minimax"  # the construction name written into the record
AIM = 1e-5  # float32 runs aim this much (relative) below the float64 target
REFIT_ITERATIONS = 20  # iterations an l1 refit of the rows is counted as
WIDTH = 32  # an iteration at rank k costs max(k, WIDTH) / WIDTH budget units


@dataclass(frozen=True)
class DescentSettings:
    lr: float = 3e-4  # Adam step
    mu: float = 0.002  # temperature of the smoothed maximum over rows
    delta: float = 1e-4  # |x| -> sqrt(x^2 + delta^2)
    iters: int = 1500  # iterations of one run at most
    patience: int = 300  # iterations without a gain of 1e-5 before the step is halved
    min_lr: float = 1e-5  # a run stops when the step falls below this
    window: int = 100  # stall stop: gain measured over this many iterations ...
    check: int = 25  # ... recorded every this many (200 / 50 cost 2% more CPU on the MiniLM panel, no better end)
    band: float = 10.0  # rows within band * mu of the largest error enter the gradient (40: 6% more CPU on the MiniLM panel, no better end)
    high_rank: int = 32  # runs at this rank or above use mu_high and band_high instead (MiniLM panel: sums of
    mu_high: float = 0.006  # U -2..-3%, CPU -1%; at every rank it cost SmolLM2 closed blocks: low ranks need
    band_high: float = 5.0  # the sharp maximum)
    step_fraction: float = 0.05  # first rank step, as a fraction of the rank
    quick: int = 100  # a success within this many iterations doubles the step ...
    step_cap: int = 16  # ... up to rank / step_cap (4: overshooting steps whose failed runs cost the most)
    refit_within: float = 0.012  # rows are refit only when a run ends within this relative gap


def balanced_truncation(X: np.ndarray, Y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Balanced factors ``U_k S_k^(1/2)``, ``V_k S_k^(1/2)`` of the top k singular directions of
    ``X Y^T`` (from the QR factors of X and Y; no m x N product)."""
    Qx, Rx = np.linalg.qr(X)
    Qy, Ry = np.linalg.qr(Y)
    u, s, vt = np.linalg.svd(Rx @ Ry.T)
    root = np.sqrt(s[:k])
    return np.ascontiguousarray(Qx @ u[:, :k] * root), np.ascontiguousarray(Qy @ vt[:k].T * root)


def adam_step(P: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: float) -> None:
    """One Adam update of ``P`` in place (beta 0.9, 0.999)."""
    m *= 0.9
    m += 0.1 * g
    v *= 0.999
    v += 0.001 * g * g
    P -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-12)


class _Buffers:
    """The work arrays of one float32 run, allocated once: every iteration writes into them with
    ``out=`` (the same operations in the same order as the plain expressions, so the same
    values bit for bit; ``tests/fastpath/test_minimax.py`` compares them).  X and Y are the two
    blocks of one (m + n) x k array, as are their gradients and Adam moments, so that one Adam
    update moves both (the same values as two updates)."""

    def __init__(self, m: int, n: int, k: int):
        self.R = np.empty((m, n), np.float32)  # A - X Y^T
        self.S = np.empty((m, n), np.float32)  # |R|, then sqrt(R^2 + delta^2) and the weighted R / S
        self.P, self.G, self.mom, self.vel, self.t1, self.t2 = (np.zeros((m + n, k), np.float32) for _ in range(6))
        self.X, self.Y = self.P[:m], self.P[m:]  # views: the factors ...
        self.gX, self.gY = self.G[:m], self.G[m:]  # ... and their gradients


def adam_step_into(P: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: float,
                   tmp: np.ndarray, tmp2: np.ndarray) -> None:
    """``adam_step`` with the work arrays ``tmp`` and ``tmp2`` (P's shape): the same values."""
    m *= 0.9
    np.multiply(g, 0.1, out=tmp)
    m += tmp
    v *= 0.999
    np.multiply(g, 0.001, out=tmp)
    tmp *= g
    v += tmp
    np.divide(m, 1 - 0.9 ** t, out=tmp)
    np.divide(v, 1 - 0.999 ** t, out=tmp2)
    np.sqrt(tmp2, out=tmp2)
    tmp2 += 1e-12
    tmp *= lr
    tmp /= tmp2
    P -= tmp


def _gradients(R: np.ndarray, S: np.ndarray, a: np.ndarray, err: float, X: np.ndarray, Y: np.ndarray,
               b: _Buffers, slack: float, dd, mu) -> None:
    """b.gX, b.gY: the gradient of the smoothed maximum over the rows within ``slack`` of ``err``."""
    act = np.flatnonzero(a >= err - slack)
    every = len(act) == R.shape[0]
    Ra = R if every else R[act]
    Sa = S if every else np.empty_like(Ra)
    np.multiply(Ra, Ra, out=Sa)
    Sa += dd
    np.sqrt(Sa, out=Sa)
    r = Sa.sum(axis=1)
    w = np.exp((r - r.max()) / mu)
    np.divide(Ra, Sa, out=Sa)
    Sa *= (w / w.sum())[:, None]  # G: minus the gradient of f with respect to X Y^T
    if every:
        np.matmul(Sa, Y, out=b.gX)
        np.negative(b.gX, out=b.gX)
        np.matmul(Sa.T, X, out=b.gY)
    else:
        b.gX.fill(0.0)
        b.gX[act] = -(Sa @ Y)
        np.matmul(Sa.T, X[act], out=b.gY)
    np.negative(b.gY, out=b.gY)


def minimax_run(A: np.ndarray, X: np.ndarray, Y: np.ndarray, target: float, cap: int,
                s: DescentSettings = DescentSettings()) -> tuple[float, np.ndarray, np.ndarray, int]:
    """One float32 run of at most ``cap`` iterations from (X, Y) (see the module docstring).
    Returns (float64 error of the best iterate, X, Y as float64, iterations used)."""
    A32 = np.asarray(A, dtype=np.float32)
    b = _Buffers(A32.shape[0], A32.shape[1], X.shape[1])
    b.X[...], b.Y[...] = X, Y
    X, Y = b.X, b.Y
    aim = target * (1 - AIM)
    best, lr, since = (np.inf, X.copy(), Y.copy()), s.lr, 0
    seen: dict[int, float] = {}
    mu, band = (s.mu_high, s.band_high) if X.shape[1] >= s.high_rank else (s.mu, s.band)
    slack = band * mu + A.shape[1] * s.delta
    dd, mu = np.float32(s.delta * s.delta), np.float32(mu)
    t = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, max(cap, 0) + 1):
            np.matmul(X, Y.T, out=b.R)
            np.subtract(A32, b.R, out=b.R)
            a = np.abs(b.R, out=b.S).sum(axis=1)
            err = float(a.max())
            if not np.isfinite(err):
                break
            since += 1
            if err < best[0]:
                since = 0 if err < best[0] - 1e-5 else since
                best = (err, X.copy(), Y.copy())
            if err <= aim:
                break
            if t % s.check == 0:
                seen[t] = best[0]
                before = seen.get(t - s.window)
                if before is not None and (before - best[0]) * (cap - t) < (best[0] - aim) * s.window:
                    break  # the gain of the last window, extrapolated, cannot reach the target
            if since > s.patience:
                lr, since = lr / 2, 0
                if lr < s.min_lr:
                    break
            _gradients(b.R, b.S, a, err, X, Y, b, slack, dd, mu)
            adam_step_into(b.P, b.G, b.mom, b.vel, t, lr, b.t1, b.t2)  # X and Y in one update
    X64, Y64 = np.ascontiguousarray(best[1], dtype=np.float64), np.ascontiguousarray(best[2], dtype=np.float64)
    return max_row_l1(A, X64, Y64), X64, Y64, t


def refit_rows(op: OperatorCache, X: np.ndarray, Y: np.ndarray, target: float) -> tuple[float, np.ndarray]:
    """Every row of X above ``target`` refit by l1 regression for the fixed Y (IRLS, then the
    exact LP): (float64 error, X)."""
    Xr, _ = fit_rows_l1(op, Y, target, X0=X, stop_early=False, lp_rows=op.m)
    Xr = np.ascontiguousarray(Xr)
    return max_row_l1(op.A, Xr, Y), Xr


def fit_rank(op: OperatorCache, w: Witness, k: int, target: float, budget: int,
             s: DescentSettings = DescentSettings()) -> tuple[Witness | None, int]:
    """A checked witness of rank k from the witness ``w`` (rank > k), or None, and the iterations
    spent (at most ``budget``, a refit counted as ``REFIT_ITERATIONS``)."""
    X, Y = balanced_truncation(w.X, w.Y, k)
    err, X, Y, spent = minimax_run(op.A, X, Y, target, min(s.iters, budget), s)
    if target < err <= target * (1 + s.refit_within) and spent + REFIT_ITERATIONS < budget:
        spent += REFIT_ITERATIONS
        err_r, Xr = refit_rows(op, X, Y, target)
        if err_r < err:
            err, X = err_r, Xr
            if err > target:
                err, X, Y, more = minimax_run(op.A, X, Y, target, min(s.iters, budget - spent), s)
                spent += more
    if not err <= target:
        return None, spent
    return Witness(k, X, Y, CONSTRUCTION, err), spent


def descend(op: OperatorCache, w: Witness, eps: float, lower: int, budget: float,
            s: DescentSettings = DescentSettings(), log: list | None = None) -> tuple[Witness, float]:
    """From a checked witness, lower the rank while ``fit_rank`` succeeds (see the module
    docstring), never below ``lower`` (a proved or claimed lower end), within ``budget``
    budget units (an iteration at rank k counts ``max(k, WIDTH) / WIDTH``: its products grow
    with k).  Returns the best checked witness (``w`` itself when no step succeeds) and the units
    spent.  ``log`` collects (rank, success, iterations) per step."""
    target = eps - MARGIN
    best, spent = w, 0.0
    step = max(1, round(s.step_fraction * w.rank))
    while best.rank - 1 >= max(lower, 1) and spent < budget:
        k = max(best.rank - step, lower, 1)
        unit = max(k, WIDTH) / WIDTH
        found, used = fit_rank(op, best, k, target, max(0, int((budget - spent) / unit)), s)
        spent += used * unit
        if log is not None:
            log.append((k, found is not None, used))
        if found is not None:
            if used <= s.quick:
                step = min(2 * (best.rank - k), max(1, k // s.step_cap))
            best = found
        elif best.rank - k == 1:
            break
        else:
            step = max(1, (best.rank - k) // 2)
    return best, spent
