"""The one door from binary64 into rationals, rational parsing, and exact matrix helpers."""

from __future__ import annotations

import math
from fractions import Fraction as F

import pytest
from flint import fmpq, fmpq_mat

from softrank.errors import InputError
from softrank.exact.rational import (
    ONE, TEXT_BITS, ZERO, TooLongForText, as_matrix, dot, fmt, fmt_mat, from_binary64, inf_norm, matmul, matvec,
    parse_rational, parse_vec, rank, rank_factor, row_l1, sub, to_fmpq_mat, transpose,
)


def test_door_is_exact_and_rejects_non_finite():
    assert from_binary64(0.1) == F(3602879701896397, 36028797018963968)
    assert from_binary64(-2.5) == F(-5, 2)
    assert from_binary64(5e-324) == F(1, 2 ** 1074)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(InputError):
            from_binary64(bad)
    with pytest.raises(InputError):
        from_binary64(1)  # only floats go through the door


@pytest.mark.parametrize("text,value", [
    ("3/7", F(3, 7)), ("-2", F(-2)), ("0.25", F(1, 4)), ("1e-3", F(1, 1000)), (" 6 / 4 ", F(3, 2)),
    ("+.5", F(1, 2)), ("0.1", F(1, 10)),
])
def test_parse_rational_text(text, value):
    assert parse_rational(text) == value


@pytest.mark.parametrize("bad", ["nan", "inf", "x", "1/0", "", "1/-2", True, None, [1], "0x10", "1/2/3"])
def test_parse_rational_rejects(bad):
    with pytest.raises(InputError):
        parse_rational(bad)


def test_parse_rational_other_types():
    assert parse_rational(7) == 7
    assert parse_rational(fmpq(3, 9)) == F(1, 3)
    assert parse_rational(0.5) == F(1, 2)  # binary64 through the door


def test_as_matrix_validates_shape():
    assert as_matrix([[1, "1/2"], ["0.5", 0]]) == [[1, F(1, 2)], [F(1, 2), 0]]
    for bad in ([], [[]], [[1, 2], [3]], [[1], [2, 3]], "abc", [[1], 2]):
        with pytest.raises(InputError):
            as_matrix(bad)
    M = fmpq_mat(2, 2, [1, 2, 3, fmpq(1, 2)])
    assert as_matrix(M) == [[1, 2], [3, F(1, 2)]]


def test_norm_rank_and_factor():
    A = [[F(1), F(-2), F(3)], [F(2), F(-4), F(6)], [F(0), F(1), F(1)]]
    assert inf_norm(A) == 12
    assert rank(A) == 2
    X, Y = rank_factor(A)
    assert len(X[0]) == 2 and matmul(X, transpose(Y)) == A
    Z = [[F(0)] * 3 for _ in range(2)]
    X, Y = rank_factor(Z)
    assert rank(Z) == 0 and all(r == [] for r in X) and all(r == [] for r in Y)


def test_fmt():
    assert fmt(F(6, 4)) == "3/2" and fmt(F(-4, 2)) == "-2"


def test_fmt_refuses_only_beyond_the_text_limit():
    assert TEXT_BITS == 13_000  # the documented limit (about 3,900 digits), written out below
    edge = F(2 ** 13_000 - 1, 7)  # numerator of exactly 13,000 bits (7 does not divide it): still text
    assert fmt(edge) == f"{2 ** 13_000 - 1}/7" and fmt(1 / edge) == f"7/{2 ** 13_000 - 1}"
    for too_long in (F(2 ** 13_000), F(1, 2 ** 13_000)):
        with pytest.raises(TooLongForText, match="about 3,900 digits"):
            fmt(too_long)
    assert fmt_mat([[F(1, 2), F(-3)]]) == [["1/2", "-3"]]


def test_exact_helpers_on_small_matrices():
    A = [[F(1, 2), F(-3)], [F(2), F(1, 3)]]
    assert matvec(A, [F(2), F(1)]) == [F(-2), F(13, 3)]
    assert dot([F(1, 2), F(3)], [F(4), F(-1, 3)]) == 1
    assert matmul(A, [[F(2)], [F(1)]]) == [[F(-2)], [F(13, 3)]]
    assert sub(A, A) == [[0, 0], [0, 0]] and row_l1(A[0]) == F(7, 2) and inf_norm(A) == F(7, 2)
    assert transpose(A) == [[F(1, 2), F(2)], [F(-3), F(1, 3)]]
    # empty factors: the product has A's rows and B's columns, all zero
    assert matmul([[F(1)], [F(2)]], [[]]) == [[], []]
    assert matmul([[], []], []) == [[], []]
    assert to_fmpq_mat([]).nrows() == 0 and to_fmpq_mat([[F(1, 2), F(3)]]).ncols() == 2


def test_parse_vec_and_long_text_in_errors():
    assert parse_vec(["1/2", 3, 0.5]) == [F(1, 2), F(3), F(1, 2)]
    assert parse_vec(("1",)) == [F(1)]
    with pytest.raises(InputError, match="expected a list"):
        parse_vec("1/2")
    with pytest.raises(InputError) as err:
        parse_rational("x" * 200)
    assert str(err.value).endswith(repr("x" * 57) + "...") and "x" * 58 not in str(err.value)
    with pytest.raises(InputError) as err:
        parse_rational("y" * 60)
    assert repr("y" * 60) in str(err.value)
    with pytest.raises(InputError) as err:
        parse_rational("abc")
    assert str(err.value).endswith(repr("abc"))  # short text whole, no "..."


def test_the_shared_exact_constants():
    assert ZERO == 0 and ONE == 1 and type(ZERO) is type(ONE) is F


def test_rank_factor_of_one_row_and_one_column():
    for A in ([[F(2), F(-1), F(1, 2)]], [[F(1)], [F(3)], [F(0)]]):
        X, Y = rank_factor(A)
        assert len(X[0]) == rank(A) == 1 and matmul(X, transpose(Y)) == A
