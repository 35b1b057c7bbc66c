"""oracle/check_basics.py against its docstrings and docs/oracle.md ("Certificates"): a rational
is an int, a Fraction or a bounded text (at most MAX_TEXT = 10,000 characters, an exponent of at
most three digits), never a bool or a float; an integer is a JSON integer (an int, not a bool),
a list of integers a list or tuple of them; vectors and matrices have the lengths asked for; and
``l1``, ``dot`` and ``simplex_distance`` are pinned on hand-worked exact values.  Each test pins
one boundary (a text of exactly MAX_TEXT characters and one more, a vector one too long and one
too short, a distance at a sign boundary).  Written for the surviving mutants of the cosmic-ray
campaign over oracle/check_basics.py."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from softrank.oracle.check_basics import MAX_TEXT, as_int, as_ints, as_matrix, as_rational, as_vector, dot, l1, simplex_distance

# ------------------------------------------------------------------ as_rational


@pytest.mark.parametrize("x,want", [(3, F(3)), (0, F(0)), (-7, F(-7)), (F(2, 3), F(2, 3)), ("3/7", F(3, 7)),
                                    ("0.25", F(1, 4)), ("1e-3", F(1, 1000)), (" -2 ", F(-2)), ("+.5", F(1, 2)),
                                    ("1E+2", F(100)), ("-5/10", F(-1, 2)), ("2.", F(2))])
def test_as_rational_reads_ints_fractions_and_bounded_text(x, want):
    got = as_rational(x)
    assert got == want and type(got) is F


@pytest.mark.parametrize("x", [True, False])
def test_as_rational_refuses_bools(x):
    with pytest.raises(TypeError):
        as_rational(x)


@pytest.mark.parametrize("x", [1.5, 0.0, None, [1], {"1": 1}, b"1", complex(1, 0)])
def test_as_rational_refuses_other_types(x):
    with pytest.raises(TypeError):
        as_rational(x)


@pytest.mark.parametrize("x", ["1e-9999", "1e1000", "", "abc", "1/2/3", "nan", "inf", "0x10", "1_000", "١"])
def test_as_rational_refuses_other_text(x):
    with pytest.raises(ValueError):
        as_rational(x)


def test_as_rational_three_digit_exponent_is_read():
    assert as_rational("1e-999") == F(1, 10 ** 999)
    assert as_rational("2e100") == F(2 * 10 ** 100)


def test_text_of_exactly_max_text_characters_is_read_one_more_refused():
    assert MAX_TEXT == 10_000
    exact = " " * (MAX_TEXT - 1) + "7"
    assert len(exact) == MAX_TEXT and as_rational(exact) == F(7)
    over = " " * MAX_TEXT + "7"
    with pytest.raises(ValueError):
        as_rational(over)
    assert as_rational("3/4" + " " * (MAX_TEXT - 3)) == F(3, 4)
    with pytest.raises(ValueError):
        as_rational("3/4" + " " * (MAX_TEXT - 2))


# ------------------------------------------------------------------ as_int / as_ints


def test_as_int_returns_ints_unchanged():
    for x in (0, 1, -1, 12, 10 ** 30):
        got = as_int(x)
        assert got == x and type(got) is int


@pytest.mark.parametrize("x", [True, False, 1.0, 1.5, "2", None, [1], {"a": 1}, F(1)])
def test_as_int_refuses_everything_else(x):
    with pytest.raises(ValueError):
        as_int(x)


def test_as_ints_reads_lists_and_tuples():
    assert as_ints([2, 0, -1]) == [2, 0, -1]
    assert as_ints((1, 3)) == [1, 3]
    assert as_ints([]) == []
    assert isinstance(as_ints((1,)), list)


@pytest.mark.parametrize("items", ["12", {1: 2}, 3, None, {1, 2}, b"\x01"])
def test_as_ints_refuses_non_lists(items):
    with pytest.raises(ValueError):
        as_ints(items)


@pytest.mark.parametrize("items", [[1, True], [1.0], ["1"], [[1]]])
def test_as_ints_refuses_non_integer_items(items):
    with pytest.raises(ValueError):
        as_ints(items)


# ------------------------------------------------------------------ as_vector / as_matrix


def test_as_vector_without_length_takes_any_length():
    assert as_vector([]) == []
    assert as_vector(["1/2", 3]) == [F(1, 2), F(3)]


def test_as_vector_with_length():
    assert as_vector(["1/2", 3], 2) == [F(1, 2), F(3)]
    assert as_vector([], 0) == []
    for v, n in ((["1"], 2), (["1", "2", "3"], 2), (["1"], 0), ([], 1)):
        with pytest.raises(ValueError):
            as_vector(v, n)


def test_as_matrix_shapes():
    M = [["1", "2"], ["3/4", 0]]
    want = [[F(1), F(2)], [F(3, 4), F(0)]]
    assert as_matrix(M) == want
    assert as_matrix(M, rows=2) == want
    assert as_matrix(M, cols=2) == want
    assert as_matrix(M, rows=2, cols=2) == want
    assert as_matrix([["1"], ["2", "3"]]) == [[F(1)], [F(2), F(3)]]  # ragged when no cols asked
    assert as_matrix([], rows=0) == []
    for kw in ({"rows": 1}, {"rows": 3}, {"cols": 1}, {"cols": 3}, {"rows": 2, "cols": 3}, {"rows": 3, "cols": 2}):
        with pytest.raises(ValueError):
            as_matrix(M, **kw)


def test_as_matrix_refuses_bad_entries():
    with pytest.raises(TypeError):
        as_matrix([[True]])
    with pytest.raises(ValueError):
        as_matrix([["1e1234"]])


# ------------------------------------------------------------------ l1 / dot / simplex_distance


def test_l1():
    assert l1([F(-1, 2), F(3), F(0), F(-1, 4)]) == F(15, 4)
    assert l1([]) == 0 and type(l1([])) is F
    assert l1([F(-2)]) == F(2)


def test_dot():
    # (1/2)(4) + (-3)(1/3) = 2 - 1 = 1
    assert dot([F(1, 2), F(-3)], [F(4), F(1, 3)]) == F(1)
    assert dot([F(2), F(3), F(5)], [F(7), F(11), F(13)]) == F(14 + 33 + 65)
    assert dot([], []) == 0 and type(dot([], [])) is F


@pytest.mark.parametrize("a,want", [
    ([F(1, 2), F(1, 2)], F(0)),                     # a probability vector
    ([F(1), F(0), F(0)], F(0)),
    ([F(1, 4), F(1, 4)], F(1, 2)),                   # P = 1/2: mass 1/2 missing
    ([F(3, 4), F(-1, 4), F(1, 2)], F(1, 2)),         # P = 5/4, Q = 1/4: 1/4 + 1/4
    ([F(1), F(-1, 2)], F(1, 2)),                     # P = 1, Q = 1/2
    ([F(-1), F(-2)], F(4)),                          # P = 0, Q = 3: 1 + 3
    ([F(0), F(0)], F(1)),                            # the zero vector: 1 from any probability vector
    ([F(3), F(0), F(-1, 3)], F(7, 3)),               # P = 3, Q = 1/3: 2 + 1/3
])
def test_simplex_distance(a, want):
    assert simplex_distance(a) == want


def test_simplex_distance_is_the_l1_distance_to_the_nearest_probability_vector():
    # a = (3/4, -1/4, 1/2): the probability vector (1/2, 0, 1/2) is at l1 distance
    # 1/4 + 1/4 + 0 = 1/2, and no probability vector is nearer (the sum changes by 1/4 and the
    # negative entry costs 1/4): the formula's value.
    a = [F(3, 4), F(-1, 4), F(1, 2)]
    p = [F(1, 2), F(0), F(1, 2)]
    assert l1([x - y for x, y in zip(a, p)]) == simplex_distance(a) == F(1, 2)


def test_long_vectors_and_tall_matrices_compare_lengths_by_value():
    # 300 is past CPython's small-int cache: lengths must be compared by value.
    n = 300
    assert as_vector(["1/3"] * n, n) == [F(1, 3)] * n
    assert as_matrix([["1"]] * n, rows=n, cols=1) == [[F(1)]] * n
    assert as_matrix([["1"] * n], rows=1, cols=n) == [[F(1)] * n]
    with pytest.raises(ValueError):
        as_vector(["1"] * n, n + 1)
    with pytest.raises(ValueError):
        as_matrix([["1"]] * n, rows=n - 1)
