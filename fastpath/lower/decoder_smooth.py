"""The smoothed W of decoder growth (untrusted, float64): ``smooth_decoder_w`` fits W for fixed
rows by nonlinear conjugate gradients on a smoothed decoder value; ``fastpath/lower/decoder.py``
grows decoder sets with it past the LP's reach."""

from __future__ import annotations

import numpy as np

from softrank.fastpath.float64 import decoder_value
from softrank.fastpath.lower.conjugate_gradients import minimize_cg

SMOOTH_STAGES = ((0.05, 1e-3), (0.02, 3e-4), (0.005, 1e-4))  # (mu, delta) of the smoothed value
SMOOTH_ITERS = 300  # nonlinear CG iterations per stage
ENOUGH_EVERY = 5  # a fit stopped at a float64 value (``enough``) checks it every this many CG iterations


def _lse_softmax(x: np.ndarray) -> tuple[float, np.ndarray]:
    """log(sum(exp(x))) and softmax(x), max-shifted."""
    top = float(x.max())
    e = np.exp(x - top)
    total = float(e.sum())
    return top + float(np.log(total)), e / total


def smoothed_value_and_grad(M: np.ndarray, Wm: np.ndarray, eye: np.ndarray, eps: float, mu: float,
                            delta: float) -> tuple[float, np.ndarray]:
    """The smoothed decoder value of W (N x p) for rows M and its gradient (flat)::

        f = mu lse(r / mu) + eps mu lse(b / mu),  r_i = sum_k s(R_ik),  b_j = sum_k s(W_jk),
        R = M W - I,  s(x) = sqrt(x^2 + delta^2) - delta

    The N x p arrays are computed in one buffer, in place (the same operations in the same order
    as the plain expressions, so the same values bit for bit; ``tests/fastpath/test_decoder_smooth.py``
    compares them): they are most of the cost of decoder growth."""
    p = M.shape[0]
    R = M @ Wm - eye
    sR = np.sqrt(R * R + delta * delta)
    Q = np.multiply(Wm, Wm)
    Q += delta * delta
    np.sqrt(Q, out=Q)  # sqrt(W^2 + delta^2)
    r = sR.sum(axis=1) - p * delta
    b = Q.sum(axis=1) - p * delta
    lr, pr = _lse_softmax(r / mu)
    lb, pb = _lse_softmax(b / mu)
    f = mu * lr + eps * mu * lb
    np.divide(Wm, Q, out=Q)
    Q *= eps * pb[:, None]
    g = M.T @ (pr[:, None] * (R / sR))
    g += Q
    return f, g.ravel()


def smooth_decoder_w(M: np.ndarray, W0: np.ndarray, eps: float, stages=SMOOTH_STAGES,
                     iters: int = SMOOTH_ITERS, give_up=(), stall: tuple[int, float] | None = None,
                     enough: float | None = None, give_up_early=()) -> np.ndarray:
    """A heuristic W for fixed rows M = A_S (p x N), started from ``W0``: minimise a smoothed
    ``max_i ||(M W - I)_i||_1 + eps max_j ||W_j||_1`` (max -> mu logsumexp(./mu),
    |x| -> sqrt(x^2 + delta^2) - delta) by scipy's nonlinear conjugate gradients, for a decreasing
    sequence of (mu, delta).  Any W is allowed by Lemma D, so the caller checks the exact float64
    value; used where the LP (p^2 N residual rows) is too slow.  ``give_up``: after stage i, the
    W so far is returned when its exact value is above ``give_up[i]`` (a fit that far above 1
    never came below it in the later stages: ``GIVE_UP``).  ``stall``: the stopping rule of
    ``minimize_cg`` added to each stage (``STALL``; None: scipy's CG unchanged).  ``enough``: the
    fit ends, in whatever stage, at the first iterate (checked every ``ENOUGH_EVERY`` iterations)
    whose exact float64 value is <= ``enough`` (``ENOUGH`` in fast mode: a valid W is all growth
    needs; the next row's fit goes on improving it).  ``give_up_early``: pairs (k, v); the first
    stage ends the fit at its k-th iteration when the exact value is still above v
    (``GIVE_UP_EARLY`` in fast mode)."""
    p, n = M.shape
    eye = np.eye(p)
    W = np.array(W0, dtype=np.float64)
    rows = np.arange(p)
    reached = [False]  # the fit is over: ``enough`` reached, or given up early
    early = [dict(give_up_early)]  # the first stage's checks; emptied after it

    def stop(k, x):
        limit = early[0].get(k)
        if (enough is None or k % ENOUGH_EVERY) and limit is None:
            return False
        value = decoder_value(M, rows, x.reshape(n, p), eps)
        reached[0] = (enough is not None and value <= enough) or (limit is not None and value > limit)
        return reached[0]

    for i, (mu, delta) in enumerate(stages):
        if 0 < i <= len(give_up) and decoder_value(M, rows, W, eps) > give_up[i - 1]:
            break
        def value_and_grad(w, mu=mu, delta=delta):
            return smoothed_value_and_grad(M, w.reshape(n, p), eye, eps, mu, delta)
        x = minimize_cg(value_and_grad, W.ravel(), iters, stall, stop)  # without stall/stop: scipy's CG
        if np.all(np.isfinite(x)):
            W = x.reshape(n, p)
        early[0] = {}
        if reached[0]:
            break
    return W
