"""The producer of kind-``subspace`` certificates (fastpath/subspace.py): normalised bases, covers,
coordinate LPs against a brute-force minimum, duals whose float64 margin matches the checker's,
and certificates the replay rule proves."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from helpers import rowsoftmax_float, softmax_enclosure_of
from softrank.fastpath import subspace as sub
from softrank.replay.record import LowerCertificate
from softrank.replay.rules import Claim, check_lower_certificate


@pytest.mark.parametrize("seed", range(5))
def test_pivot_basis_is_the_identity_on_its_pivots_and_spans_the_same_space(seed):
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(30, 6))
    W, pivots = sub.pivot_basis(basis)
    assert W.shape == (30, 6) and np.array_equal(W[pivots], np.eye(6)) and np.all(np.diff(pivots) > 0)
    # same column space: projecting W on range(basis) changes nothing
    q, _ = np.linalg.qr(basis)
    assert np.allclose(q @ (q.T @ W), W, atol=1e-10)
    assert np.abs(W).max() <= 1 + 1e-9  # max-volume pivots


def test_the_cover_is_the_pivots_and_the_rows_above_l1_norm_one():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.4], [0.7, 0.6], [0.2, -0.9]])
    assert sub.needs_cover(W, np.array([0, 1])).tolist() == [0, 1, 3, 4]


def _brute_min(A, W, k):
    """min ||A W x||_inf over x with (W x)_k = 1, ||W x||_inf <= 1, for p = 2: W_k x = 1 leaves
    one free parameter, scanned on a fine grid."""
    wk = W[k]
    free = np.array([-wk[1], wk[0]])
    x = wk / (wk @ wk) + np.linspace(-5, 5, 400001)[:, None] * free[None]
    y = x @ W.T
    ok = np.abs(y).max(axis=1) <= 1 + 1e-12
    return np.abs(y[ok] @ A.T).max(axis=1).min()


@pytest.mark.parametrize("seed", range(3))
def test_coordinate_bound_is_the_least_ratio_and_its_duals_certify_it(seed):
    rng = np.random.default_rng(seed)
    A = rowsoftmax_float(rng.normal(size=(7, 7)) * 2)
    W, pivots = sub.pivot_basis(rng.normal(size=(7, 2)))
    for k in sub.needs_cover(W, pivots).tolist():
        value, u, v = sub.coordinate_bound(A @ W, W, k)
        brute = _brute_min(A, W, k)  # a grid point: at least the minimum, and close to it
        assert brute - 1e-4 <= value <= brute + 1e-12
        # weak duality: num_k / den_k is a lower bound, and at the optimum it is the value
        g = W.T @ (A.T @ u - v)
        num = v[k] - (np.abs(v).sum() - abs(v[k])) - np.abs(g).sum()
        assert num / np.abs(u).sum() == pytest.approx(value, rel=1e-7)
        assert sub.dual_margin(A, W, k, u, v, 0.1) == pytest.approx(num - 0.1 * np.abs(u).sum())


def test_an_infeasible_box_gives_an_infinite_bound_with_a_positive_numerator():
    # y = (x, 3x): y_0 = 1 forces y_1 = 3, outside the box
    W = np.array([[1.0], [3.0]])
    A = np.full((2, 2), 1 / 2)
    value, u, v = sub.coordinate_bound(A @ W, W, 0)
    assert value == np.inf and not u.any()
    g = W.T @ (-v)
    assert v[0] - (np.abs(v).sum() - abs(v[0])) - np.abs(g).sum() > 0


def _claim(A, h, eps, cert):
    rec = cert.as_record()
    data = {k: rec[k] for k in ("W", "pivots", "cover", "u", "v")}
    return Claim(enclosure=softmax_enclosure_of(h), chi=None, eps=eps, strict=False, shape=A.shape, a_hat=A,
                 cert=LowerCertificate(kind="subspace", lower=cert.lower, data=data))


def test_a_nearly_diagonal_operator_gets_its_full_rank_and_the_rule_proves_it():
    h = np.eye(8) * 6.0
    A = rowsoftmax_float(h)
    cert = sub.subspace_certificate(A, np.eye(8), 0.25)
    assert cert is not None and cert.lower == 8 and cert.margin > 0
    assert check_lower_certificate(_claim(A, h, Fraction(1, 4), cert)).proved
    # a tolerance the subspace does not beat: the producer declines
    diag = A[0, 0] - (1 - A[0, 0])
    assert sub.subspace_certificate(A, np.eye(8), float(diag) + 0.01) is None


def test_svd_search_finds_the_largest_expanding_leading_subspace():
    rng = np.random.default_rng(4)
    h = rng.normal(size=(24, 24)) * 3
    A = rowsoftmax_float(h)
    vt = np.linalg.svd(A)[2]
    cert = sub.svd_subspace_search(A, 0.25, 1, 24, vt=vt)
    assert cert is not None and cert.lower >= 2
    assert check_lower_certificate(_claim(A, h, Fraction(1, 4), cert)).proved
    # the next dimension does not expand by the producer's margin
    if cert.lower < 24:
        assert sub.subspace_certificate(A, vt[:cert.lower + 1].T, 0.25) is None


def test_the_deadline_stops_the_search():
    A = rowsoftmax_float(np.eye(6) * 5)
    assert sub.subspace_certificate(A, np.eye(6), 0.25, deadline=0.0) is None
