"""``fastpath/upper/l1_fit.py``: the in-place regularisation of a Gram stack gives the numbers of the
plain expression bit for bit; IRLS lowers the row l1 errors of a least-squares start."""

import numpy as np
import pytest

from softrank.fastpath.float64 import row_l1
from softrank.fastpath.upper.l1_fit import WeightedGrams, irls_rows, least_squares_rows, regularise


@pytest.mark.parametrize("k", [1, 3, 23, 24, 40])
def test_regularise_is_the_plain_expression_bit_for_bit(k):
    rng = np.random.default_rng(k)
    Y = rng.normal(size=(60, k))
    G = WeightedGrams(Y)(rng.random((7, 60)) * 10.0 ** rng.integers(-6, 6, size=(7, 1)))
    G[0] *= 1e-310  # subnormal entries: the 1e-300 term matters there
    tr = np.einsum("ijj->i", G)[:, None, None]
    expected = G + ((1e-12 * np.eye(k)[None]) * tr + 1e-300)  # as irls_rows wrote it
    expected_y = G + (1e-12 * tr * np.eye(k)[None] + 1e-300)  # as the Y-step of alternating l1 wrote it
    got = G.copy()
    regularise(got)
    assert np.array_equal(got, expected) and np.array_equal(got, expected_y)


def test_regularise_keeps_the_nans_of_an_infinite_trace():
    G = np.ones((2, 3, 3))
    G[1, 0, 0] = np.inf
    expected = G + (1e-12 * np.einsum("ijj->i", G)[:, None, None] * np.eye(3)[None] + 1e-300)
    regularise(G)
    assert np.array_equal(G, expected, equal_nan=True)


def test_irls_lowers_the_row_l1_errors():
    rng = np.random.default_rng(5)
    A = rng.dirichlet(np.full(40, 0.3), size=30)
    Y = np.linalg.svd(A)[2][:6].T
    X0 = least_squares_rows(A, Y)
    X = irls_rows(A, Y, X0)
    assert row_l1(A, X, Y).sum() < row_l1(A, X0, Y).sum()
