"""The exact LP certificate checks of softrank.exact.lp, on small LPs whose answers are worked out by
hand in Fractions: each check accepts a valid certificate (also at the exact boundary of every row)
and refuses one that misses by the smallest step; the LP form refuses malformed rows with a ValueError.
No solver is involved: every certificate below is written out in the test."""

from __future__ import annotations

from fractions import Fraction
from fractions import Fraction as F

import pytest

from softrank.exact.lp import (LP, LPResult, check_farkas, check_optimal, check_primal, check_result,
                               check_unbounded, entries)

TINY = F(1, 10 ** 12)


def optimal_lp(sparse=False):
    """min c.x over two variables; optimum at x* = (1/2, 1/3) with value -71/24.

    Rows <=: 2 x1 + 3 x2 <= 2 and -x1 + 5 x2 <= 7/6 (both active at x*), x1 <= 4 (slack).
    Rows = : 3 x1 - 2 x2 = 5/6 and 3 x2 = 1 (redundant at x*).
    Duals y = (3/2, 1/4, 0), z = (-2/5, 0); c = -(A^T y + E^T z) = (-31/20, -131/20);
    b.y = 79/24, f.z = -1/3, c.x* = -71/24 = -(b.y + f.z)."""
    A_ub = [[F(2), F(3)], [F(-1), F(5)], [F(1), F(0)]]
    A_eq = [[F(3), F(-2)], [F(0), F(3)]]
    if sparse:
        A_ub = [{j: a for j, a in enumerate(r) if a} for r in A_ub]
        A_eq = [{j: a for j, a in enumerate(r) if a} for r in A_eq]
    return LP(c=[F(-31, 20), F(-131, 20)], A_ub=A_ub, b_ub=[F(2), F(7, 6), F(4)],
              A_eq=A_eq, b_eq=[F(5, 6), F(1)])


X_OPT = [F(1, 2), F(1, 3)]
Y_OPT = [F(3, 2), F(1, 4), F(0)]
Z_OPT = [F(-2, 5), F(0)]
VALUE_OPT = F(-71, 24)


def lower_orthant_lp():
    """min x1 + x2 s.t. x1 >= 1, x2 >= 0: optimum (1, 0), value 1, duals (1, 1)."""
    return LP(c=[F(1), F(1)], A_ub=[[F(-1), F(0)], [F(0), F(-1)]], b_ub=[F(-1), F(0)])


def unbounded_lp():
    """min -x1/2 - x2/3 s.t. x2 <= 1, -x1 + x3 <= 0, 2 x3 = 0: unbounded along d = (1, 0, 0)
    (A d = (0, -1), E d = 0, c.d = -1/2) from the feasible x = (0, 1/2, 0)."""
    return LP(c=[F(-1, 2), F(-1, 3), F(0)], A_ub=[[F(0), F(1), F(0)], [F(-1), F(0), F(1)]], b_ub=[F(1), F(0)],
              A_eq=[[F(0), F(0), F(2)]], b_eq=[F(0)])


X_UNB = [F(0), F(1, 2), F(0)]
RAY = [F(1), F(0), F(0)]


def plus(x, t, d):
    return [a + t * b for a, b in zip(x, d)]


def test_the_worked_optimal_certificate_is_consistent_by_hand():
    lp = optimal_lp()
    # c = -(A^T y + E^T z), recomputed here without the module
    g = [sum(r[j] * y for r, y in zip(lp.A_ub, Y_OPT)) + sum(r[j] * z for r, z in zip(lp.A_eq, Z_OPT))
         for j in range(2)]
    assert [-v for v in g] == lp.c
    assert sum(c * x for c, x in zip(lp.c, X_OPT)) == VALUE_OPT
    assert sum(b * y for b, y in zip(lp.b_ub, Y_OPT)) == F(79, 24)
    assert sum(b * z for b, z in zip(lp.b_eq, Z_OPT)) == F(-1, 3)


# ---------------------------------------------------------------- the LP form

def test_a_well_formed_lp_validates_and_reports_its_column_count():
    lp = optimal_lp()
    assert lp.validate() is None and lp.n == 2
    assert optimal_lp(sparse=True).validate() is None
    assert LP(c=[F(1)]).validate() is None and LP(c=[F(1)]).A_ub == [] and LP(c=[F(1)]).b_eq == []


def test_row_and_right_hand_side_counts_must_agree():
    with pytest.raises(ValueError, match="counts differ"):
        LP(c=[F(1)], A_ub=[[F(1)], [F(2)]], b_ub=[F(1)]).validate()
    with pytest.raises(ValueError, match="counts differ"):
        LP(c=[F(1)], A_ub=[[F(1)]], b_ub=[F(1), F(2)]).validate()
    with pytest.raises(ValueError, match="counts differ"):
        LP(c=[F(1)], A_eq=[[F(1)], [F(2)]], b_eq=[F(1)]).validate()
    with pytest.raises(ValueError, match="counts differ"):
        LP(c=[F(1)], A_eq=[[F(1)]], b_eq=[F(1), F(2)]).validate()


def test_a_dense_row_must_have_one_entry_per_variable():
    for bad in ([F(1)], [F(1), F(2), F(3)]):
        with pytest.raises(ValueError, match="row length"):
            LP(c=[F(1), F(1)], A_ub=[bad], b_ub=[F(0)]).validate()
        with pytest.raises(ValueError, match="row length"):
            LP(c=[F(1), F(1)], A_eq=[bad], b_eq=[F(0)]).validate()


def test_a_sparse_row_may_name_exactly_the_columns_zero_to_n_minus_one():
    for key in (0, 1, 2):
        assert LP(c=[F(1)] * 3, A_ub=[{key: F(1)}], b_ub=[F(0)]).validate() is None
        assert LP(c=[F(1)] * 3, A_eq=[{key: F(1)}], b_eq=[F(0)]).validate() is None
    assert LP(c=[F(1)] * 3, A_ub=[{0: F(1), 1: F(2), 2: F(3)}], b_ub=[F(0)]).validate() is None


@pytest.mark.parametrize("key", [-1, 3, 4, True, False, "0", 1.0, None])
def test_a_sparse_row_with_a_key_that_is_not_a_column_index_is_refused(key):
    for lp in (LP(c=[F(1)] * 3, A_ub=[{key: F(1)}], b_ub=[F(0)]),
               LP(c=[F(1)] * 3, A_ub=[{0: F(1)}], b_ub=[F(0)], A_eq=[{2: F(1), key: F(2)}], b_eq=[F(0)])):
        with pytest.raises(ValueError, match="outside"):
            lp.validate()


def big_lp():
    """300 variables, 301 rows <= and 300 rows =: x_j >= 0, sum x <= 44850, x_j = j; min sum x.
    Optimum x_j = j, value 44850; duals y = 0, z = -1."""
    n = 300
    A_ub = [{j: F(-1)} for j in range(n)] + [[F(1)] * n]
    return LP(c=[F(1)] * n, A_ub=A_ub, b_ub=[F(0)] * n + [F(44850)],
              A_eq=[{j: F(1)} for j in range(n)], b_eq=[F(j) for j in range(n)])


def test_hundreds_of_rows_and_columns_are_checked_like_small_ones():
    lp = big_lp()
    assert lp.validate() is None and lp.n == 300
    x = [F(j) for j in range(300)]
    y, z = [F(0)] * 301, [F(-1)] * 300
    assert check_primal(lp, x) and check_optimal(lp, x, y, z)
    assert check_result(lp, LPResult("optimal", x=x, y=y, z=z, value=F(44850)))
    assert not check_optimal(lp, x, y[:-1], z) and not check_optimal(lp, x, y, z[:-1])
    assert not check_primal(lp, x[:-1]) and not check_primal(lp, x + [F(0)])
    ray_lp = LP(c=[F(-1)] + [F(0)] * 299, A_ub=[{0: F(-1)}], b_ub=[F(0)])
    assert check_unbounded(ray_lp, [F(0)] * 300, [F(1)] + [F(0)] * 299)
    assert not check_unbounded(ray_lp, [F(0)] * 300, [F(1)] + [F(0)] * 298)
    with pytest.raises(ValueError):
        LP(c=[F(1)] * 300, A_ub=[[F(1)] * 299], b_ub=[F(0)]).validate()
    with pytest.raises(ValueError):
        LP(c=[F(1)] * 300, A_ub=[{0: F(1)}] * 300, b_ub=[F(0)] * 299).validate()
    with pytest.raises(ValueError):
        LP(c=[F(1)] * 300, A_eq=[{0: F(1)}] * 299, b_eq=[F(0)] * 300).validate()


def test_entries_lists_dense_and_sparse_rows_as_column_value_pairs():
    assert list(entries([F(5), F(0), F(-2)])) == [(0, F(5)), (1, F(0)), (2, F(-2))]
    assert sorted(entries({2: F(7), 0: F(1, 3)})) == [(0, F(1, 3)), (2, F(7))]
    assert list(entries({})) == [] and list(entries([])) == []


def test_a_result_defaults_to_no_certificate():
    r = LPResult("infeasible")
    assert (r.status, r.x, r.y, r.z, r.ray, r.value, r.route) == ("infeasible", None, None, None, None, None, "")


# ---------------------------------------------------------------- primal feasibility

@pytest.mark.parametrize("sparse", [False, True])
def test_a_point_on_the_boundary_of_every_active_row_is_feasible(sparse):
    assert check_primal(optimal_lp(sparse), X_OPT)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_point_strictly_inside_the_inequalities_is_feasible(sparse):
    # 3 x1 - 2 x2 = 5/6 and 3 x2 = 1 force x2 = 1/3; x1 = 1/2 then; so take a copy without the second row
    lp = optimal_lp(sparse)
    lp.A_eq, lp.b_eq = lp.A_eq[:1], lp.b_eq[:1]
    x = [F(0), F(-5, 12)]  # rows <=: -5/4 < 2, -25/12 < 7/6, 0 < 4
    assert check_primal(lp, x)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_point_just_past_an_inequality_is_infeasible(sparse):
    lp = optimal_lp(sparse)
    lp.A_eq, lp.b_eq = lp.A_eq[:1], lp.b_eq[:1]
    # along (2, 3) the equality row keeps its value and the two active rows grow by 13 t
    assert check_primal(lp, plus(X_OPT, -TINY, [F(2), F(3)]))
    assert not check_primal(lp, plus(X_OPT, TINY, [F(2), F(3)]))


@pytest.mark.parametrize("sparse", [False, True])
def test_a_point_just_off_an_equality_is_infeasible_on_either_side(sparse):
    lp = optimal_lp(sparse)
    lp.A_eq, lp.b_eq = lp.A_eq[:1], lp.b_eq[:1]
    above = plus(X_OPT, TINY, [F(0), F(-1)])  # rows <= strictly inside, 3 x1 - 2 x2 = 5/6 + 2 t
    below = plus(X_OPT, TINY, [F(-1), F(-1)])  # rows <= strictly inside, 3 x1 - 2 x2 = 5/6 - t
    assert not check_primal(lp, above) and not check_primal(lp, below)


def test_a_missing_point_or_one_of_the_wrong_length_is_not_feasible():
    lp = optimal_lp()
    assert not check_primal(lp, None)
    assert not check_primal(lp, X_OPT[:1])
    assert not check_primal(lp, X_OPT + [F(0)])
    sp = optimal_lp(sparse=True)
    assert not check_primal(sp, X_OPT + [F(0)]) and not check_primal(sp, None)


def test_a_single_row_is_compared_exactly():
    # 2 x1 + 3 x2 <= 31 at (5, 7): exactly on the row; 31 - 1e-12 misses it
    lp = LP(c=[F(0), F(0)], A_ub=[[F(2), F(3)]], b_ub=[F(31)])
    assert check_primal(lp, [F(5), F(7)])
    lp.b_ub = [F(31) - TINY]
    assert not check_primal(lp, [F(5), F(7)])
    eq = LP(c=[F(0), F(0)], A_eq=[{0: F(2), 1: F(3)}], b_eq=[F(31)])
    assert check_primal(eq, [F(5), F(7)]) and not check_primal(eq, [F(5), F(7) + TINY])


# ---------------------------------------------------------------- optimality certificates

@pytest.mark.parametrize("sparse", [False, True])
def test_the_worked_optimal_certificate_is_accepted(sparse):
    lp = optimal_lp(sparse)
    assert check_optimal(lp, X_OPT, Y_OPT, Z_OPT)
    assert check_result(lp, LPResult("optimal", x=X_OPT, y=Y_OPT, z=Z_OPT, value=VALUE_OPT))


def test_an_optimal_certificate_with_an_infeasible_point_is_refused():
    lp = optimal_lp()
    assert not check_optimal(lp, plus(X_OPT, TINY, [F(2), F(3)]), Y_OPT, Z_OPT)
    assert not check_optimal(lp, plus(X_OPT, TINY, [F(0), F(-1)]), Y_OPT, Z_OPT)


def test_a_feasible_point_that_is_not_optimal_is_refused():
    lp = optimal_lp()
    lp.A_eq, lp.b_eq, z = lp.A_eq[:1], lp.b_eq[:1], Z_OPT[:1]
    assert check_optimal(lp, X_OPT, Y_OPT, z)
    x = [F(0), F(-5, 12)]  # feasible, c.x = 131/48 > -71/24
    assert check_primal(lp, x) and not check_optimal(lp, x, Y_OPT, z)


def test_duals_that_are_missing_or_of_the_wrong_length_are_refused():
    lp = optimal_lp()
    assert not check_optimal(lp, X_OPT, None, Z_OPT)
    assert not check_optimal(lp, X_OPT, Y_OPT, None)
    assert not check_optimal(lp, X_OPT, None, None)
    # the dropped or added multipliers are 0: only the lengths are wrong
    assert not check_optimal(lp, X_OPT, Y_OPT[:2], Z_OPT)
    assert not check_optimal(lp, X_OPT, Y_OPT + [F(0)], Z_OPT)
    assert not check_optimal(lp, X_OPT, Y_OPT, Z_OPT[:1])
    assert not check_optimal(lp, X_OPT, Y_OPT, Z_OPT + [F(0)])


def test_a_negative_inequality_multiplier_is_refused():
    # x <= 1/2 and -x <= -1/2 are both active at x = 1/2 with c = 0: multipliers (a, a) are stationary
    # with objective 0 for every a, so (-1/2, -1/2) and (-1, -1) fail on the sign alone
    lp = LP(c=[F(0)], A_ub=[[F(1)], [F(-1)]], b_ub=[F(1, 2), F(-1, 2)])
    assert check_optimal(lp, [F(1, 2)], [F(1, 2), F(1, 2)], [])
    assert check_optimal(lp, [F(1, 2)], [F(0), F(0)], [])
    assert not check_optimal(lp, [F(1, 2)], [F(-1, 2), F(-1, 2)], [])
    assert not check_optimal(lp, [F(1, 2)], [F(-1), F(-1)], [])


def test_duals_that_are_not_stationary_are_refused_even_with_the_right_objective():
    lp = lower_orthant_lp()
    x = [F(1), F(0)]
    assert check_optimal(lp, x, [F(1), F(1)], [])
    # both keep -(b.y) = 1 = c.x, but c + A^T y is (0, 1) and (0, -1)
    assert not check_optimal(lp, x, [F(1), F(0)], [])
    assert not check_optimal(lp, x, [F(1), F(2)], [])
    # on the worked LP, a shift of y1 and z1 keeping the objective: residual (13/50, -39/100)
    assert not check_optimal(optimal_lp(), X_OPT, [F(29, 20), F(1, 4), F(0)], [F(-7, 25), F(0)])


def test_the_objective_must_equal_the_dual_bound_exactly():
    lp = lower_orthant_lp()
    # x1 >= 1 moved to x1 >= 1 + t: x = (1 + t, 0) is optimal with the same duals, value 1 + t
    lp.b_ub = [F(-1) - TINY, F(0)]
    assert check_optimal(lp, [F(1) + TINY, F(0)], [F(1), F(1)], [])
    assert not check_optimal(lp, [F(1) + 2 * TINY, F(0)], [F(1), F(1)], [])


def test_the_result_value_must_be_the_exact_objective():
    lp = optimal_lp()
    good = LPResult("optimal", x=X_OPT, y=Y_OPT, z=Z_OPT, value=VALUE_OPT)
    assert check_result(lp, good)
    for v in (VALUE_OPT + TINY, VALUE_OPT - TINY, -VALUE_OPT, None):
        assert not check_result(lp, LPResult("optimal", x=X_OPT, y=Y_OPT, z=Z_OPT, value=v))
    # the right value does not rescue a wrong certificate
    assert not check_result(lp, LPResult("optimal", x=X_OPT, y=[F(29, 20), F(1, 4), F(0)],
                                         z=[F(-7, 25), F(0)], value=VALUE_OPT))
    assert not check_result(lp, LPResult("optimal", x=X_OPT, y=None, z=Z_OPT, value=VALUE_OPT))


# ---------------------------------------------------------------- Farkas certificates

def test_farkas_certificates_mixing_both_row_kinds_are_accepted():
    # x <= -2 and x = 3: y = z = 1/2 gives 0 and b.y + f.z = -1 - 3/2
    lp = LP(c=[F(0)], A_ub=[[F(1)]], b_ub=[F(-2)], A_eq=[[F(-1)]], b_eq=[F(-3)])
    assert check_farkas(lp, [F(1, 2)], [F(1, 2)])
    assert check_result(lp, LPResult("infeasible", y=[F(1, 2)], z=[F(1, 2)]))
    # x <= -3 and x = -2: y = z = 1 gives b.y + f.z = -3 + 2 = -1
    lp = LP(c=[F(0)], A_ub=[{0: F(1)}], b_ub=[F(-3)], A_eq=[{0: F(-1)}], b_eq=[F(2)])
    assert check_farkas(lp, [F(1)], [F(1)])
    assert check_result(lp, LPResult("infeasible", y=[F(1)], z=[F(1)]))


def test_a_farkas_sum_must_be_strictly_negative():
    # x <= 0 and -x <= -1/2: y = (1, 1) gives b.y = -1/2
    lp = LP(c=[F(0)], A_ub=[[F(1)], [F(-1)]], b_ub=[F(0), F(-1, 2)])
    assert check_farkas(lp, [F(1), F(1)], [])
    # x <= -2 and x = -2 (feasible): the same combination sums to exactly 0
    at_zero = LP(c=[F(0)], A_ub=[[F(1)]], b_ub=[F(-2)], A_eq=[[F(-1)]], b_eq=[F(2)])
    assert not check_farkas(at_zero, [F(1)], [F(1)])
    above = LP(c=[F(0)], A_ub=[[F(1)]], b_ub=[F(-2) + TINY], A_eq=[[F(-1)]], b_eq=[F(2)])
    assert not check_farkas(above, [F(1)], [F(1)])
    below = LP(c=[F(0)], A_ub=[[F(1)]], b_ub=[F(-2) - TINY], A_eq=[[F(-1)]], b_eq=[F(2)])
    assert check_farkas(below, [F(1)], [F(1)])
    positive = LP(c=[F(0)], A_ub=[[F(1)]], b_ub=[F(-1)], A_eq=[[F(-1)]], b_eq=[F(2)])
    assert not check_farkas(positive, [F(1)], [F(1)])


def test_a_farkas_combination_that_is_not_zero_is_refused():
    # x <= -1 and -x <= 0: y = (1, 1) is a certificate; (1, 1/2) and (1/2, 1) leave +-1/2 x
    lp = LP(c=[F(0)], A_ub=[[F(1)], [F(-1)]], b_ub=[F(-1), F(0)])
    assert check_farkas(lp, [F(1), F(1)], [])
    assert not check_farkas(lp, [F(1), F(1, 2)], [])
    assert not check_farkas(lp, [F(1, 2), F(1)], [])
    two = LP(c=[F(0), F(0)], A_ub=[[F(1), F(0)], [F(-1), F(0)]], b_ub=[F(-1), F(0)],
             A_eq=[[F(0), F(1)]], b_eq=[F(0)])
    assert check_farkas(two, [F(1), F(1)], [F(0)])
    assert not check_farkas(two, [F(1), F(1)], [F(1)]) and not check_farkas(two, [F(1), F(1)], [F(-1)])


def test_a_farkas_vector_with_a_negative_entry_is_refused():
    # x <= 1 and x <= 0 have a common solution; (-1/2, 1/2) would pass every test but the sign
    lp = LP(c=[F(0)], A_ub=[[F(1)], [F(1)]], b_ub=[F(1), F(0)])
    assert not check_farkas(lp, [F(-1, 2), F(1, 2)], [])
    assert not check_farkas(lp, [F(-1), F(1)], [])


def test_a_farkas_vector_missing_or_of_the_wrong_length_is_refused():
    lp = LP(c=[F(0)], A_ub=[[F(1)], [F(-1)]], b_ub=[F(0), F(-1, 2)], A_eq=[[F(0)]], b_eq=[F(0)])
    assert check_farkas(lp, [F(1), F(1)], [F(0)])
    assert not check_farkas(lp, None, [F(0)])
    assert not check_farkas(lp, [F(1), F(1)], None)
    assert not check_farkas(lp, [F(1), F(1), F(0)], [F(0)])
    assert not check_farkas(lp, [F(1), F(1)], [])
    assert not check_farkas(lp, [F(1), F(1)], [F(0), F(0)])


# ---------------------------------------------------------------- unbounded certificates

@pytest.mark.parametrize("x", [X_UNB, [F(7), F(1), F(0)]])
def test_the_worked_unbounded_certificate_is_accepted(x):
    lp = unbounded_lp()
    assert check_unbounded(lp, x, RAY)
    assert check_result(lp, LPResult("unbounded", x=x, ray=RAY))


def test_an_unbounded_certificate_from_an_infeasible_point_is_refused():
    lp = unbounded_lp()
    assert not check_unbounded(lp, [-TINY, F(1, 2), F(0)], RAY)
    assert not check_unbounded(lp, [F(0), F(1) + TINY, F(0)], RAY)
    assert not check_unbounded(lp, [F(1), F(1, 2), TINY], RAY)
    assert not check_unbounded(lp, None, RAY)


def test_a_ray_that_leaves_an_inequality_is_refused():
    lp = unbounded_lp()
    assert not check_unbounded(lp, X_UNB, [F(1), F(1, 2), F(0)])  # A d = (1/2, -1), c.d = -2/3
    assert not check_unbounded(lp, X_UNB, [F(1), F(0), F(3, 2)])  # A d = (0, 1/2), E d = 3
    assert not check_unbounded(lp, X_UNB, [F(1), TINY, F(0)])


def test_a_ray_that_leaves_an_equality_is_refused_on_either_side():
    lp = unbounded_lp()
    lp.A_eq, lp.b_eq = [[F(0), F(0), F(2)]], [F(0)]
    assert not check_unbounded(lp, X_UNB, [F(1), F(0), F(1, 4)])  # A d = (0, -3/4), E d = 1/2
    assert not check_unbounded(lp, X_UNB, [F(1), F(0), F(-1, 4)])  # A d = (0, -5/4), E d = -1/2


def test_a_ray_must_strictly_decrease_the_cost():
    lp = unbounded_lp()
    assert check_unbounded(lp, X_UNB, [F(1), F(0), F(0)])  # c.d = -1/2
    assert check_unbounded(lp, X_UNB, [F(2), TINY - F(3), F(0)])  # c.d = -TINY / 3
    assert not check_unbounded(lp, X_UNB, [F(2), F(-3), F(0)])  # A d = (-3, -2), c.d = 0
    assert not check_unbounded(lp, X_UNB, [F(0), F(-1), F(0)])  # A d = (-1, 0), c.d = 1/3
    assert not check_unbounded(lp, X_UNB, [F(0), F(0), F(0)])


def test_a_ray_missing_or_of_the_wrong_length_is_refused():
    lp = unbounded_lp()
    assert not check_unbounded(lp, X_UNB, None)
    assert not check_unbounded(lp, X_UNB, RAY[:2])
    assert not check_unbounded(lp, X_UNB, RAY + [F(0)])
    sp = LP(c=[F(-1), F(0)], A_ub=[{1: F(1)}], b_ub=[F(1)])
    assert check_unbounded(sp, [F(0), F(0)], [F(1), F(0)])
    assert not check_unbounded(sp, [F(0), F(0)], [F(1)]) and not check_unbounded(sp, [F(0), F(0)], [F(1), F(0), F(0)])


# ---------------------------------------------------------------- check_result dispatch

def _results():
    farkas_lp = LP(c=[F(0)], A_ub=[[F(1)], [F(-1)]], b_ub=[F(0), F(-1, 2)])
    return [
        (optimal_lp(), dict(x=X_OPT, y=Y_OPT, z=Z_OPT, value=VALUE_OPT), "optimal"),
        (farkas_lp, dict(y=[F(1), F(1)], z=[]), "infeasible"),
        (unbounded_lp(), dict(x=X_UNB, ray=RAY), "unbounded"),
    ]


def test_each_status_is_checked_by_its_own_certificate():
    for lp, cert, status in _results():
        assert check_result(lp, LPResult(status, **cert))
        # a status built at run time (not the same string object) is read the same way
        assert check_result(lp, LPResult("".join(list(status)), **cert))
        for other in ("optimal", "infeasible", "unbounded"):
            if other != status:
                assert not check_result(lp, LPResult(other, **cert)), (status, other)


@pytest.mark.parametrize("status", ["", "feasible", "unknown", "zzz", "a", "Optimal", "INFEASIBLE", "unbounded "])
def test_an_unknown_status_is_refused_whatever_its_certificate(status):
    for lp, cert, _ in _results():
        assert not check_result(lp, LPResult(status, **cert))


def test_a_float_anywhere_in_a_certificate_or_an_lp_is_refused():
    """10 * 0.1 <= 1 holds in binary64 but not exactly (0.1 is above 1/10): a float in a point, a
    multiplier, a ray, a value or the LP's data is never checked in float arithmetic."""
    lp = LP(c=[Fraction(0)], A_ub=[[Fraction(10)]], b_ub=[Fraction(1)])
    assert not check_primal(lp, [0.1]) and check_primal(lp, [Fraction(1, 10)])
    assert not check_result(lp, LPResult("optimal", x=[0.1], y=[Fraction(0)], z=[], value=Fraction(0)))
    assert check_result(lp, LPResult("optimal", x=[Fraction(1, 10)], y=[Fraction(0)], z=[], value=Fraction(0)))
    assert not check_result(lp, LPResult("optimal", x=[Fraction(1, 10)], y=[0.0], z=[], value=Fraction(0)))
    assert not check_result(lp, LPResult("optimal", x=[Fraction(1, 10)], y=[Fraction(0)], z=[], value=0.0))
    assert not check_result(lp, LPResult("optimal", x=[True], y=[Fraction(0)], z=[], value=Fraction(0)))
    ray_lp = LP(c=[Fraction(-1)], A_ub=[[Fraction(-1)]], b_ub=[Fraction(0)])
    assert check_result(ray_lp, LPResult("unbounded", x=[Fraction(0)], ray=[Fraction(1)]))
    assert not check_result(ray_lp, LPResult("unbounded", x=[Fraction(0)], ray=[1.0]))
    float_lp = LP(c=[Fraction(0)], A_ub=[[10.0]], b_ub=[Fraction(1)])
    with pytest.raises(ValueError, match="exact rational"):
        float_lp.validate()
    assert not check_result(float_lp, LPResult("optimal", x=[Fraction(1, 10)], y=[Fraction(0)], z=[], value=Fraction(0)))
