"""oracle/decoder_checks.py against proofs/lemma_D_contractive_decoder.md and docs/oracle.md
("decoder"): ``lemma_d_sum`` and ``decoder_value`` pinned to exact values worked by hand
(||A_S W - I_p||_inf + eps max_j ||W_j||_1), and ``check_decoder`` at each boundary: the sum
equal to 1 refused and just below accepted, p = k refused and p = k + 1 accepted, p = m
accepted, rows repeated, negative or equal to m refused, W of the wrong shape refused.  Written
for the surviving mutants of the cosmic-ray campaign over oracle/decoder_checks.py."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from softrank.oracle.checks import recheck
from softrank.oracle.decoder_checks import check_decoder, decoder_value, lemma_d_sum

# 3 x 2 cell; rows S = (1, 0) give A_S = [[1/4, 1], [1, 1/4]].
A = [[F(1), F(1, 4)], [F(1, 4), F(1)], [F(0), F(1, 2)]]
# W = [[1/2, 1], [1, 0]] (N = 2 rows of p = 2):
# A_S W row 0 = (1/4 * 1/2 + 1 * 1, 1/4 * 1 + 1 * 0) = (9/8, 1/4); minus e_0: (1/8, 1/4), l1 3/8
# A_S W row 1 = (1 * 1/2 + 1/4 * 1, 1 * 1 + 0) = (3/4, 1);        minus e_1: (3/4, 0),  l1 3/4
# residual 3/4; ||W_0||_1 = 3/2, ||W_1||_1 = 1: max 3/2.  Sum 3/4 + (3/2) eps.
W = [["1/2", "1"], ["1", "0"]]
WF = [[F(1, 2), F(1)], [F(1), F(0)]]


def cert(rows=(1, 0), w=W):
    return {"kind": "decoder", "rows": list(rows), "W": w}


def test_lemma_d_sum():
    assert lemma_d_sum(F(1, 3), F(1, 5), F(5, 2)) == F(1, 3) + F(1, 2)
    assert lemma_d_sum(F(3, 4), F(1, 6), F(3, 2)) == F(1)
    assert lemma_d_sum(F(0), F(2), F(3)) == F(6)
    assert lemma_d_sum(F(1, 2), F(0), F(7)) == F(1, 2)


def test_decoder_value_by_hand():
    assert decoder_value(A, F(0), [1, 0], WF) == F(3, 4)
    assert decoder_value(A, F(1, 6), [1, 0], WF) == F(1)
    assert decoder_value(A, F(1, 10), [1, 0], WF) == F(3, 4) + F(3, 20)


def test_decoder_value_row_order_matters():
    # S = (0, 1): A_S = [[1, 1/4], [1/4, 1]]; A_S W row 0 = (1/2 + 1/4, 1) = (3/4, 1),
    # minus e_0: (-1/4, 1), l1 5/4; row 1 = (1/8 + 1, 1/4) = (9/8, 1/4), minus e_1: (9/8, -3/4),
    # l1 15/8.  Residual 15/8.
    assert decoder_value(A, F(0), [0, 1], WF) == F(15, 8)


def test_decoder_value_identity_is_subtracted_on_the_diagonal():
    # A_S = I_2 (rows of the identity), W = I: residual 0; W = 2 I: A_S W - I = I: residual 1.
    I2 = [[F(1), F(0)], [F(0), F(1)]]
    assert decoder_value(I2, F(1, 3), [0, 1], I2) == F(1, 3)
    assert decoder_value(I2, F(1, 3), [0, 1], [[F(2), F(0)], [F(0), F(2)]]) == F(1) + F(2, 3)
    # W = [[0, 1], [1, 0]] on A_S = I: A_S W - I = [[-1, 1], [1, -1]]: residual 2; norm 1.
    assert decoder_value(I2, F(0), [0, 1], [[F(0), F(1)], [F(1), F(0)]]) == F(2)


def test_decoder_value_one_row():
    # p = 1: A_S = [a_2] = [0, 1/2], W = [[1], [3]] (N = 2 rows of 1): A_S W = 3/2, minus 1: 1/2;
    # ||W_j||_1 = 1, 3: max 3.  Sum 1/2 + 3 eps.
    assert decoder_value(A, F(1, 10), [2], [[F(1)], [F(3)]]) == F(1, 2) + F(3, 10)


# ------------------------------------------------------------------ check_decoder


def test_sum_below_one_is_accepted_equal_to_one_refused():
    assert check_decoder(A, F(1, 10), cert(), 1, "unrestricted") is True
    assert check_decoder(A, F(1, 6), cert(), 1, "unrestricted") is False
    assert check_decoder(A, F(1, 6) - F(1, 10 ** 6), cert(), 1, "unrestricted") is True
    assert recheck(A, F(1, 10), 1, "unrestricted", "impossible", cert())
    assert recheck(A, F(1, 10), 1, "stochastic", "impossible", cert())


def test_rank_must_be_below_p():
    # p = 2: k = 0, 1 accepted, k = 2 refused.
    assert check_decoder(A, F(1, 10), cert(), 0, "unrestricted") is True
    assert check_decoder(A, F(1, 10), cert(), 2, "unrestricted") is False


def test_p_equal_to_m_is_accepted():
    # 2 x 2: S = (1, 0) of A[:2]; same numbers as above.
    assert check_decoder(A[:2], F(1, 10), cert(), 1, "unrestricted") is True


def test_one_row_decoder():
    # S = (2,), W = [[1], [1]]: A_S W = 1/2, residual 1/2, norm 1: 1/2 + eps.
    c = cert((2,), [["1"], ["1"]])
    assert check_decoder(A, F(1, 4), c, 0, "unrestricted") is True
    assert check_decoder(A, F(1, 2), c, 0, "unrestricted") is False
    assert check_decoder(A, F(1, 4), c, 1, "unrestricted") is False


def test_row_zero_and_last_row_are_in_range():
    # S = (0,), W = [[1], [0]]: A_S W = 1, residual 0, norm 1: eps < 1 accepted.
    assert check_decoder(A, F(1, 2), cert((0,), [["1"], ["0"]]), 0, "unrestricted") is True
    # S = (2,), W = [[0], [2]]: A_S W = 1: residual 0, norm 2: 2 eps < 1.
    assert check_decoder(A, F(1, 4), cert((2,), [["0"], ["2"]]), 0, "unrestricted") is True


@pytest.mark.parametrize("rows", [(3,), (-1,), (0, 3), (-3, 1), (1, -1)])
def test_rows_out_of_range_are_refused(rows):
    # -1 / -3 index rows 2 / 0 in Python; 3 is past the last row.  eps negative makes the sum
    # small whatever the rows (so only the index rule can refuse).
    W1 = [["1"] * len(rows)] * 2
    assert check_decoder(A, F(-10), cert(rows, W1), 0, "unrestricted") is False


def test_repeated_rows_are_refused():
    # S = (0, 0): with eps negative the Lemma D sum is below 1 for a large W, but a row twice
    # is not p distinct rows.
    W2 = [["1", "1"], ["1", "1"]]
    assert check_decoder(A, F(-10), cert((0, 0), W2), 1, "unrestricted") is False
    assert check_decoder(A, F(-10), cert((0, 1), W2), 1, "unrestricted") is True  # the same, distinct


def test_more_rows_than_the_cell_has_are_refused():
    assert check_decoder(A[:1], F(-10), cert((0, 0), [["1", "1"], ["1", "1"]]), 0, "unrestricted") is False


def test_empty_rows_are_refused():
    assert check_decoder(A, F(1, 10), cert((), [[], []]), 0, "unrestricted") is False


@pytest.mark.parametrize("w", [[["1/2", "1"]], [["1/2", "1"], ["1", "0"], ["0", "0"]], [["1/2"], ["1"]],
                               [["1/2", "1", "0"], ["1", "0", "0"]]])
def test_w_of_the_wrong_shape_raises_and_is_refused(w):
    with pytest.raises(ValueError):
        check_decoder(A, F(1, 10), cert(w=w), 1, "unrestricted")
    assert not recheck(A, F(1, 10), 1, "unrestricted", "impossible", cert(w=w))


@pytest.mark.parametrize("rows", ["10", [1.0, 0], [True, False], ["1", "0"]])
def test_rows_must_be_json_integers(rows):
    assert not recheck(A, F(1, 10), 1, "unrestricted", "impossible", {"kind": "decoder", "rows": rows, "W": W})


def test_a_sum_above_one_is_refused():
    # 3/4 + (3/2) eps: 9/4 at eps = 1, 3/4 + 3/4 = 3/2 at eps = 1/2.
    assert check_decoder(A, F(1), cert(), 1, "unrestricted") is False
    assert check_decoder(A, F(1, 2), cert(), 1, "unrestricted") is False


def test_rank_above_p_is_refused():
    # p = 2 proves nothing at k = 3 (nor at any k >= 2), in a 4-row cell too.
    A4 = A + [[F(1, 3), F(1, 3)]]
    for k in (2, 3, 5):
        assert check_decoder(A4, F(1, 10), cert(), k, "unrestricted") is False
    assert check_decoder(A4, F(1, 10), cert(), 1, "unrestricted") is True


@pytest.mark.parametrize("rows", [(5,), (0, 4), (9, 1)])
def test_rows_past_m_are_refused_without_raising(rows):
    W1 = [["1"] * len(rows)] * 2
    assert check_decoder(A, F(-10), cert(rows, W1), 0, "unrestricted") is False


def test_a_decoder_of_many_rows():
    # I_260 with S = all rows and W = I: A_S W - I = 0, ||W_j||_1 = 1: the sum is eps.  Indices
    # and counts past CPython's small-int cache (256) must be compared by value.
    n = 260
    I = [[F(int(i == j)) for j in range(n)] for i in range(n)]
    W_I = [[int(i == j) for j in range(n)] for i in range(n)]
    assert check_decoder(I, F(1, 2), {"rows": list(range(n)), "W": W_I}, n - 1, "unrestricted") is True
