"""The structured interior-point method of the set oracle (``fastpath/lower/decoder_ipm.py``):
its normal equations against the sparse product, its optimum against HiGHS on the same LP, and
the bounds of an early-stopped iterate."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.lower import decoder_ipm as ipm
from softrank.fastpath.lower import decoder_oracle as do


def rows_of_attention(p: int, c: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((p, 5)), rng.standard_normal((c, 5))
    return rowsoftmax64(2.0 * Q @ K.T / np.sqrt(5))


def bracket(M: np.ndarray, D: np.ndarray, Ys) -> tuple[float, float]:
    return do.margin_of(M, D), min([do.dual_bound(M, Y) for Y in Ys] + [1.0])


@pytest.mark.parametrize("p,c", [(3, 7), (5, 12), (6, 30)])
def test_the_normal_solver_solves_the_normal_equations(p, c):
    st = ipm._Structure(rows_of_attention(p, c, p + c))
    theta = np.random.default_rng(1).uniform(0.1, 3.0, st.n)
    r = np.random.default_rng(2).standard_normal(st.A.shape[0])
    y = st.normal_solver(theta)(r)
    N = (st.A @ st.A.T.multiply(theta[:, None]).tocsc()).toarray()
    assert np.allclose(N @ y, r, atol=1e-8 * np.abs(r).max())
    assert np.allclose(y, spla.spsolve((st.A @ st.A.T.multiply(theta[:, None])).tocsc(), r), atol=1e-7)


def test_the_standard_form_is_the_eps_star_lp():
    """A feasible D of the oracle's LP, with its P, R and slacks, satisfies A x = b."""
    M = rows_of_attention(4, 9, 5)
    st = ipm._Structure(M)
    D = do.eps_star_highs(M)[0]
    D /= np.abs(D).sum(axis=1).max()  # every row's l1 norm <= 1
    P = M @ D
    margin = np.diag(P) - (np.abs(P).sum(axis=1) - np.abs(np.diag(P)))
    z = float(margin.min())
    assert z > 0.1
    off = ~np.eye(4, dtype=bool)
    x = np.zeros(st.n)
    x[:st.nD], x[st.nD:2 * st.nD] = np.maximum(D, 0).ravel(), np.maximum(-D, 0).ravel()
    x[st.oR:st.oR + st.no], x[st.oR + st.no:st.oz] = np.maximum(P[off], 0), np.maximum(-P[off], 0)
    x[st.oz] = z
    x[st.os:st.ot] = margin - x[st.oz]
    x[st.ot:] = 1.0 - np.abs(D).sum(axis=1)
    assert x.min() >= -1e-12
    assert np.allclose(st.A @ x, st.b, atol=1e-12)
    assert st.cost @ x == -x[st.oz]


@pytest.mark.parametrize("p,c,seed", [(2, 40, 0), (5, 40, 1), (9, 64, 2), (12, 96, 3)])
def test_the_complete_run_reaches_the_highs_optimum(p, c, seed):
    M = rows_of_attention(p, c, seed)
    lb_h, ub_h = bracket(M, *do.eps_star_highs(M))
    lb, ub = bracket(M, *do.eps_star_lp(M))
    assert ub_h - lb_h < 1e-5 and ub - lb < 1e-6  # both solved
    assert lb == pytest.approx(lb_h, abs=1e-5)


@pytest.mark.parametrize("iterations", [1, 3, 8])
def test_an_early_iterate_still_brackets_eps_star(iterations):
    M = rows_of_attention(10, 80, 7)
    exact, _ = bracket(M, *do.eps_star_highs(M))
    lb, ub = bracket(M, *do.eps_star_lp(M, iterations))
    assert lb <= exact + 1e-7 and exact - 1e-7 <= ub <= 1.0  # an iterate's D may have margin < 0
    if iterations >= 8:
        assert ub - lb < 0.05  # and it closes in: the early LP of the oracle decides most sets
    D, yP = ipm.eps_star_ipm(M, iterations)
    assert D.shape == (80, 10) and yP.shape == (10, 10)


def test_one_row_and_an_empty_column_are_solved():
    M = rows_of_attention(1, 6, 4)
    lb, ub = bracket(M, *do.eps_star_lp(M))
    assert lb == pytest.approx(1.0, abs=1e-6) and ub == pytest.approx(1.0)  # one row: D = e_j, margin 1
    M2 = rows_of_attention(4, 10, 8)
    M2[:, 3] = 0.0
    lb2, ub2 = bracket(M2, *do.eps_star_lp(M2))
    lb2_h, _ = bracket(M2, *do.eps_star_highs(M2))
    assert lb2 == pytest.approx(lb2_h, abs=1e-5) and ub2 - lb2 < 1e-6


def test_sets_above_the_size_limit_go_to_highs(monkeypatch):
    M = rows_of_attention(5, 30, 9)
    monkeypatch.setattr(do, "IPM_MAX_P", 4)
    D, Ys = do.eps_star_lp(M)
    D_h, Ys_h = do.eps_star_highs(M)
    assert np.array_equal(D, D_h) and all(np.array_equal(a, b) for a, b in zip(Ys, Ys_h))
    monkeypatch.setattr(do, "IPM_MAX_P", 5)
    assert not np.array_equal(do.eps_star_lp(M)[0], D_h)  # at the limit: the structured method
