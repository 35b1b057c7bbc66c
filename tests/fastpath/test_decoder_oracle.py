"""The set oracle of decoder search (``fastpath/lower/decoder_oracle.py``): brackets of the critical
tolerance eps*(S) of a row set, checked against the decoder LP; brackets implied by subsets and
supersets; the screen of a large set by a small subset, run at the tolerance asked."""

from __future__ import annotations

import numpy as np
import pytest

from softrank.fastpath.float64 import MARGIN, decoder_value, rowsoftmax64
from softrank.fastpath.lower import decoder_oracle as do
from softrank.fastpath.lower.decoder import decoder_lp
from softrank.fastpath.operator_cache import OperatorCache


def attention(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((n, 6)), rng.standard_normal((n, 6))
    return rowsoftmax64(2.5 * Q @ K.T / np.sqrt(6))


@pytest.fixture(scope="module")
def A():
    return attention(48, 3)


def test_the_bracket_holds_eps_star_as_the_decoder_lp_sees_it(A):
    oracle = do.SetOracle(A)
    rows = np.array([0, 5, 9, 17, 30, 41])
    b = oracle.bracket(rows)
    assert 0 <= b.lb <= b.ub <= b.lb + 1e-4  # a complete LP: the bracket is tight
    assert do.margin_of(A[rows], b.D) == pytest.approx(b.lb)
    op = OperatorCache(A)
    below, above = b.lb - 0.02, b.ub + 0.02
    assert decoder_lp(op, rows, below)[0] <= 1 - MARGIN  # a decoder below eps* ...
    assert decoder_lp(op, rows, above)[0] > 1 - MARGIN  # ... none above it
    v, W = oracle.decide(rows, below)
    assert v == decoder_value(A, rows, W, below) <= 1 - MARGIN
    assert oracle.decide(rows, above) == (np.inf, None)


def test_a_subsets_bracket_bounds_a_supersets_from_above(A):
    oracle = do.SetOracle(A)
    small, big = np.array([2, 7, 11]), np.array([2, 7, 11, 19, 23, 35, 40])
    b_small = oracle.bracket(small)
    b_big = oracle.bracket(big)
    assert b_big.ub <= b_small.ub + 1e-9  # eps* falls as rows are added
    implied = oracle._implied(frozenset(big.tolist()) | {44}, np.append(big, 44))
    assert implied.ub <= b_big.ub and implied.lb == 0.0


def test_the_screen_of_a_large_set_stops_once_its_subset_decides_the_tolerance(A):
    rows = np.array([1, 4, 8, 13, 21, 26, 33, 38, 45])
    eps = 0.9  # far above a small subset's eps*: its first, early-stopped LP decides it
    oracle = do.SetOracle(A)
    oracle._screen(rows, eps)
    (key, b), = oracle.known.items()
    assert len(key) == do.SCREEN_ROWS + 1 and b.ub <= eps and b.stage == 1
    assert oracle.lp_solves == 1
    whole = do.SetOracle(A)
    got = whole.bracket(rows, eps)
    assert got.ub <= eps and got.stage == 0  # decided by the screen alone, no LP on the set itself
