"""The budgeted smoothed-minimax descent of the default bracket (fastpath/upper/minimax.py)."""

from __future__ import annotations

import numpy as np
import pytest

from softrank.fastpath.bracket import matrix as bm
from softrank.fastpath.float64 import MARGIN, max_row_l1, rowsoftmax64
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper import minimax
from softrank.fastpath.upper.rank_search import tsvd_scan


def attention(n: int, d: int, beta: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    return rowsoftmax64(beta * Q @ K.T / np.sqrt(d))


@pytest.fixture(scope="module")
def case():
    A = attention(40, 6, 3.0, 1)
    op = OperatorCache(A)
    w = tsvd_scan(op, [0.25])[0.25]
    return op, w


def test_descent_returns_checked_witnesses_below_the_start(case):
    op, w = case
    log = []
    best, spent = minimax.descend(op, w, 0.25, 1, 3000, log=log)
    assert best.rank < w.rank  # the truncated SVD is far from minimax-optimal on this matrix
    assert best.construction == minimax.CONSTRUCTION
    assert max_row_l1(op.A, best.X, best.Y) == best.error <= 0.25 - MARGIN
    assert best.X.dtype == best.Y.dtype == np.float64 and best.X.shape == (40, best.rank)
    assert 0 < spent <= 3000 + minimax.REFIT_ITERATIONS
    assert [k for k, ok, _ in log if ok][-1] == best.rank
    assert all(k < w.rank for k, _, _ in log)


def test_descent_never_goes_below_the_lower_end(case):
    op, w = case
    best, _ = minimax.descend(op, w, 0.25, w.rank - 1, 3000)
    assert best.rank >= w.rank - 1
    best, spent = minimax.descend(op, w, 0.25, w.rank, 3000)
    assert best is w and spent == 0


def test_budget_bounds_the_work(case):
    op, w = case
    best, spent = minimax.descend(op, w, 0.25, 1, 0)
    assert best is w and spent == 0
    log = []
    _, spent = minimax.descend(op, w, 0.25, 1, 40, log=log)
    assert spent <= 40 + minimax.REFIT_ITERATIONS
    assert sum(its for _, _, its in log) <= 40 + minimax.REFIT_ITERATIONS


def test_budget_units_grow_with_the_rank():
    A = attention(72, 40, 0.5, 3)
    op = OperatorCache(A)
    w = tsvd_scan(op, [0.05])[0.05]
    assert w.rank > minimax.WIDTH + 2
    log = []
    _, spent = minimax.descend(op, w, 0.05, 1, 200, log=log)
    units = sum(i * max(k, minimax.WIDTH) / minimax.WIDTH for k, _, i in log)
    assert spent == pytest.approx(units)  # an iteration at rank k > WIDTH counts k / WIDTH
    assert units > sum(i for _, _, i in log)
    assert spent <= 200 + minimax.REFIT_ITERATIONS * w.rank / minimax.WIDTH


def test_a_run_that_cannot_reach_its_target_stops_early():
    A = np.eye(30) * 0.9 + 0.1 / 30  # rank 1 cannot come near a small target
    X, Y = minimax.balanced_truncation(np.ones((30, 1)), np.full((30, 1), 1 / 30), 1)
    err, X1, Y1, its = minimax.minimax_run(A, X, Y, 0.01, 1500)
    assert err > 0.01 and its < 1500  # the stall stop, not the cap
    assert err == max_row_l1(A, X1, Y1)


def test_float32_runs_are_checked_in_float64(monkeypatch, case):
    op, w = case
    real = minimax.minimax_run

    def optimistic(A, X, Y, target, cap, s=minimax.DescentSettings()):
        err, X1, Y1, its = real(A, X, Y, target, cap, s)
        return err, X1 + 1e-3, Y1, its  # the factors returned no longer achieve err

    monkeypatch.setattr(minimax, "minimax_run", optimistic)
    k = w.rank - 1
    found, _ = minimax.fit_rank(op, w, k, 0.25 - MARGIN, 1500)
    if found is not None:  # only a witness whose own factors pass may come back
        assert max_row_l1(op.A, found.X, found.Y) <= 0.25 - MARGIN


def test_fit_rank_refuses_a_factorization_whose_error_is_not_a_number(monkeypatch, case):
    op, w = case
    monkeypatch.setattr(minimax, "minimax_run", lambda A, X, Y, t, cap, s=None: (float("nan"), X, Y, 5))
    found, spent = minimax.fit_rank(op, w, w.rank - 1, 0.25 - MARGIN, 100)
    assert found is None and spent == 5


def test_fast_bracket_uses_the_descent_and_basic_does_not(case):
    op, _ = case
    fast = bm.bracket_matrix(op.A, [0.25], mode="fast")[0.25]
    basic = bm.bracket_matrix(op.A, [0.25], mode="basic")[0.25]
    assert fast.upper <= basic.upper
    assert basic.witness.construction != minimax.CONSTRUCTION
    assert max_row_l1(op.A, fast.witness.X, fast.witness.Y) <= 0.25 - MARGIN
    with pytest.raises(ValueError, match="mode must be one of"):
        bm.bracket_matrix(op.A, [0.25], mode="quick")


def _plain_gradients(R, S, a, err, X, Y, b, slack, dd, mu):
    """The gradient written with plain expressions (a fresh array per operation)."""
    act = np.flatnonzero(a >= err - slack)
    Ra = R[act]
    Sa = np.sqrt(Ra * Ra + dd)
    r = Sa.sum(axis=1)
    w = np.exp((r - r.max()) / mu)
    G = (w / w.sum())[:, None] * (Ra / Sa)
    gX = np.zeros_like(X)
    gX[act] = -(G @ Y)
    b.gX[...], b.gY[...] = gX, -(G.T @ X[act])


def _plain_adam(P, g, m, v, t, lr, tmp, tmp2):
    minimax.adam_step(P, g, m, v, t, lr)


@pytest.mark.parametrize("band", [40.0, 2.0])  # every row in the gradient / some rows left out
def test_the_buffered_run_equals_the_plain_expressions_bit_for_bit(case, band, monkeypatch):
    op, w = case
    s = minimax.DescentSettings(band=band, iters=400)
    X, Y = minimax.balanced_truncation(w.X, w.Y, w.rank - 4)
    err, X1, Y1, its = minimax.minimax_run(op.A, X, Y, 0.2, 400, s)
    monkeypatch.setattr(minimax, "_gradients", _plain_gradients)
    monkeypatch.setattr(minimax, "adam_step_into", _plain_adam)
    err0, X0, Y0, its0 = minimax.minimax_run(op.A, X, Y, 0.2, 400, s)
    assert its == its0 > 50 and err == err0
    assert np.array_equal(X1, X0) and np.array_equal(Y1, Y0)


def test_runs_at_high_rank_take_the_high_rank_temperature_and_band(case):
    op, w = case
    X, Y = minimax.balanced_truncation(w.X, w.Y, w.rank - 2)
    k = X.shape[1]
    high = minimax.DescentSettings(iters=300, high_rank=k, mu_high=0.005, band_high=4.0)
    plain = minimax.DescentSettings(iters=300, high_rank=k + 1, mu=0.005, band=4.0)
    low = minimax.DescentSettings(iters=300, high_rank=k + 1)
    got = minimax.minimax_run(op.A, X, Y, 0.2, 300, high)
    assert got[3] == minimax.minimax_run(op.A, X, Y, 0.2, 300, plain)[3]
    assert np.array_equal(got[1], minimax.minimax_run(op.A, X, Y, 0.2, 300, plain)[1])
    other = minimax.minimax_run(op.A, X, Y, 0.2, 300, low)  # below high_rank: mu and band
    assert not np.array_equal(got[1], other[1])
