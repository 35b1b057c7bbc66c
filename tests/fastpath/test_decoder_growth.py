"""Candidate orders and starts of decoder growth (``fastpath/lower/decoder.py``)."""

import numpy as np

from softrank.fastpath.lower import decoder as dec


def _operator(seed: int, m: int = 30, n: int = 40) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(n, 0.3), size=m)


def test_residual_order_ranks_rows_by_their_l1_part_outside_the_span_of_the_set():
    A = _operator(1)
    rows = np.array([0, 3, 7])
    A[5] = 0.5 * A[0] + 0.5 * A[3]  # in the span of the set: its residual is 0
    order = dec.residual_order(A, rows)
    assert sorted(order.tolist()) == sorted(set(range(A.shape[0])) - set(rows.tolist()))
    Q, _ = np.linalg.qr(A[rows].T)
    score = np.abs(A - A @ Q @ Q.T).sum(axis=1)
    assert np.all(np.diff(score[order]) <= 1e-15)  # decreasing
    assert order[-1] == 5


def test_bordered_start_keeps_the_old_residual_and_fits_the_new_row_and_column():
    A = _operator(2)
    rows = np.array([1, 4, 9, 12])
    W_prev = np.linalg.pinv(A[rows]) * (1 + 0.2 * np.random.default_rng(3).normal(size=(40, 4)))
    cand = np.append(rows, 20)
    W = dec.bordered_start(A[cand], W_prev)
    R_old = A[rows] @ W_prev - np.eye(4)
    R = A[cand] @ W - np.eye(5)
    assert np.allclose(R[:4, :4], R_old, atol=1e-12)  # the old rows' residual on the old columns
    assert np.allclose(R[4], 0, atol=1e-12) and np.allclose(R[:, 4], 0, atol=1e-12)


def test_grow_tries_the_lead_order_first_and_computes_it_again_after_each_added_row():
    calls, tried = [], []

    def lead(rows):
        calls.append(len(rows))
        return np.array([9, 8, 7, 6, 5])

    def fit(cand, W):
        tried.append(int(cand[-1]))
        return (0.5 if cand[-1] in (8, 6) else 2.0), W

    rows, _, _ = dec._grow([np.arange(10)], np.array([0]), None, 0.5, fit, stop_at=10, tries=8, patience=3, lead=lead)
    assert rows.tolist() == [0, 8, 6]
    assert calls[:3] == [1, 2, 3]  # the lead order again after each success
    assert tried[:4] == [9, 8, 7, 6]  # a row that failed (9) is not tried again after the set grew
    assert 9 not in tried[2:] and tried.count(7) == 1


def test_grow_without_a_lead_follows_the_orders():
    tried = []

    def fit(cand, W):
        tried.append(int(cand[-1]))
        return 0.5, W

    rows, _, _ = dec._grow([np.array([4, 2, 0, 3])], np.array([0]), None, 0.5, fit, stop_at=4, tries=10, patience=3)
    assert rows.tolist() == [0, 4, 2, 3] and tried == [4, 2, 3]
