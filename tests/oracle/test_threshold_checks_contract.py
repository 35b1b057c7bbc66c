"""oracle/threshold_checks.py against its contract (proofs/oracle_profile.md and the reduction
files each kind cites): a threshold certificate is accepted exactly when its primal point attains
the value and its dual bounds reach it, and only for the k its kind speaks for.

Every certificate is written by hand on small matrices whose thresholds are worked out here:
  S = [[2, 1], [1, 3]]: ||S||_inf = 4; S^-1 = [[3, -1], [-1, 2]] / 5, ||S^-1||_inf = 4/5, so
  eps*_1 = 5/4 both as min ||S w||_inf over ||w||_inf = 1 (w = (1, -3/4): S w = (5/4, -5/4)) and as
  min ||S^T y||_1 over ||y||_1 = 1 (y = (3/4, -1/4): S^T y = (5/4, 0)) -- Gastinel-Kahan.
  Kernel duals y^(0) = (3, -1) (g = S^T y = (5, 0), 5 >= 5/4 * 4) and y^(1) = (-1, 2) (g = (0, 5),
  5 >= 5/4 * 3).  Cokernel orthants: s = (1, 1) with w = (1, 1) (S w = (3, 4), min 3) and
  s = (1, -1) with w = (1, -3/4) (min(5/4, 5/4) = 5/4).
  P = [[1, 0, 0], [0, 1/2, 1/2]] (stochastic): ||p_1 - v||_1 = 2 - 2 v_0 and ||p_2 - v||_1 >= 2 v_0,
  so eps*_1^st = 1 at v = (1/2, 1/4, 1/4); lambda = ((1, -1, -1), (-1, 1, 1)) has Lambda = 0,
  num = 1 + 1 - 0 = 2, den = 1 + 1 = 2 (proofs/oracle_k1_stochastic.md, S2).
Written for surviving mutants of the cosmic-ray campaign over the exact oracle's re-checkers."""

from __future__ import annotations

import copy
import os
from fractions import Fraction as F

import pytest
from softrank.oracle import check_threshold
from softrank.oracle import threshold_checks as tc

Q = lambda rows: [[F(x) for x in r] for r in rows]
S = Q([[2, 1], [1, 3]])
P = Q([[1, 0, 0], [0, F(1, 2), F(1, 2)]])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _q(x) -> str:
    x = F(x)
    return f"{x.numerator}/{x.denominator}"


KERNEL = {"kind": "kernel", "value": "5/4", "column": 0, "w": ["1", "-3/4"], "y": [["3", "-1"], ["-1", "2"]]}
COKERNEL = {"kind": "cokernel", "value": "5/4", "y": ["3/4", "-1/4"],
            "orthants": [{"signs": [1, 1], "w": ["1", "1"]}, {"signs": [1, -1], "w": ["1", "-3/4"]}]}
RANK1 = {"kind": "rank1-stochastic", "value": "1", "v": ["1/2", "1/4", "1/4"],
         "lambda": [["1", "-1", "-1"], ["-1", "1", "1"]]}


def _with(cert, **kw):
    out = copy.deepcopy(cert)
    out.update(kw)
    return out


# ---------------------------------------------------------------- the k each kind speaks for

def test_norm_is_the_max_row_l1_norm_and_speaks_for_k_0_only():
    A = Q([[1, -2], [F(1, 2), F(1, 3)], [0, -3]])  # row norms 3, 5/6, 3
    c = {"kind": "norm", "value": "3"}
    assert check_threshold(A, c) and check_threshold(A, c, k=0) and check_threshold(A, dict(c, k=0))
    for v in ("17/6", "5/6", "31/10", "299999/100000", "-3", "0"):
        assert not check_threshold(A, dict(c, value=v)), v
    for k in (1, 2, -1):
        assert not check_threshold(A, c, k=k), k
        assert not check_threshold(A, dict(c, k=k)), k
    assert check_threshold(Q([[F(-1, 2), F(1, 4)]]), {"kind": "norm", "value": "3/4"})


def test_the_k_argument_overrides_the_certificates():
    c = {"kind": "norm", "value": "4", "k": 1}
    assert not check_threshold(S, c)
    assert check_threshold(S, c, k=0)
    assert not check_threshold(S, dict(c, k=0), k=1)


@pytest.mark.parametrize("k", ["0", 0.0, True, None, [0]])
def test_a_k_that_is_not_a_json_integer_is_refused(k):
    c = {"kind": "norm", "value": "4", "k": k}
    if k is None:
        assert check_threshold(S, c)  # no k: the kind's own
    else:
        assert not check_threshold(S, c)
        assert not check_threshold(S, {"kind": "norm", "value": "4"}, k=k)


def test_kernel_speaks_for_n_minus_1_and_cokernel_for_m_minus_1():
    R = Q([[2, 1, 0], [1, 3, 1]])  # 2 x 3: N - 1 = 2, m - 1 = 1
    # kernel on S (N - 1 = 1), cokernel on S (m - 1 = 1)
    for cert in (KERNEL, COKERNEL):
        assert check_threshold(S, cert) and check_threshold(S, cert, k=1)
        for k in (0, 2):
            assert not check_threshold(S, cert, k=k), (cert["kind"], k)
            assert not check_threshold(S, _with(cert, k=k)), (cert["kind"], k)
    # a 2 x 3 matrix: the kinds' own k differ (kernel 2, cokernel 1)
    c = {"kind": "cokernel", "value": "0", "y": ["1", "0"], "orthants": []}
    assert not check_threshold(R, c, k=2)  # m - 1 = 1, not N - 1
    k = {"kind": "kernel", "value": "0", "column": 0, "w": ["1", "-2", "5"], "y": []}
    assert not check_threshold(R, k, k=1)  # N - 1 = 2, not m - 1


def test_rank1_stochastic_speaks_for_k_1_only():
    assert check_threshold(P, RANK1) and check_threshold(P, RANK1, k=1) and check_threshold(P, _with(RANK1, k=1))
    for k in (0, 2, 3):
        assert not check_threshold(P, RANK1, k=k), k


def test_simplex_rows_speaks_for_k_at_least_min_m_n():
    # rows: distance |P - 1| + Q: (1/2, 1/2) -> 0; (1, 1/2, -1/4) -> 1/2 + 1/4 = 3/4
    A = Q([[F(1, 2), F(1, 2), 0], [1, F(1, 2), F(-1, 4)]])  # min(m, N) = 2
    c = {"kind": "simplex-rows", "value": "3/4"}
    for k in (2, 3, 7):
        assert check_threshold(A, c, k=k) and check_threshold(A, dict(c, k=k)), k
    for k in (1, 0, -1):
        assert not check_threshold(A, c, k=k), k
    B = Q([[F(1, 2), F(1, 2)], [F(1, 2), F(1, 2)], [1, 0]])  # 3 x 2: min(m, N) = 2
    assert check_threshold(B, {"kind": "simplex-rows", "value": "0"}, k=2)
    assert not check_threshold(B, {"kind": "simplex-rows", "value": "0"}, k=1)


def test_simplex_rows_value_is_the_largest_row_distance():
    # (2, 0) -> P = 2: 1; (1/4, 1/4) -> P = 1/2: 1/2; (1/2, -1/2, 1) -> |3/2 - 1| + 1/2 = 1
    A = Q([[2, 0, 0], [F(1, 4), F(1, 4), 0], [F(1, 2), F(-1, 2), 1]])
    for v, ok in (("1", True), ("1/2", False), ("3/2", False), ("999/1000", False), ("0", False)):
        assert check_threshold(A, {"kind": "simplex-rows", "value": v, "k": 3}) is ok, v


def test_zero_and_simplex_rows_need_a_k():
    z = {"kind": "zero", "value": "0", "X": [["1"], ["1"]], "Y": [["1"], ["2"]]}
    A = Q([[1, 2], [1, 2]])
    assert check_threshold(A, z, k=1) and check_threshold(A, dict(z, k=1))
    assert not check_threshold(A, z)
    assert not check_threshold(Q([[1, 0]]), {"kind": "simplex-rows", "value": "0"})


def test_unknown_kinds_are_refused():
    for kind in ("Norm", "row-norm", "kernel-dual", "", None, "rank1"):
        assert not check_threshold(S, {"kind": kind, "value": "4"}), kind
        assert not check_threshold(S, {"kind": kind, "value": "4"}, k=0), kind
        assert not check_threshold(S, {"kind": kind, "value": "4", "k": 5}), kind


@pytest.mark.parametrize("value", ["4.0.0", "x", "", None, 4.0, True, "1e9999"])
def test_a_malformed_value_is_refused(value):
    assert check_threshold(S, {"kind": "norm", "value": "4"})
    assert not check_threshold(S, {"kind": "norm", "value": value})


def test_missing_fields_are_refused():
    assert not check_threshold(S, {"kind": "norm"})
    assert not check_threshold(S, {"value": "4"})
    for cert, fields in ((KERNEL, ("column", "w", "y")), (COKERNEL, ("y", "orthants")), (RANK1, ("v", "lambda"))):
        A = P if cert is RANK1 else S
        assert check_threshold(A, cert)
        for f in fields:
            bad = copy.deepcopy(cert)
            del bad[f]
            assert not check_threshold(A, bad), (cert["kind"], f)


# ---------------------------------------------------------------- zero (proofs/oracle_k_ge_rank.md)

R2 = Q([[1, 2, 3], [2, 4, 6], [1, 0, 1]])  # rank 2: row 1 = 2 row 0
ZERO2 = {"kind": "zero", "value": "0", "X": [["1", "0"], ["2", "0"], ["0", "1"]],
         "Y": [["1", "1"], ["2", "0"], ["3", "1"]]}  # X Y^T = R2


def test_zero_accepts_an_exact_factorisation_with_at_most_k_columns():
    for k in (2, 3, 5):
        assert check_threshold(R2, ZERO2, k=k), k
    assert not check_threshold(R2, ZERO2, k=1)  # 2 columns speak only for k >= 2
    assert not check_threshold(R2, ZERO2, k=0)
    assert not check_threshold(R2, dict(ZERO2, value="1/2"), k=2)  # the value is 0
    assert not check_threshold(R2, dict(ZERO2, value="-1"), k=2)


def test_zero_refuses_a_factorisation_that_misses_one_entry():
    """X has full column rank, so moving any one entry of X or Y moves some entry of X Y^T."""
    for name, rows, cols in (("X", 3, 2), ("Y", 3, 2)):
        for r in range(rows):
            for c in range(cols):
                bad = copy.deepcopy(ZERO2)
                bad[name][r][c] = _q(F(bad[name][r][c]) + F(1, 1000))
                assert not check_threshold(R2, bad, k=2), (name, r, c)


def test_zero_refuses_ragged_or_misshaped_factors():
    ragged_x = _with(ZERO2, X=[["1", "0"], ["2"], ["0", "1"]])
    ragged_y = _with(ZERO2, Y=[["1", "1"], ["2", "0", "0"], ["3", "1"]])
    for bad in (ragged_x, ragged_y, _with(ZERO2, X=ZERO2["X"][:2]), _with(ZERO2, Y=ZERO2["Y"][:2]),
                _with(ZERO2, X=ZERO2["X"] + [["0", "0"]]), _with(ZERO2, Y=ZERO2["Y"] + [["0", "0"]])):
        assert not check_threshold(R2, bad, k=3)
    # a third column of zeros in Y only: X has 2, Y 3 columns
    wide_y = _with(ZERO2, Y=[r + ["0"] for r in ZERO2["Y"]])
    assert not check_threshold(R2, wide_y, k=3)
    # both with a third zero column: a true factorisation with 3 columns, only for k >= 3
    wide = _with(ZERO2, X=[r + ["0"] for r in ZERO2["X"]], Y=[r + ["0"] for r in ZERO2["Y"]])
    assert check_threshold(R2, wide, k=3) and not check_threshold(R2, wide, k=2)


def test_zero_for_the_zero_matrix_with_no_columns():
    Z = Q([[0, 0], [0, 0]])
    c = {"kind": "zero", "value": "0", "X": [[], []], "Y": [[], []]}
    assert check_threshold(Z, c, k=0)
    assert not check_threshold(Q([[0, 1], [0, 0]]), c, k=0)


# ---------------------------------------------------------------- kernel (proofs/oracle_kN_minus_1.md)

def test_kernel_certificate_accepted_at_the_exact_threshold():
    assert check_threshold(S, KERNEL)
    assert check_threshold(S, _with(KERNEL, column=0, w=["-1", "3/4"]))  # -w, same ||S w||_inf


@pytest.mark.parametrize("by", [F(1, 10**9), F(-1, 10**9), F(1, 4), F(-1, 4)])
def test_kernel_refuses_a_moved_value(by):
    assert not check_threshold(S, _with(KERNEL, value=_q(F(5, 4) + by)))


def test_kernel_primal_point_must_have_unit_inf_norm_at_the_column():
    # scaled w: ||w||_inf != 1 (S w scales too)
    assert not check_threshold(S, _with(KERNEL, w=["1/2", "-3/8"]))
    assert not check_threshold(S, _with(KERNEL, w=["2", "-3/2"], value="5/2"))
    # |w_j0| != 1 although ||w||_inf = 1
    assert not check_threshold(S, _with(KERNEL, column=1))
    # a w with ||S w||_inf = 0 would be a false kernel vector if ||w||_inf were not checked
    assert not check_threshold(S, {"kind": "kernel", "value": "0", "column": 0, "w": ["0", "0"]})
    # w of the wrong length, a column out of range or not an integer
    for bad in (_with(KERNEL, w=["1", "-3/4", "0"]), _with(KERNEL, w=["1"]), _with(KERNEL, column=2),
                _with(KERNEL, column=-2),  # Python's w[-2] is w[0]: still not a column of A
                _with(KERNEL, column="0"), _with(KERNEL, column=0.0), _with(KERNEL, column=True)):
        assert not check_threshold(S, bad)


def test_kernel_primal_bound_is_compared_with_the_value():
    # w = (1, -1): S w = (1, -2), ||.||_inf = 2 > 5/4; dual bounds still reach 5/4
    assert not check_threshold(S, _with(KERNEL, w=["1", "-1"]))
    # w = (1, 0): S w = (2, 1); w = (1, -1/2): S w = (3/2, -1/2): both above 5/4
    assert not check_threshold(S, _with(KERNEL, w=["1", "0"]))
    assert not check_threshold(S, _with(KERNEL, w=["1", "-1/2"]))
    # the negative entry counts by its absolute value: w = (1, -1) at value 2 has S w = (1, -2)
    two = _with(KERNEL, value="2", w=["1", "-1"])
    assert not check_threshold(S, two)  # true, but the duals reach only 5/4 < 2


def test_kernel_duals_must_reach_the_value_for_every_column():
    # y^(1) = (-1, 2) gives 5 >= 5/4 * 3; (-1, 1) gives g = (-1, 2): 2 - 1 = 1 < 5/4 * 2
    assert not check_threshold(S, _with(KERNEL, y=[["3", "-1"], ["-1", "1"]]))
    # y^(0) = (1, 0): g = (2, 1): 2 - 1 = 1 < 5/4 * 1
    assert not check_threshold(S, _with(KERNEL, y=[["1", "0"], ["-1", "2"]]))
    # a zero dual has den = 0: no bound at all
    assert not check_threshold(S, _with(KERNEL, y=[["0", "0"], ["-1", "2"]]))
    assert not check_threshold(S, _with(KERNEL, y=[["3", "-1"], ["0", "0"]]))
    # one dual per column, each of length m
    for ys in ([["3", "-1"]], [["3", "-1"], ["-1", "2"], ["-1", "2"]], [["3", "-1"], ["-1"]], [["3", "-1"], ["-1", "2", "0"]]):
        assert not check_threshold(S, _with(KERNEL, y=ys)), ys
    # positive multiples are equally good
    assert check_threshold(S, _with(KERNEL, y=[["3/7", "-1/7"], ["-2", "4"]]))


def test_kernel_dual_at_its_exact_bound_with_a_lower_value():
    """At value t with t ||y||_1 = num exactly the bound holds (>=); the primal must then also be
    <= t.  On T = [[1, 0], [0, 2]] eps*_1 = min(1, 2) = 1 (w = (1, 0)); duals y^(0) = (1, 0) (g = (1, 0))
    and y^(1) = (0, 1) (g = (0, 2), 2 >= 1 * 1)."""
    T = Q([[1, 0], [0, 2]])
    c = {"kind": "kernel", "value": "1", "column": 0, "w": ["1", "0"], "y": [["1", "0"], ["0", "1"]]}
    assert check_threshold(T, c)
    assert not check_threshold(T, dict(c, value="2", column=1, w=["0", "1"]))  # y^(0) reaches 1 only
    assert not check_threshold(T, dict(c, value="3/2"))
    assert not check_threshold(T, dict(c, value="1/2"))


def test_kernel_value_zero_needs_a_kernel_vector():
    D = Q([[1, 1], [2, 2]])
    c = {"kind": "kernel", "value": "0", "column": 0, "w": ["1", "-1"]}
    assert check_threshold(D, c)
    assert not check_threshold(D, dict(c, w=["1", "-1/2"]))  # D w = (1/2, 1) != 0
    assert not check_threshold(S, dict(c, w=["1", "-1"]))  # S w = (1, -2)
    assert not check_threshold(D, dict(c, value="-1/2"))


# ---------------------------------------------------------------- cokernel (proofs/oracle_km_minus_1.md)

def test_cokernel_certificate_accepted_at_the_exact_threshold():
    assert check_threshold(S, COKERNEL)
    assert check_threshold(S, _with(COKERNEL, y=["-3/4", "1/4"]))  # -y: same ||S^T y||_1
    more = copy.deepcopy(COKERNEL)
    more["orthants"][0]["w"] = ["1/2", "1/2"]  # S w = (3/2, 2): min 3/2 >= 5/4
    assert check_threshold(S, more)


@pytest.mark.parametrize("by", [F(1, 10**9), F(-1, 10**9), F(1, 4), F(-1, 4)])
def test_cokernel_refuses_a_moved_value(by):
    assert not check_threshold(S, _with(COKERNEL, value=_q(F(5, 4) + by)))
    assert not check_threshold(S, _with(COKERNEL, y=["-3/4", "1/4"], value=_q(F(5, 4) + by)))


def test_cokernel_primal_needs_unit_l1_norm_and_its_bound():
    for y in (["3/8", "-1/8"], ["3/2", "-1/2"], ["3/4", "-1/8"], ["3/4"], ["3/4", "-1/4", "0"]):
        assert not check_threshold(S, _with(COKERNEL, y=y)), y
    # y = (1, 0): S^T y = (2, 1), l1 3 > 5/4; y = (1/2, -1/2): (1/2, -1), l1 3/2 > 5/4
    for y in (["1", "0"], ["1/2", "-1/2"], ["0", "-1"]):
        assert not check_threshold(S, _with(COKERNEL, y=y)), y


def test_cokernel_orthant_bounds_must_reach_the_value():
    weak = copy.deepcopy(COKERNEL)
    weak["orthants"][1]["w"] = ["1", "-1/2"]  # S w = (3/2, -1/2): min(3/2, 1/2) = 1/2 < 5/4
    assert not check_threshold(S, weak)
    big = copy.deepcopy(COKERNEL)
    big["orthants"][1]["w"] = ["2", "-3/2"]  # ||w||_inf = 2 > 1
    assert not check_threshold(S, big)
    for orthants in (COKERNEL["orthants"][:1], COKERNEL["orthants"][1:], []):
        assert not check_threshold(S, _with(COKERNEL, orthants=orthants))
    dup = copy.deepcopy(COKERNEL)
    dup["orthants"][1]["signs"] = [1, 1]  # (1, -1) missing
    assert not check_threshold(S, dup)
    for signs in ([1, 2], [1, -1, 1], [-1, 1], [1, 0]):
        bad = copy.deepcopy(COKERNEL)
        bad["orthants"][1]["signs"] = signs
        assert not check_threshold(S, bad), signs


# ---------------------------------------------------------------- rank1-stochastic (proofs/oracle_k1_stochastic.md)

def test_rank1_stochastic_accepted_at_the_exact_threshold():
    assert check_threshold(P, RANK1)
    assert check_threshold(P, _with(RANK1, v=["1/2", "1/2", "0"]))  # ||p_2 - v||_1 = 1/2 + 0 + 1/2
    assert check_threshold(P, _with(RANK1, **{"lambda": [["2", "-2", "-2"], ["-2", "2", "2"]]}))


@pytest.mark.parametrize("by", [F(1, 10**9), F(-1, 10**9), F(1, 2), F(-1, 2)])
def test_rank1_stochastic_refuses_a_moved_value(by):
    assert not check_threshold(P, _with(RANK1, value=_q(1 + by)))


def test_rank1_stochastic_point_must_be_a_probability_vector():
    # sum != 1
    assert not check_threshold(P, _with(RANK1, v=["1/2", "1/4", "1/8"]))
    assert not check_threshold(P, _with(RANK1, v=["1/2", "1/4", "1/2"]))
    # wrong length
    assert not check_threshold(P, _with(RANK1, v=["1/2", "1/2"]))
    # a negative entry: A = [[-1, 2]] has eps*_1^st = |2 - 1| + 1 = 2, yet v = a_1 sums to 1 at distance 0
    A = Q([[-1, 2]])
    for v in (["-1", "2"], ):
        assert not check_threshold(A, {"kind": "rank1-stochastic", "value": "0", "v": v, "lambda": [["0", "0"]]})
    A = Q([[F(-1, 2), F(3, 2)]])
    assert not check_threshold(A, {"kind": "rank1-stochastic", "value": "0", "v": ["-1/2", "3/2"], "lambda": [["0", "0"]]})
    A = Q([[F(-3, 2), F(5, 2)]])
    assert not check_threshold(A, {"kind": "rank1-stochastic", "value": "0", "v": ["-3/2", "5/2"], "lambda": [["0", "0"]]})
    # a stochastic row gives threshold 0 with v = the row
    assert check_threshold(Q([[F(1, 3), F(2, 3)]]), {"kind": "rank1-stochastic", "value": "0", "v": ["1/3", "2/3"]})


def test_rank1_stochastic_primal_bound_is_compared_with_the_value():
    # v = (1, 0, 0): ||p_2 - v||_1 = 2 > 1; v = (0, 1/2, 1/2): ||p_1 - v||_1 = 2
    for v in (["1", "0", "0"], ["0", "1/2", "1/2"], ["3/5", "1/5", "1/5"], ["2/5", "3/10", "3/10"]):
        assert not check_threshold(P, _with(RANK1, v=v)), v
    # a negative difference counts by its absolute value: v = (1/2, 1/2, 0) is fine (see above),
    # v = (1/2, 0, 1/2) too; v = (1/2, -1/4, 3/4) is refused (negative)
    assert check_threshold(P, _with(RANK1, v=["1/2", "0", "1/2"]))
    assert not check_threshold(P, _with(RANK1, v=["1/2", "-1/4", "3/4"]))


def test_rank1_stochastic_dual_must_reach_the_value():
    # lambda_2 = (-1, 1, 0): Lambda = (0, 0, -1), num = 1 + 1/2 - 0 = 3/2 < 1 * den = 2
    assert not check_threshold(P, _with(RANK1, **{"lambda": [["1", "-1", "-1"], ["-1", "1", "0"]]}))
    # lambda = ((1, 0, 0), (0, 1, 1)): Lambda = (1, 1, 1), num = 1 + 1 - 1 = 1, den = 1 + 1 = 2
    assert not check_threshold(P, _with(RANK1, **{"lambda": [["1", "0", "0"], ["0", "1", "1"]]}))
    # the zero dual has den = 0; a misshaped one is refused
    for lam in ([["0"] * 3] * 2, [["1", "-1", "-1"]], [["1", "-1"], ["-1", "1"]],
                [["1", "-1", "-1"], ["-1", "1", "1"], ["0", "0", "0"]]):
        assert not check_threshold(P, _with(RANK1, **{"lambda": lam})), lam


def test_rank1_stochastic_dual_at_its_exact_bound():
    """num = t den exactly is enough (>=), as at the threshold itself; one unit less of num is not.
    lambda = ((1, -1, -1), (-1, 1, 1)) on P: num 2 = 1 * den 2."""
    assert check_threshold(P, RANK1)
    # scale lambda_1 by 3: num = 3 + 1 - max(2, -2, -2) = 2, den = 3 + 1 = 4: 2 < 4
    assert not check_threshold(P, _with(RANK1, **{"lambda": [["3", "-1", "-1"], ["-1", "1", "1"]]}))


def test_rank1_stochastic_value_zero_needs_equal_stochastic_rows():
    A = Q([[F(1, 3), F(2, 3)], [F(1, 3), F(2, 3)]])
    c = {"kind": "rank1-stochastic", "value": "0", "v": ["1/3", "2/3"]}
    assert check_threshold(A, c)
    assert not check_threshold(A, dict(c, v=["1/2", "1/2"]))
    assert not check_threshold(Q([[F(1, 3), F(2, 3)], [1, 0]]), c)
    assert not check_threshold(A, dict(c, value="-1"))


# ---------------------------------------------------------------- the table

def test_every_kind_names_proof_files_that_exist():
    assert set(tc.THRESHOLD_KINDS) == {"norm", "simplex-rows", "zero", "kernel", "cokernel", "rank1-stochastic"}
    expect = {"norm": "proofs/oracle_k0.md", "simplex-rows": "proofs/oracle_stochastic_rows.md",
              "zero": "proofs/oracle_k_ge_rank.md", "kernel": "proofs/oracle_kN_minus_1.md",
              "cokernel": "proofs/oracle_km_minus_1.md", "rank1-stochastic": "proofs/oracle_k1_stochastic.md"}
    for kind, (check, proofs) in tc.THRESHOLD_KINDS.items():
        assert callable(check)
        assert tuple(proofs) == (expect[kind], "proofs/oracle_profile.md"), kind
        for p in proofs:
            assert os.path.isfile(os.path.join(ROOT, p)), p


def test_malformed_certificates_give_false_not_an_exception():
    for bad in ({"kind": "norm", "value": "1/0"}, {"kind": "norm", "value": "4", "k": "0"},
                _with(KERNEL, w=["1", "x"]), _with(KERNEL, y=None), _with(KERNEL, column=None),
                _with(COKERNEL, orthants=None), _with(COKERNEL, orthants=[{"signs": [1, 1]}]),
                _with(COKERNEL, orthants=[{"signs": "11", "w": ["1", "1"]}])):
        assert check_threshold(S, bad) is False, bad
    assert check_threshold(P, _with(RANK1, v=None)) is False
    assert check_threshold(R2, _with(ZERO2, X=None), k=2) is False


def test_kernel_on_a_wide_matrix_speaks_for_its_large_n_minus_1():
    """k is compared by value, also beyond small integers: A = [1, 0, ..., 0] (1 x 300) has the
    kernel vector e_1, so eps*_299 = 0."""
    N = 300
    A = [[F(1)] + [F(0)] * (N - 1)]
    w = ["0"] * N
    w[1] = "1"
    c = {"kind": "kernel", "value": "0", "column": 1, "w": w}
    for k in (int("299"), N - 1, None):
        assert check_threshold(A, c, k=k), k
        assert check_threshold(A, dict(c, k=k)), k
    assert not check_threshold(A, c, k=int("298"))
    assert not check_threshold(A, c, k=int("300"))


def test_zero_on_a_single_row():
    A = Q([[1, 2, 0]])
    c = {"kind": "zero", "value": "0", "X": [["1"]], "Y": [["1"], ["2"], ["0"]]}
    assert check_threshold(A, c, k=1) and check_threshold(A, c, k=2)
    assert not check_threshold(A, c, k=0)
    assert not check_threshold(A, dict(c, Y=[["1"], ["2"], ["1"]]), k=1)


def test_zero_with_many_zero_padded_columns():
    """Column counts are compared by value, also beyond small integers: a 257-column
    factorisation of the 1 x 1 zero matrix speaks for k >= 257 only."""
    c = {"kind": "zero", "value": "0", "X": [["0"] * 257], "Y": [["0"] * 257]}
    assert check_threshold(Q([[0]]), c, k=257) and check_threshold(Q([[0]]), c, k=300)
    assert not check_threshold(Q([[0]]), c, k=256)
    assert not check_threshold(Q([[0]]), dict(c, Y=[["0"] * 258]), k=300)


def test_kernel_point_with_an_entry_above_1_is_refused():
    """A = [1, -2]: w = (2, 1) has A w = 0 and |w_1| = 1 but ||w||_inf = 2; the certificate asks
    for ||w||_inf = 1 (w = (1, 1/2) is the proper one)."""
    A = Q([[1, -2]])
    c = {"kind": "kernel", "value": "0", "column": 1, "w": ["2", "1"]}
    assert not check_threshold(A, c)
    assert check_threshold(A, dict(c, column=0, w=["1", "1/2"]))
    assert not check_threshold(A, dict(c, column=0, w=["-1", "-1/2", "0"]))


def test_cokernel_on_a_single_row():
    """m = 1 (k = m - 1 = 0): eps*_0 = min over y = +-1 of ||y a||_1 = ||a||_1 = 3 for a = (1, -2);
    the one orthant s = (1) with w = (1, -1): s (A w) = 3."""
    A = Q([[1, -2]])
    c = {"kind": "cokernel", "value": "3", "y": ["1"], "orthants": [{"signs": [1], "w": ["1", "-1"]}]}
    assert check_threshold(A, c) and check_threshold(A, c, k=0)
    assert check_threshold(A, dict(c, y=["-1"]))
    assert not check_threshold(A, dict(c, value="2"))
    assert not check_threshold(A, c, k=1)


def test_cokernel_y_must_have_unit_l1_norm_even_at_value_zero():
    """D = [[1, 2], [2, 4]]: y = (2, -1) has D^T y = 0, but ||y||_1 = 3; (2/3, -1/3) is the proper
    one.  Orthants: s = (1, 1), w = (1, 1): D w = (3, 6), min 3; s = (1, -1): w = 0, min 0."""
    D = Q([[1, 2], [2, 4]])
    orth = [{"signs": [1, 1], "w": ["1", "1"]}, {"signs": [1, -1], "w": ["0", "0"]}]
    c = {"kind": "cokernel", "value": "0", "y": ["2/3", "-1/3"], "orthants": orth}
    assert check_threshold(D, c)
    for y in (["2", "-1"], ["4/3", "-2/3"], ["1/3", "-1/6"], ["0", "0"]):
        assert not check_threshold(D, dict(c, y=y)), y
    assert not check_threshold(D, dict(c, value="1/2"))  # the s = (1, -1) bound is 0


@pytest.mark.parametrize(("row", "true"), [([F(1, 2), F(1, 4)], F(1, 4)), ([1, F(1, 2)], F(1, 2)),
                                           ([F(1, 3), F(1, 3), F(1, 3) + F(1, 10**6)], F(1, 10**6))])
def test_rank1_stochastic_value_zero_with_a_point_off_the_simplex_is_refused(row, true):
    """A single row a with sum != 1 is at distance |sum a - 1| > 0 from every probability vector
    (proofs/oracle_stochastic_rows.md, D1), so eps*_1^st = that, not 0; v = a itself must not pass."""
    A = Q([row])
    v = [_q(x) for x in row]
    assert not check_threshold(A, {"kind": "rank1-stochastic", "value": "0", "v": v})
    assert not check_threshold(A, {"kind": "rank1-stochastic", "value": "0", "v": v, "lambda": [["0"] * len(row)]})
    # the true value, with v = a scaled onto the simplex and lambda = sign(sum a - 1) * (1, ..., 1):
    # num = s (sum a) - s = |sum a - 1|, den = 1
    s = 1 if sum(F(x) for x in row) > 1 else -1
    p = [F(x) / sum(F(y) for y in row) for x in row]
    c = {"kind": "rank1-stochastic", "value": _q(true), "v": [_q(x) for x in p], "lambda": [[str(s)] * len(row)]}
    assert check_threshold(A, c)
