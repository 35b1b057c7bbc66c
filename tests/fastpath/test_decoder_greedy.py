"""``fastpath/lower/decoder_greedy.py``: the right inverses updated one row at a time are right inverses
of A_S, and their estimates are the decoder values of the updated matrices."""

import numpy as np

from softrank.fastpath.lower.decoder_greedy import RightInverses, first_fit
from softrank.fastpath.float64 import decoder_value


def _operator(seed: int, m: int = 24, n: int = 30) -> np.ndarray:
    rng = np.random.default_rng(seed)
    H = 3.0 * rng.normal(size=(m, n))
    A = np.exp(H - H.max(axis=1, keepdims=True))
    return A / A.sum(axis=1, keepdims=True)


def test_updated_inverses_are_right_inverses_and_estimates_match():
    A = _operator(1)
    ri = RightInverses(A, A.argmax(axis=1))
    eps = 0.2
    for i in range(6):
        cand = ri.candidate(i)
        vp, vk = ri.estimates(cand, eps)
        ri.add(i, cand)
        rows = np.array(ri.rows)
        W = ri.matrices()
        assert np.allclose(A[rows] @ W[0], np.eye(len(rows)), atol=1e-9)
        assert np.isclose(vp, eps * np.abs(W[0]).sum(axis=1).max(), rtol=1e-12)
        if cand["peak"] is not None:
            assert np.allclose(A[rows] @ W[1], np.eye(len(rows)), atol=1e-9)
            assert np.isclose(vk, eps * np.abs(W[1]).sum(axis=1).max(), rtol=1e-12)


def test_first_fit_returns_a_valid_decoder():
    A = _operator(2)
    start = (np.array([int(A.max(axis=1).argmax())]), np.ones((A.shape[1], 1)))
    rows, W, v = first_fit(A, A.argmax(axis=1), *start, [np.arange(A.shape[0])], 0.25, 20)
    assert len(rows) >= 1 and v == decoder_value(A, rows, W, 0.25) and v <= 1 - 1e-9
