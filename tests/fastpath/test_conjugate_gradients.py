"""``minimize_cg`` visits the points of scipy's CG and returns its x bit for bit."""

import numpy as np
import pytest
from scipy.optimize import minimize

from softrank.fastpath.float64 import decoder_value
from softrank.fastpath.lower.conjugate_gradients import minimize_cg
from softrank.fastpath.lower.decoder import smooth_decoder_w


def _smoothed(M: np.ndarray, eps: float, mu: float, delta: float):
    p, n = M.shape
    eye = np.eye(p)

    def value_and_grad(w):
        W = w.reshape(n, p)
        R = M @ W - eye
        sR, sW = np.sqrt(R * R + delta ** 2), np.sqrt(W * W + delta ** 2)
        r, b = sR.sum(axis=1) / mu, sW.sum(axis=1) / mu
        pr, pb = np.exp(r - r.max()), np.exp(b - b.max())
        f = mu * (r.max() + np.log(pr.sum())) + eps * mu * (b.max() + np.log(pb.sum()))
        pr, pb = pr / pr.sum(), pb / pb.sum()
        return f, (M.T @ (pr[:, None] * (R / sR)) + eps * pb[:, None] * (W / sW)).ravel()

    return value_and_grad


@pytest.mark.parametrize("seed", range(6))
def test_the_same_x_as_scipy_cg(seed):
    rng = np.random.default_rng(seed)
    p, n = int(rng.integers(2, 12)), int(rng.integers(12, 40))
    M = rng.dirichlet(np.full(n, 0.3), size=p)
    W0 = np.linalg.pinv(M) * (1 + 0.2 * rng.normal(size=(n, p)))
    fun = _smoothed(M, float(rng.uniform(0.1, 0.4)), 0.05, 1e-3)
    iters = int(rng.integers(5, 200))
    ref = minimize(fun, W0.ravel(), jac=True, method="CG", options={"maxiter": iters}).x
    assert np.array_equal(minimize_cg(fun, W0.ravel(), iters), ref)


def test_a_quadratic_is_minimised():
    rng = np.random.default_rng(7)
    B = rng.normal(size=(8, 8))
    Q, c = B @ B.T + np.eye(8), rng.normal(size=8)
    x = minimize_cg(lambda x: (0.5 * x @ Q @ x - c @ x, Q @ x - c), np.zeros(8), 500)
    assert np.allclose(x, np.linalg.solve(Q, c), atol=1e-5)


def test_the_smoothed_decoder_lowers_the_decoder_value():
    rng = np.random.default_rng(3)
    M = rng.dirichlet(np.full(30, 0.2), size=4)
    W0 = np.linalg.pinv(M)
    value = lambda W: np.abs(M @ W - np.eye(4)).sum(axis=1).max() + 0.2 * np.abs(W).sum(axis=1).max()
    assert value(smooth_decoder_w(M, W0, 0.2)) < value(W0)


def test_smooth_decoder_w_gives_up_after_a_stage_whose_value_is_above_the_threshold():
    rng = np.random.default_rng(4)
    M = rng.dirichlet(np.full(30, 0.2), size=4)
    W0 = np.linalg.pinv(M)
    from softrank.fastpath.lower.decoder import SMOOTH_STAGES

    one_stage = smooth_decoder_w(M, W0, 0.2, stages=SMOOTH_STAGES[:1])
    assert np.array_equal(smooth_decoder_w(M, W0, 0.2, give_up=(0.0,)), one_stage)  # above 0: stop
    two_stages = smooth_decoder_w(M, W0, 0.2, stages=SMOOTH_STAGES[:2])
    assert np.array_equal(smooth_decoder_w(M, W0, 0.2, give_up=(10.0, 0.0)), two_stages)
    assert np.array_equal(smooth_decoder_w(M, W0, 0.2, give_up=(10.0, 10.0)), smooth_decoder_w(M, W0, 0.2))
    assert not np.array_equal(one_stage, smooth_decoder_w(M, W0, 0.2))


def test_smooth_decoder_w_gives_up_early_in_its_first_stage_only_above_the_value_at_that_iteration():
    rng = np.random.default_rng(4)
    M = rng.dirichlet(np.full(30, 0.2), size=4)
    W0 = np.linalg.pinv(M) * 1.5  # a start well above the decoder value 1
    from softrank.fastpath.lower.decoder import SMOOTH_ITERS, SMOOTH_STAGES
    from softrank.fastpath.lower.decoder_smooth import smoothed_value_and_grad

    eye = np.eye(4)
    mu, delta = SMOOTH_STAGES[0]
    first = minimize_cg(lambda w: smoothed_value_and_grad(M, w.reshape(30, 4), eye, 0.2, mu, delta), W0.ravel(), 10)
    value = decoder_value(M, np.arange(4), first.reshape(30, 4), 0.2)
    stopped = smooth_decoder_w(M, W0, 0.2, give_up_early=((10, value - 1e-9),))  # above the limit: the fit ends there
    assert np.array_equal(stopped, first.reshape(30, 4))
    whole = smooth_decoder_w(M, W0, 0.2)
    assert np.array_equal(smooth_decoder_w(M, W0, 0.2, give_up_early=((10, value + 1e-9),)), whole)  # below: no change
    assert not np.array_equal(stopped, whole) and SMOOTH_ITERS > 10


def test_stall_stops_at_the_first_window_whose_value_fell_by_less_than_tol():
    rng = np.random.default_rng(11)
    M = rng.dirichlet(np.full(24, 0.3), size=5)
    W0 = (np.linalg.pinv(M) * (1 + 0.3 * rng.normal(size=(24, 5)))).ravel()
    fun = _smoothed(M, 0.2, 0.05, 1e-3)
    f = [fun(minimize_cg(fun, W0, k))[0] for k in range(200)]  # the value after k iterations
    window, tol = 10, 3e-3
    stop = next(k for k in range(window, 200) if f[k - window] - f[k] < tol)
    assert 20 < stop < 190  # the rule stops this run part-way, not at the first or the last chance
    assert np.array_equal(minimize_cg(fun, W0, 300, stall=(window, tol)), minimize_cg(fun, W0, stop))


def test_stall_at_its_limits_is_maxiter_or_no_rule():
    rng = np.random.default_rng(12)
    M = rng.dirichlet(np.full(20, 0.3), size=4)
    W0 = np.linalg.pinv(M).ravel()
    fun = _smoothed(M, 0.25, 0.05, 1e-3)
    assert np.array_equal(minimize_cg(fun, W0, 200, stall=(7, np.inf)), minimize_cg(fun, W0, 7))
    assert np.array_equal(minimize_cg(fun, W0, 200, stall=(7, -np.inf)), minimize_cg(fun, W0, 200))
    assert np.array_equal(smooth_decoder_w(M, W0.reshape(20, 4), 0.25, stall=(5, np.inf)),
                          smooth_decoder_w(M, W0.reshape(20, 4), 0.25, iters=5))


def test_stop_ends_the_run_at_the_first_iteration_it_accepts():
    rng = np.random.default_rng(13)
    M = rng.dirichlet(np.full(20, 0.3), size=4)
    W0 = np.linalg.pinv(M).ravel()
    fun = _smoothed(M, 0.25, 0.05, 1e-3)
    asked = []

    def stop(k, x):
        asked.append(k)
        return k == 9

    assert np.array_equal(minimize_cg(fun, W0, 200, stop=stop), minimize_cg(fun, W0, 9))
    assert asked == list(range(1, 10))
    assert np.array_equal(minimize_cg(fun, W0, 50, stop=lambda k, x: False), minimize_cg(fun, W0, 50))


def test_enough_stops_the_smoothed_fit_once_its_float64_value_is_low_enough():
    from softrank.fastpath.float64 import decoder_value

    rng = np.random.default_rng(14)
    M = rng.dirichlet(np.full(30, 0.2), size=4)
    W0 = np.linalg.pinv(M) * (1 + 0.3 * rng.normal(size=(30, 4)))
    rows = np.arange(4)
    full = smooth_decoder_w(M, W0, 0.2)
    start, best = decoder_value(M, rows, W0, 0.2), decoder_value(M, rows, full, 0.2)
    assert best < start
    goal = (start + best) / 2
    early = smooth_decoder_w(M, W0, 0.2, enough=goal)
    assert decoder_value(M, rows, early, 0.2) <= goal  # reached, and stopped there: not the full fit
    assert not np.array_equal(early, full)
    assert np.array_equal(smooth_decoder_w(M, W0, 0.2, enough=-1.0), full)  # never reached: the whole fit
