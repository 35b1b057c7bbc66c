"""``fastpath/lower/decoder_smooth.py``: the in-place smoothed value and gradient are the plain
expressions bit for bit, and the gradient is the derivative of the value."""

from __future__ import annotations

import numpy as np
import pytest

from softrank.fastpath.lower.decoder_smooth import _lse_softmax, smoothed_value_and_grad


def plain_value_and_grad(M, Wm, eye, eps, mu, delta):
    p = M.shape[0]
    R = M @ Wm - eye
    sR = np.sqrt(R * R + delta * delta)
    sW = np.sqrt(Wm * Wm + delta * delta)
    r = sR.sum(axis=1) - p * delta
    b = sW.sum(axis=1) - p * delta
    lr, pr = _lse_softmax(r / mu)
    lb, pb = _lse_softmax(b / mu)
    f = mu * lr + eps * mu * lb
    g = M.T @ (pr[:, None] * (R / sR)) + eps * pb[:, None] * (Wm / sW)
    return f, g.ravel()


def _case(seed: int, p: int, n: int):
    rng = np.random.default_rng(seed)
    M = rng.random((p, n)) ** 4
    M /= M.sum(axis=1, keepdims=True)
    W = rng.normal(size=(n, p)) * rng.choice([1e-6, 0.1, 3.0], size=(n, p))
    return M, W, np.eye(p)


@pytest.mark.parametrize("seed,p,n", [(0, 3, 17), (1, 12, 64), (2, 40, 256)])
@pytest.mark.parametrize("mu,delta", [(0.05, 1e-3), (0.005, 1e-4)])
def test_in_place_value_and_gradient_equal_the_plain_expressions_bit_for_bit(seed, p, n, mu, delta):
    M, W, eye = _case(seed, p, n)
    f, g = smoothed_value_and_grad(M, W, eye, 0.25, mu, delta)
    f0, g0 = plain_value_and_grad(M, W, eye, 0.25, mu, delta)
    assert f == f0
    assert np.array_equal(g, g0)


def test_the_gradient_is_the_derivative_of_the_value():
    M, W, eye = _case(3, 5, 20)
    _, g = smoothed_value_and_grad(M, W, eye, 0.2, 0.05, 1e-2)
    rng = np.random.default_rng(4)
    D = rng.normal(size=W.shape)
    h = 1e-6
    fp, _ = smoothed_value_and_grad(M, W + h * D, eye, 0.2, 0.05, 1e-2)
    fm, _ = smoothed_value_and_grad(M, W - h * D, eye, 0.2, 0.05, 1e-2)
    assert abs((fp - fm) / (2 * h) - float(g @ D.ravel())) < 1e-6 * max(1.0, abs(float(g @ D.ravel())))
