"""oracle/checks.py, function by function, against the rules of docs/oracle.md ("Certificates")
and the proof files each checker names.  Every expected value is derived by hand from the
documented rule on a small exact matrix (the derivation is in the comments); nothing is copied
from the checker's output.  Each test pins a boundary a certificate must not cross: eps equal to
a strict bound, a factor row of the wrong length, an index just out of range, a missing or
flipped pivot sign, the coverage budget of ``patterns_cover``, the rank limit of each kind.
Written for the surviving mutants of the cosmic-ray campaign over oracle/checks.py."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import sys
from fractions import Fraction as F

import pytest
from softrank.oracle.checks import (
    KINDS,
    check_kernel,
    check_rank1_signed,
    check_row_norm,
    check_row_simplex,
    check_zero_not_stochastic,
    check_witness,
    cokernel_bound,
    kernel_bound,
    patterns_cover,
    rank1_stochastic_bound,
    recheck,
)

Q = lambda rows: [[F(x) for x in r] for r in rows]
ID2 = Q([[1, 0], [0, 1]])
HALF_ID2 = Q([[F(1, 2), 0], [0, F(1, 2)]])  # B = 0 is within eps = 1/2: every rank is feasible
U, S = "unrestricted", "stochastic"


def s(x) -> str:
    x = F(x)
    return f"{x.numerator}/{x.denominator}"


# ---------------------------------------------------------------- witness (proofs/oracle_witness.md)

def _witness(X, Y):
    return {"kind": "witness", "X": X, "Y": Y}


def test_witness_factor_rows_must_all_have_length_r():
    """docs: X is m x r and Y is N x r.  A row of the wrong length is a malformed certificate and
    is refused, even where a lenient product would make B look fine."""
    A, eps = ID2, F(0)
    good = _witness([["1", "0"], ["0", "1"]], [["1", "0"], ["0", "1"]])
    assert recheck(A, eps, 2, U, "feasible", good)  # B = I = A exactly
    # a row of Y one entry too long (a transpose by zip would silently drop the 7)
    assert not recheck(A, eps, 2, U, "feasible", _witness([["1", "0"], ["0", "1"]], [["1", "0"], ["0", "1", "7"]]))
    # small A: B = 0 would be within eps = 1/2, but the factors are ragged
    small, e = Q([[F(1, 4), 0], [0, F(1, 4)]]), F(1, 2)
    assert recheck(small, e, 1, U, "feasible", _witness([[], []], [[], []]))  # r = 0: B = 0, fine
    # r = len(X[0]) = 0 but X's second row has an entry
    assert not recheck(small, e, 1, U, "feasible", _witness([[], ["5"]], [[], []]))
    # r = 1 but a row of Y is empty
    assert not recheck(small, e, 1, U, "feasible", _witness([["1"], ["1"]], [["1"], []]))
    # r = 1 but a row of Y has two entries
    assert not recheck(small, e, 1, U, "feasible", _witness([["0"], ["0"]], [["0"], ["0", "0"]]))


def test_check_witness_refuses_ragged_factors_with_false():
    """``check_witness`` is called directly by ``search.core.decide`` (outside ``recheck``'s
    exception guard): a ragged factor is refused with False, not a crash."""
    small, e = Q([[F(1, 4), 0], [0, F(1, 4)]]), F(1, 2)
    assert check_witness(small, e, 2, U, _witness([["1"], ["1", "2"]], [["0"], ["0"]])) is False
    assert check_witness(small, e, 2, U, _witness([["1", "0"], ["1", "0"]], [["0", "0"], ["0"]])) is False
    assert check_witness(small, e, 2, U, _witness([["1"], ["1"]], [["0"], ["0", "0"]])) is False
    assert check_witness(small, e, 2, U, _witness([["1", "0"], ["1"]], [["0", "0"], ["0", "0"]])) is False
    assert check_witness(small, e, 2, U, _witness([["0", "0"], ["0", "0"]], [["0", "0"], ["0", "0"]])) is True


def test_witness_of_rank_above_256_is_accepted():
    """The rank r is a count like any other: a 1 x 257 times 257 x 1 factorisation of A = [[1]]
    (257 * 1/257 = 1, exact) is a witness of rank 257 <= k = 257."""
    r = 257
    cert = _witness([["1"] * r], [[s(F(1, r))] * r])
    assert recheck([[F(1)]], F(0), r, U, "feasible", cert)
    assert recheck([[F(1)]], F(0), r, S, "feasible", cert)  # B = [[1]] is stochastic
    assert not recheck([[F(1)]], F(0), r - 1, U, "feasible", cert)  # r > k


def test_witness_stochastic_class_needs_unit_row_sums():
    """B = [[1/2, 0]] is within eps = 1/2 of A = [[1/2, 0]] (distance 0) and >= 0, but its row
    sum is 1/2: a witness for the unrestricted class only."""
    A, eps = Q([[F(1, 2), 0]]), F(1, 2)
    cert = _witness([["1/2"]], [["1"], ["0"]])
    assert recheck(A, eps, 1, U, "feasible", cert)
    assert not recheck(A, eps, 1, S, "feasible", cert)
    # a row sum above 1 is refused too: B = [[1, 1/2]], distance 1/2 + 1/2 = 1 <= eps = 1
    over = _witness([["1"]], [["1"], ["1/2"]])
    assert recheck(A, F(1), 1, U, "feasible", over)
    assert not recheck(A, F(1), 1, S, "feasible", over)
    # a negative entry is refused even with unit row sum: B = [[3/2, -1/2]], distance 1 + 1/2
    neg = _witness([["1"]], [["3/2"], ["-1/2"]])
    assert recheck(A, F(3, 2), 1, U, "feasible", neg)
    assert not recheck(A, F(3, 2), 1, S, "feasible", neg)
    # a stochastic B is accepted: B = [[1, 0]] at distance 1/2
    assert recheck(A, eps, 1, S, "feasible", _witness([["1"]], [["1"], ["0"]]))


def test_witness_class_read_from_json_is_compared_by_value():
    """A class name that arrives in a JSON record is an equal but distinct string object: it must
    select the stochastic check all the same."""
    klass = json.loads('"stochastic"')
    assert klass == S and klass is not sys.intern(S)
    A, eps = Q([[F(1, 2), 0]]), F(1, 2)
    cert = _witness([["1/2"]], [["1"], ["0"]])  # B = A, row sum 1/2: not stochastic
    assert not recheck(A, eps, 1, klass, "feasible", cert)
    assert recheck(A, eps, 1, klass, "feasible", _witness([["1"]], [["1"], ["0"]]))


# ---------------------------------------------------------------- k = 0 (proofs/oracle_k0.md)

def test_zero_not_stochastic_holds_for_a_single_row():
    """m >= 1 is all it needs: a one-row cell has no stochastic B of rank 0 (B = 0 has row sum 0)."""
    cert = {"kind": "zero-not-stochastic"}
    assert recheck(Q([[F(1, 2), F(1, 2)]]), F(1, 2), 0, S, "impossible", cert)
    assert recheck(Q([[1]]), F(5), 0, S, "impossible", cert)
    assert not recheck(Q([[1]]), F(5), 1, S, "impossible", cert)  # rank limit 0
    assert check_zero_not_stochastic([], F(1), cert) is False  # m = 0: nothing to refute


# ---------------------------------------------------------------- row-simplex-distance

def test_row_simplex_distance_index_and_strict_bound():
    """docs: `row` i with |P_i - 1| + Q_i > eps.  Row 1 of A is (3, 0): |3 - 1| + 0 = 2; row 0 is
    a probability vector (distance 0)."""
    A, eps = Q([[F(1, 2), F(1, 2)], [3, 0]]), F(1, 2)
    cert = lambda i: {"kind": "row-simplex-distance", "row": i}
    assert recheck(A, eps, 5, S, "impossible", cert(1))
    assert not recheck(A, eps, 5, S, "impossible", cert(-1))  # Python's A[-1] is row 1: still refused
    assert not recheck(A, eps, 5, S, "impossible", cert(2))
    assert not recheck(A, eps, 5, S, "impossible", cert(0))  # distance 0 < eps
    # distance exactly eps is not "> eps": row (3/2, 0) has |3/2 - 1| = 1/2
    B = Q([[F(1, 2), F(1, 2)], [F(3, 2), 0]])
    assert not recheck(B, F(1, 2), 5, S, "impossible", cert(1))
    assert recheck(B, F(49, 100), 5, S, "impossible", cert(1))


def test_row_index_past_the_last_row_is_refused_by_the_checkers():
    """The row checkers refuse an index outside 0 <= i < m themselves, with False."""
    A, eps = Q([[F(1, 2), F(1, 2)], [3, 0]]), F(1, 2)
    for i in (2, 3, 9, -1, -2):
        assert check_row_simplex(A, eps, {"row": i}) is False, i
        assert check_row_norm(A, eps, {"row": i}) is False, i
    assert check_row_simplex(A, eps, {"row": 1}) is True
    assert check_row_norm(A, eps, {"row": 1}) is True  # ||(3, 0)||_1 = 3 > 1/2
    assert check_row_norm(A, F(3), {"row": 1}) is False  # 3 is not > 3
    assert check_row_norm(A, F(3), {"row": 0}) is False  # 1 < 3
    assert not recheck(A, F(3), 0, U, "impossible", {"kind": "row-norm", "row": 0})
    assert recheck(A, F(2), 0, U, "impossible", {"kind": "row-norm", "row": 1})


# ---------------------------------------------------------------- rank1-signed (proofs/oracle_k1_unrestricted.md)
#
# A = I_2, eps = 1/2: both rows have l1 norm 1 > 1/2 (non-free).  C1 for tau = (+1, +1):
# lambda_0 = (1, -1), lambda_1 = (-1, 1), gamma = (1, 1): tau_0 lambda_0 + tau_1 lambda_1 = 0,
# d_0 = a_0.lambda_0 - eps = 1/2, d_1 = a_1.lambda_1 - eps = 1/2.  For tau = (+1, -1):
# lambda_0 = lambda_1 = (1, 1): lambda_0 - lambda_1 = 0, d_0 = d_1 = 1 - 1/2 = 1/2.

P_PLUS = {"rows": [0, 1], "signs": [1, 1], "lambda": [["1", "-1"], ["-1", "1"]], "gamma": ["1", "1"]}
P_MINUS = {"rows": [0, 1], "signs": [1, -1], "lambda": [["1", "1"], ["1", "1"]], "gamma": ["1", "1"]}


def _signed(patterns, rows=(0, 1)):
    return {"kind": "rank1-signed", "rows": list(rows), "patterns": copy.deepcopy(patterns)}


def test_rank1_signed_hand_certificate():
    assert recheck(ID2, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS]))
    assert recheck(ID2, F(1, 2), 0, S, "impossible", _signed([P_PLUS, P_MINUS]))
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed([P_PLUS]))  # (+1, -1) uncovered


@pytest.mark.parametrize("bad", [0, 2, -2])
def test_rank1_signed_refuses_a_sign_other_than_plus_minus_one(bad):
    cert = _signed([P_PLUS, P_MINUS])
    cert["patterns"][1]["signs"] = [1, bad]
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", cert)
    cert = _signed([P_PLUS, P_MINUS])
    cert["patterns"][0]["signs"] = [bad, 1]
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", cert)


@pytest.mark.parametrize("signs", [[1, -1, 1], [1, -1, -1], [1]])
def test_rank1_signed_one_sign_per_pattern_row(signs):
    """A pattern's `signs` has exactly one entry per pattern row: one too many or too few is
    refused (zip would silently drop the extra)."""
    cert = _signed([P_PLUS, P_MINUS])
    cert["patterns"][1]["signs"] = signs
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", cert)


def test_rank1_signed_listed_rows_must_be_non_free():
    """Every listed row needs ||a_i||_1 > eps.  Row 2 = (1/2, 0) has norm exactly eps = 1/2: listing
    it is refused, although the patterns on rows 0 and 1 never name it; at eps = 49/100 it is
    non-free and the same certificate passes (d_i = 1 - 49/100 > 0 for the patterns)."""
    A = ID2 + [[F(1, 2), F(0)]]
    cert = _signed([P_PLUS, P_MINUS], rows=(0, 1, 2))
    assert not recheck(A, F(1, 2), 1, U, "impossible", cert)
    assert recheck(A, F(49, 100), 1, U, "impossible", cert)
    assert recheck(A, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS]))
    # a row of norm 1/4 < eps listed: refused too
    A = ID2 + [[F(1, 4), F(0)]]
    assert not recheck(A, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS], rows=(0, 1, 2)))
    assert not recheck(A, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS], rows=(2, 0, 1)))


def test_rank1_signed_pattern_rows_must_be_distinct():
    """A = ((1, 0), (0, 0)) has rank 1, so k = 1 is feasible and nothing may prove otherwise.  A
    pattern listing row 0 twice with signs (-1, +1) and lambda = (1, 0) twice would pass the dual
    conditions (-lambda + lambda = 0, d = 1 - 1/2 each) and, read as {0: +1}, cover everything."""
    A = Q([[1, 0], [0, 0]])
    dup = {"rows": [0, 0], "signs": [-1, 1], "lambda": [["1", "0"], ["1", "0"]], "gamma": ["1", "1"]}
    assert not recheck(A, F(1, 2), 1, U, "impossible", _signed([dup], rows=(0,)))
    assert check_rank1_signed(A, F(1, 2), _signed([dup], rows=(0,))) is False


def test_rank1_signed_pattern_rows_must_be_listed_rows():
    """A = ((1, 0), (0, 1/2)), eps = 1/2: row 1 is free (norm = eps), and B = ((1, 0), (0, 0)) has
    rank 1 within eps.  P_PLUS and P_MINUS still satisfy the dual conditions here (d_1 = 1/2 - 1/2
    = 0), but they name row 1, which `rows` = (0,) does not list: refused, with False."""
    A = Q([[1, 0], [0, F(1, 2)]])
    cert = _signed([P_PLUS, P_MINUS], rows=(0,))
    assert check_rank1_signed(A, F(1, 2), cert) is False
    assert not recheck(A, F(1, 2), 1, U, "impossible", cert)


def test_rank1_signed_lambda_entries_are_bounded_by_gamma():
    """Condition 1 of C1: |lambda_ij| <= gamma_i.  With gamma = (1/2, 1/2) the gaps d_i = 1 - 1/4
    stay positive, but |lambda_ij| = 1 > 1/2: refused.  gamma = (1, 1) is the boundary |lambda| =
    gamma, accepted; gamma = (2, 2) gives d_i = 1 - 1 = 0, sum 0: refused."""
    for gam, ok in ((["1/2", "1/2"], False), (["1", "1"], True), (["2", "2"], False), (["1", "1/2"], False)):
        pats = [dict(P_PLUS, gamma=gam), P_MINUS]
        assert recheck(ID2, F(1, 2), 1, U, "impossible", _signed(pats)) is ok, gam


def test_rank1_signed_every_pattern_has_pivot_sign_plus_one():
    """docs: each pattern's `signs` has pivot sign +1.  The all-flipped copy of P_PLUS satisfies the
    dual conditions (-lambda_0 - lambda_1 = 0, same d), but its pivot sign is -1: refused, even
    though the other two patterns already cover every sign vector."""
    flipped = copy.deepcopy(P_PLUS)
    flipped["signs"] = [-1, -1]
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS, flipped]))
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed([flipped, P_PLUS, P_MINUS]))


def test_rank1_signed_pattern_without_the_pivot_row_is_refused():
    """A pattern must contain rows[0]; one on row 1 alone is refused (with False, not an error)."""
    lone = {"rows": [1], "signs": [1], "lambda": [["0", "1"]], "gamma": ["1"]}
    cert = _signed([lone, P_PLUS, P_MINUS])
    assert check_rank1_signed(ID2, F(1, 2), cert) is False
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", cert)


def test_rank1_signed_rows_must_be_in_range():
    """`rows` are row indices 0 <= i < m: -1 (Python's alias of row 1) and 2 are refused."""
    neg = [dict(p, rows=[0, -1]) for p in (P_PLUS, P_MINUS)]
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed(neg, rows=(0, -1)))
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS], rows=(-1, 0, 1)))
    # an index past the last row: refused by the checker itself, with False
    assert check_rank1_signed(ID2, F(1, 2), _signed([P_PLUS, P_MINUS], rows=(0, 1, 2))) is False
    assert check_rank1_signed(ID2, F(1, 2), _signed([P_PLUS, P_MINUS], rows=(0, 1, 7))) is False
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS], rows=(0, 1, 2)))


def test_rank1_signed_with_more_than_256_listed_rows():
    """m = 257: rows 0 and 1 of I_2 followed by 255 copies of (1, 0), all non-free at eps = 1/2.
    Listing every row is allowed (the listed rows need only be non-free); P_PLUS and P_MINUS on
    rows 0 and 1 refute both signs of row 1, and no other row is named by a pattern."""
    A = ID2 + [[F(1), F(0)] for _ in range(255)]
    cert = _signed([P_PLUS, P_MINUS], rows=range(257))
    assert recheck(A, F(1, 2), 1, U, "impossible", cert)
    # a redundant third pattern naming all 257 rows: P_PLUS with lambda_i = 0, gamma_i = 0 and
    # sign +1 on rows 2..256 (d_i = 0 there): still a valid pattern
    long = {"rows": list(range(257)), "signs": [1] * 257,
            "lambda": P_PLUS["lambda"] + [["0", "0"]] * 255, "gamma": ["1", "1"] + ["0"] * 255}
    assert recheck(A, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS, long], rows=range(257)))
    assert recheck(A, F(1, 2), 1, U, "impossible", _signed([long, P_MINUS, P_PLUS], rows=range(257)))
    # one row listed twice is refused
    assert not recheck(A, F(1, 2), 1, U, "impossible", _signed([P_PLUS, P_MINUS], rows=[*range(257), 5]))


# ---------------------------------------------------------------- patterns_cover (coverage, budget 2P + 1)

def test_patterns_cover_uses_exactly_its_budget():
    """rows (0, 1, 2); p = {0:+, 2:+}, q = {0:+, 1:+, 2:-}, q' = {0:+, 1:-, 2:-} cover all four sign
    vectors ((+,+): p, (+,-): q, (-,+): p, (-,-): q').  The case split: the root splits on row 1
    (the first row in `rows` order that a live pattern names), each child on row 2, four closed
    leaves: 1 + 2 + 4 = 7 branches = 2 * 3 + 1, the budget exactly."""
    p = {0: 1, 2: 1}
    q = {0: 1, 1: 1, 2: -1}
    q2 = {0: 1, 1: -1, 2: -1}
    assert patterns_cover([0, 1, 2], [p, q, q2]) is True
    assert patterns_cover([0, 1, 2], [p, q]) is False  # (-, -) agrees with none


def test_patterns_cover_refuses_beyond_its_budget():
    """rows (0, 1, 2, 3), P = 5 patterns: p = {0:+, 3:+} and q_ab = {0:+, 1:a, 2:b, 3:-}.  They
    cover every sign vector, but the split runs over rows 1, 2, 3 in turn (the q's name rows 1
    and 2 before p's row 3): 1 + 2 + 4 + 8 = 15 branches > 2 * 5 + 1 = 11, so the documented
    budget refuses it (refusing is always sound)."""
    p = {0: 1, 3: 1}
    qs = [{0: 1, 1: a, 2: b, 3: -1} for a in (1, -1) for b in (1, -1)]
    assert patterns_cover([0, 1, 2, 3], [p] + qs) is False
    # p replaced by its four full extensions: the same 15 branches, now within 2 * 8 + 1 = 17
    full = [{0: 1, 1: a, 2: b, 3: 1} for a in (1, -1) for b in (1, -1)] + qs
    assert patterns_cover([0, 1, 2, 3], full) is True


def test_patterns_cover_ignores_patterns_with_pivot_minus_one():
    """Coverage is of sign vectors with +1 at rows[0]: a pattern with -1 there agrees with none."""
    assert patterns_cover([0], [{0: -1}]) is False
    assert patterns_cover([0, 1], [{0: -1}, {0: 1, 1: 1}]) is False
    assert patterns_cover([0], [{0: 1}]) is True


# ---------------------------------------------------------------- kernel-dual (proofs/oracle_kN_minus_1.md)

def test_kernel_bound_subtracts_every_other_column():
    """A = I_3, y = (1/3, 1, 1/5): g = A^T y = y, so for j = 1: g_1 - |g_0| - |g_2| = 1 - 1/3 - 1/5 =
    7/15, and ||y||_1 = 23/15.  For j = 0: 1/3 - 1 - 1/5 = -13/15; for j = 2: 1/5 - 1/3 - 1 = -17/15."""
    I3 = Q([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    y = [F(1, 3), F(1), F(1, 5)]
    assert kernel_bound(I3, 1, y) == (F(7, 15), F(23, 15))
    assert kernel_bound(I3, 0, y) == (F(-13, 15), F(23, 15))
    assert kernel_bound(I3, 2, y) == (F(-17, 15), F(23, 15))


def test_kernel_bound_in_a_wide_matrix():
    """A = one row of 300 zeros with 1 at column 280 and 1/2 at column 290, y = (2): g = (.., 2 at
    280, .., 1 at 290, ..).  For j = 280: 2 - 1 = 1; for j = 290: 1 - 2 = -1; ||y||_1 = 2."""
    a = [F(0)] * 300
    a[280], a[290] = F(1), F(1, 2)
    assert kernel_bound([a], 280, [F(2)]) == (F(1), F(2))
    assert kernel_bound([a], 290, [F(2)]) == (F(-1), F(2))
    assert kernel_bound([a], 3, [F(2)]) == (F(-3), F(2))


def test_kernel_dual_needs_the_bound_for_every_column():
    """A = I_2, eps = 1/2, k = N - 1 = 1.  y_j = e_j: bound 1 > eps * 1.  y_1 = (1/2, 1): g = (1/2, 1),
    1 - 1/2 = 1/2 against eps * ||y_1||_1 = 3/4: refused."""
    good = {"kind": "kernel-dual", "y": [["1", "0"], ["0", "1"]]}
    assert recheck(ID2, F(1, 2), 1, U, "impossible", good)
    bad = {"kind": "kernel-dual", "y": [["1", "0"], ["1/2", "1"]]}
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", bad)
    # y_0 = (1, 1/2) fails in column 0 the same way
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", {"kind": "kernel-dual", "y": [["1", "1/2"], ["0", "1"]]})


def test_kernel_dual_scales_eps_by_the_l1_norm_of_y():
    """A = I_2 / 2, eps = 1/2: B = 0 is within eps, so nothing may prove impossibility.  y_j = 2 e_j:
    g_j = 1, ||y_j||_1 = 2, and 1 > eps * 2 = 1 fails.  At eps = 49/100: 1 > 49/50 holds."""
    cert = {"kind": "kernel-dual", "y": [["2", "0"], ["0", "2"]]}
    assert not recheck(HALF_ID2, F(1, 2), 1, U, "impossible", cert)
    assert recheck(HALF_ID2, F(49, 100), 1, U, "impossible", cert)


def test_kernel_dual_needs_one_vector_per_column():
    assert check_kernel(ID2, F(1, 2), {"y": [["1", "0"]]}) is False
    assert check_kernel(ID2, F(1, 2), {"y": [["1", "0"], ["0", "1"], ["0", "1"]]}) is False
    assert not recheck(ID2, F(1, 2), 1, U, "impossible", {"kind": "kernel-dual", "y": [["1", "0"]]})


# ---------------------------------------------------------------- cokernel-dual (proofs/oracle_km_minus_1.md)

def test_cokernel_w_must_lie_in_the_unit_box():
    """A = I_2 / 2, eps = 1/2 (B = 0 is within eps).  w = 2 s gives s_i (A w)_i = 1 > 1/2 but
    ||w||_inf = 2 > 1: refused.  w = s gives 1/2, not > 1/2; at eps = 49/100 it is a proof."""
    two = {"kind": "cokernel-dual", "orthants": [{"signs": [1, 1], "w": ["2", "2"]},
                                                 {"signs": [1, -1], "w": ["2", "-2"]}]}
    assert not recheck(HALF_ID2, F(1, 2), 1, U, "impossible", two)
    one = {"kind": "cokernel-dual", "orthants": [{"signs": [1, 1], "w": ["1", "1"]},
                                                 {"signs": [1, -1], "w": ["1", "-1"]}]}
    assert not recheck(HALF_ID2, F(1, 2), 1, U, "impossible", one)
    assert recheck(HALF_ID2, F(49, 100), 1, U, "impossible", one)
    assert cokernel_bound(HALF_ID2, [1, 1], [F(2), F(2)]) is None
    assert cokernel_bound(HALF_ID2, [1, 1], [F(3, 2), F(0)]) is None
    assert cokernel_bound(HALF_ID2, [1, -1], [F(1), F(-1)]) == F(1, 2)


def test_cokernel_sign_vectors_have_length_m():
    """A = ((1, 0), (-1, 0)) has rank 1, so k = m - 1 = 1 is feasible (B = A) and no certificate
    may pass.  Orthant (1, -1) is refuted by w = (1, 0) (s_i (A w)_i = 1, 1); orthant (1, 1) is
    not refutable.  Sign vectors of length 1 or 3 in its place are refused, not counted."""
    A = Q([[1, 0], [-1, 0]])
    ok = {"signs": [1, -1], "w": ["1", "0"]}
    for short_or_long in ([1], [1, 1, 1], [1, -1, 1]):
        cert = {"kind": "cokernel-dual", "orthants": [{"signs": short_or_long, "w": ["1", "0"]}, ok]}
        assert not recheck(A, F(1, 2), 1, U, "impossible", cert), short_or_long
    two_long = {"kind": "cokernel-dual", "orthants": [{"signs": [1, -1, 1], "w": ["1", "0"]},
                                                      {"signs": [1, -1, -1], "w": ["1", "0"]}]}
    assert not recheck(A, F(1, 2), 1, U, "impossible", two_long)


def test_cokernel_dual_with_ten_rows():
    """A = I_10, eps = 1/2, k = m - 1 = 9: for each of the 2^9 = 512 orthants s (s_0 = +1),
    w = s has s_i (A w)_i = 1 > 1/2.  All 512 present: accepted; one missing: refused."""
    m = 10
    A = [[F(int(i == j)) for j in range(m)] for i in range(m)]
    orthants = [{"signs": [1, *t], "w": [str(x) for x in (1, *t)]}
                for t in itertools.product((1, -1), repeat=m - 1)]
    assert len(orthants) == 512
    assert recheck(A, F(1, 2), m - 1, U, "impossible", {"kind": "cokernel-dual", "orthants": orthants})
    assert not recheck(A, F(1, 2), m - 1, U, "impossible", {"kind": "cokernel-dual", "orthants": orthants[1:]})
    assert not recheck(A, F(1, 2), m, U, "impossible", {"kind": "cokernel-dual", "orthants": orthants})


# ---------------------------------------------------------------- rank1-stochastic-dual (proofs/oracle_k1_stochastic.md)

def test_rank1_stochastic_dual_compares_with_eps_times_the_sum_of_norms():
    """A = I_2, lambda = ((1, -1), (-1, 1)): sum_i lambda_i.a_i = 1 + 1 = 2, column sums (0, 0) so
    max_j = 0; sum_i ||lambda_i||_inf = 2.  The proof needs 2 > 2 eps: it holds for eps = 99/100,
    not for eps = 1 (where B = (1/2, 1/2; 1/2, 1/2), rank 1 and stochastic, is within eps)."""
    lam = [["1", "-1"], ["-1", "1"]]
    assert rank1_stochastic_bound(ID2, Q(lam)) == (F(2), F(2))
    cert = {"kind": "rank1-stochastic-dual", "lambda": lam}
    assert recheck(ID2, F(99, 100), 1, S, "impossible", cert)
    assert not recheck(ID2, F(1), 1, S, "impossible", cert)
    assert not recheck(ID2, F(3, 2), 1, S, "impossible", cert)


def test_rank1_stochastic_dual_on_a_single_row():
    """A = ((2, 0)), one row at l1 distance |2 - 1| = 1 from the simplex.  lambda = ((1, 0)):
    lambda.a = 2, max_j Lambda_j = 1, ||lambda||_inf = 1, so the bound is 2 - 1 = 1 > eps exactly
    when eps < 1."""
    A = Q([[2, 0]])
    assert rank1_stochastic_bound(A, Q([[1, 0]])) == (F(1), F(1))
    assert rank1_stochastic_bound(A, Q([[F(1, 2), -1]])) == (F(1) - F(1, 2), F(1))
    cert = {"kind": "rank1-stochastic-dual", "lambda": [["1", "0"]]}
    assert recheck(A, F(1, 2), 1, S, "impossible", cert)
    assert not recheck(A, F(1), 1, S, "impossible", cert)


# ---------------------------------------------------------------- the table of kinds

@pytest.mark.parametrize("m,N", [(5, 3), (3, 5), (6, 9), (9, 6)])
def test_kind_rank_limits(m, N):
    """docs/oracle.md: the largest rank each kind speaks for (None: no own limit)."""
    want = {
        "witness": None,
        "row-norm": 0,
        "zero-not-stochastic": 0,
        "row-simplex-distance": None,
        "rank1-signed": 1,
        "kernel-dual": N - 1,
        "cokernel-dual": m - 1,
        "rank1-stochastic-dual": 1,
        "radon-separation": m - 1,
        "submatrix": None,
        "branch-and-bound": N - 1,  # columns J with k <= |J| < N
        "nerve-cycle": m - 1,  # d + 1 distinct rows per simplex, d >= k
        "decoder": m - 1,  # p > k distinct rows
    }
    assert set(KINDS) == set(want)
    for name, limit in want.items():
        got = KINDS[name].max_rank
        if limit is None:
            assert got is None, name
        else:
            assert type(got(m, N)) is int and got(m, N) == limit, name


def test_kinds_table_entries_are_immutable():
    """The table is the whole re-check: an entry's checker or rank limit cannot be swapped."""
    kind = KINDS["kernel-dual"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.max_rank = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.check = lambda *a: True
    assert kind.max_rank(3, 5) == 4


def test_kind_verdicts_and_classes():
    for name, kind in KINDS.items():
        assert kind.verdict == ("feasible" if name == "witness" else "impossible"), name
    stochastic_only = {"zero-not-stochastic", "row-simplex-distance", "rank1-stochastic-dual", "radon-separation"}
    for name, kind in KINDS.items():
        assert set(kind.classes) == ({S} if name in stochastic_only else {U, S}), name


@pytest.mark.parametrize("verdict", ["proved", "unknown", "possible", "true", "z"])
def test_recheck_refuses_a_verdict_that_is_not_one(verdict):
    """Only `feasible`, `impossible` (checked) and `outside-scope` (claims nothing) are verdicts."""
    cert = {"kind": "row-norm", "row": 0}
    assert recheck(ID2, F(1, 2), 0, U, "impossible", cert)
    assert recheck(ID2, F(1, 2), 0, U, "outside-scope", cert)
    assert not recheck(ID2, F(1, 2), 0, U, verdict, cert)
    assert not recheck(ID2, F(1, 2), 0, U, verdict, {"kind": verdict})


def test_recheck_applies_the_rank_limit_to_a_cell_with_m_not_n():
    """A 3 x 2 cell: the kernel-dual limit is N - 1 = 1, not m - 1 = 2."""
    A = Q([[1, 0], [0, 1], [0, 0]])
    cert = {"kind": "kernel-dual", "y": [["1", "0", "0"], ["0", "1", "0"]]}
    assert recheck(A, F(1, 2), 1, U, "impossible", cert)
    assert not recheck(A, F(1, 2), 2, U, "impossible", cert)

