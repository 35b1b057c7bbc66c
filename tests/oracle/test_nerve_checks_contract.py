"""oracle/nerve_checks.py against proofs/oracle_nerve_cycle.md and docs/oracle.md ("nerve-cycle"):
``face``, ``checked_simplex`` and ``check_nerve_cycle`` on hand-built cycles over the identity
(eps = 1/2: the point y = (signs on the rows, 0 elsewhere) gives s_l (a_{r_l} . y) = 1 > eps
||y||_inf = 1/2 for every vertex).  Every expected value is worked out by hand from the statement
(face counts, alternating members), never read off the checker.  Each test pins one rule a
certificate must not break: a strict cone inequality at equality, a row out of range, rows not
increasing, a sign other than +-1, a member twice, dimensions that differ, an even number of
alternating members, an odd face count, d < max(k, 1), eps <= 0.  Written for the surviving
mutants of the cosmic-ray campaign over oracle/nerve_checks.py."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from softrank.oracle.checks import recheck
from softrank.oracle.nerve_checks import check_nerve_cycle, checked_simplex, face

HALF = F(1, 2)


def eye(n):
    return [[F(int(i == j)) for j in range(n)] for i in range(n)]


def simplex(rows, signs, n, y=None):
    """A member on rows with signs; its point is the sign vector on those rows (identity cells)."""
    if y is None:
        y = [0] * n
        for r, s in zip(rows, signs):
            y[r] = s
    return {"rows": list(rows), "signs": list(signs), "y": [str(F(x)) for x in y]}


def cert(*members):
    return {"kind": "nerve-cycle", "simplices": list(members)}


# The decoder case on 2 rows (d = 1): (+,+) and (+,-); each face ((0,)+ and (1,)+) occurs twice,
# one member, (+,-), alternates.  Proves no B of rank <= 1 within 1/2 of I_2.
EDGE_PAIR = cert(simplex((0, 1), (1, 1), 2), simplex((0, 1), (1, -1), 2))

# A triangle of alternating edges on 3 rows: (0,1)(+,-), (1,2)(+,-), (0,2)(+,-).  Faces: drop
# vertex 0 gives (r1,)(-) flipped to (r1,)(+); drop vertex 1 gives (r0,)(+).  So (0,)+ from the
# first and third, (1,)+ from the first and second, (2,)+ from the second and third: all twice.
# Three members alternate (odd, but not 1).
ALT_TRIANGLE = cert(simplex((0, 1), (1, -1), 3), simplex((1, 2), (1, -1), 3), simplex((0, 2), (1, -1), 3))

# The same triangle with (+,+) edges: still a cycle (same face counts), but no member alternates.
PLAIN_TRIANGLE = cert(simplex((0, 1), (1, 1), 3), simplex((1, 2), (1, 1), 3), simplex((0, 2), (1, 1), 3))

# The four sign patterns of rows (0,1,2) (d = 2): every face twice, only (+,-,+) alternates.
SPHERE2 = cert(*(simplex((0, 1, 2), (1, a, b), 3) for a in (1, -1) for b in (1, -1)))


# ------------------------------------------------------------------ face


def test_face_drops_a_later_vertex_and_keeps_signs():
    assert face((0, 1, 2), (1, -1, 1), 1) == ((0, 2), (1, 1))
    assert face((0, 1, 2), (1, -1, 1), 2) == ((0, 1), (1, -1))
    assert face((0, 3, 5, 7), (1, -1, -1, 1), 2) == ((0, 3, 7), (1, -1, 1))


def test_face_dropping_the_first_vertex_flips_a_negative_new_first():
    assert face((0, 1, 2), (1, -1, 1), 0) == ((1, 2), (1, -1))
    assert face((4, 6, 9), (1, -1, -1), 0) == ((6, 9), (1, 1))


def test_face_dropping_the_first_vertex_keeps_a_positive_new_first():
    assert face((0, 1, 2), (1, 1, -1), 0) == ((1, 2), (1, -1))
    assert face((2, 5), (1, 1), 0) == ((5,), (1,))


# ------------------------------------------------------------------ checked_simplex


def test_checked_simplex_returns_rows_and_signs_as_tuples():
    A = eye(3)
    got = checked_simplex(A, HALF, simplex((0, 2), (1, -1), 3), 3, 3)
    assert got == ((0, 2), (1, -1))
    assert isinstance(got[0], tuple) and isinstance(got[1], tuple)


def test_checked_simplex_uses_first_and_last_rows_in_range():
    A = eye(3)
    assert checked_simplex(A, HALF, simplex((0, 1, 2), (1, 1, 1), 3), 3, 3) == ((0, 1, 2), (1, 1, 1))


@pytest.mark.parametrize("rows,signs", [((), ()), ((0, 1), (1,)), ((0,), (1, -1)), ((0, 1, 2), (1, -1))])
def test_checked_simplex_refuses_empty_or_mismatched_signs(rows, signs):
    A = eye(3)
    item = {"rows": list(rows), "signs": list(signs), "y": ["1", "-1", "1"]}
    assert checked_simplex(A, HALF, item, 3, 3) is None


def test_checked_simplex_refuses_a_negative_first_sign():
    # rows (0,1) signs (-1,+1), y = (-1, 1): -a_0.y = 1 and a_1.y = 1, both > 1/2: in the cones,
    # but the first sign must be +1.
    A = eye(2)
    item = {"rows": [0, 1], "signs": [-1, 1], "y": ["-1", "1"]}
    assert checked_simplex(A, HALF, item, 2, 2) is None


@pytest.mark.parametrize("signs", [(1, 2), (1, -2), (1, 0), (2, 1)])
def test_checked_simplex_refuses_signs_other_than_plus_minus_one(signs):
    # y = (1, sign(s_1)): s_1 a_1 . y = |s_1| >= 2 > 1/2 for s_1 = +-2: the cones alone would pass.
    A = eye(2)
    y = ["1", "-1" if signs[1] < 0 else "1"]
    item = {"rows": [0, 1], "signs": list(signs), "y": y}
    assert checked_simplex(A, HALF, item, 2, 2) is None


@pytest.mark.parametrize("rows", [(0, 3), (-1, 0), (0, 1, 3)])
def test_checked_simplex_refuses_rows_out_of_range(rows):
    # four rows of A exist (a 4 x 3 cell) but m = 3 is passed: row 3 is out of range all the same;
    # -1 would index the last row.
    A = eye(3) + [[F(1), F(1), F(1)]]
    item = {"rows": list(rows), "signs": [1] * len(rows), "y": ["1", "1", "1"]}
    assert checked_simplex(A, HALF, item, 3, 3) is None


def test_checked_simplex_refuses_a_row_equal_to_m_without_raising():
    A = eye(2)
    item = {"rows": [0, 2], "signs": [1, 1], "y": ["1", "1"]}
    assert checked_simplex(A, HALF, item, 2, 2) is None


@pytest.mark.parametrize("rows", [(0, 0), (1, 0), (0, 2, 1), (2, 0, 1), (0, 1, 1)])
def test_checked_simplex_refuses_rows_not_strictly_increasing(rows):
    A = eye(3)
    item = {"rows": list(rows), "signs": [1] * len(rows), "y": ["1", "1", "1"]}
    assert checked_simplex(A, HALF, item, 3, 3) is None


def test_checked_simplex_cone_inequality_is_strict():
    # A = [[2, 1]], y = (1, -2): a . y = 0; A = [[3, 1]]: a . y = 1; ||y||_inf = 2, eps = 1/2:
    # bound 1.  Equality (a . y = 1 = bound) is refused, one more than equality is accepted.
    y = ["1", "-2"]
    assert checked_simplex([[F(3), F(1)]], HALF, {"rows": [0], "signs": [1], "y": y}, 1, 2) is None
    assert checked_simplex([[F(4), F(1)]], HALF, {"rows": [0], "signs": [1], "y": y}, 1, 2) == ((0,), (1,))
    # the bound is eps times the largest |y_j| (here 2, the negative entry): a . y = 3/2 passes
    # at eps = 1/2 (bound 1) and fails at eps = 3/4 (bound 3/2, equality).
    assert checked_simplex([[F(7, 2), F(1)]], HALF, {"rows": [0], "signs": [1], "y": y}, 1, 2) == ((0,), (1,))
    assert checked_simplex([[F(7, 2), F(1)]], F(3, 4), {"rows": [0], "signs": [1], "y": y}, 1, 2) is None


def test_checked_simplex_negative_sign_needs_a_negative_product():
    # s = -1: -(a_1 . y) > bound.  A = I_2, y = (1, -1): -a_1.y = 1 > 1/2; with y = (1, 1): -1.
    A = eye(2)
    assert checked_simplex(A, HALF, {"rows": [0, 1], "signs": [1, -1], "y": ["1", "-1"]}, 2, 2) == ((0, 1), (1, -1))
    assert checked_simplex(A, HALF, {"rows": [0, 1], "signs": [1, -1], "y": ["1", "1"]}, 2, 2) is None


def test_checked_simplex_every_vertex_must_lie_in_its_cone():
    # y = (1, 0, 0): row 0 is in its cone, rows 1 and 2 give 0, not > 1/2.
    A = eye(3)
    item = {"rows": [0, 1, 2], "signs": [1, 1, 1], "y": ["1", "0", "0"]}
    assert checked_simplex(A, HALF, item, 3, 3) is None
    item = {"rows": [0, 1], "signs": [1, 1], "y": ["0", "1", "0"]}
    assert checked_simplex(A, HALF, item, 3, 3) is None


def test_checked_simplex_point_of_the_wrong_length_raises():
    with pytest.raises(ValueError):
        checked_simplex(eye(2), HALF, {"rows": [0], "signs": [1], "y": ["1", "0", "0"]}, 2, 2)


# ------------------------------------------------------------------ check_nerve_cycle: accepted


@pytest.mark.parametrize("c,n,d", [(EDGE_PAIR, 2, 1), (ALT_TRIANGLE, 3, 1), (SPHERE2, 3, 2)])
def test_cycles_with_an_odd_number_of_alternating_members_are_accepted(c, n, d):
    A = eye(n)
    for k in range(d + 1):
        assert check_nerve_cycle(A, HALF, c, k, "unrestricted") is True
        assert recheck(A, HALF, k, "unrestricted", "impossible", c)
        assert recheck(A, HALF, k, "stochastic", "impossible", c)


def test_rank_above_the_dimension_is_refused():
    # d = 1 proves nothing at k = 2; d = 2 nothing at k = 3 (and the table's limit m - 1 = 2).
    assert check_nerve_cycle(eye(2), HALF, EDGE_PAIR, 2, "unrestricted") is False
    assert check_nerve_cycle(eye(3), HALF, ALT_TRIANGLE, 2, "unrestricted") is False
    assert check_nerve_cycle(eye(3), HALF, SPHERE2, 3, "unrestricted") is False


def test_dimension_zero_is_refused_even_at_rank_zero():
    # d = 0: d < max(k, 1) = 1.  A single vertex; its only face is empty (no first sign to flip).
    c = cert(simplex((0,), (1,), 2))
    assert check_nerve_cycle(eye(2), HALF, c, 0, "unrestricted") is False
    c = cert(simplex((0,), (1,), 2), simplex((1,), (1,), 2))
    assert check_nerve_cycle(eye(2), HALF, c, 0, "unrestricted") is False


def test_a_one_row_cell_is_refused_without_raising():
    # m = 1: no simplex of dimension >= 1 fits; row 1 is out of range (refused, no exception).
    A = [[F(1), F(0)]]
    c = cert(simplex((0, 1), (1, 1), 2), simplex((0, 1), (1, -1), 2))
    assert check_nerve_cycle(A, HALF, c, 1, "unrestricted") is False


# ------------------------------------------------------------------ check_nerve_cycle: refused


@pytest.mark.parametrize("eps", [F(0), F(-1, 2)])
def test_eps_must_be_positive(eps):
    # at eps = 0 the points still lie in the cones (1 > 0): only eps <= 0 refuses.
    assert check_nerve_cycle(eye(2), eps, EDGE_PAIR, 1, "unrestricted") is False


def test_eps_just_below_the_cone_bound_is_accepted():
    # points give 1 > eps * 1 for every eps < 1; eps = 1 fails the strict cone inequality.
    assert check_nerve_cycle(eye(2), F(99, 100), EDGE_PAIR, 1, "unrestricted") is True
    assert check_nerve_cycle(eye(2), F(1), EDGE_PAIR, 1, "unrestricted") is False


@pytest.mark.parametrize("items", [[], (), None, "simplices", {"0": 1}])
def test_simplices_must_be_a_non_empty_list(items):
    assert check_nerve_cycle(eye(2), HALF, {"kind": "nerve-cycle", "simplices": items}, 1, "unrestricted") is False


def test_simplices_as_a_tuple_are_refused():
    items = tuple(EDGE_PAIR["simplices"])
    assert check_nerve_cycle(eye(2), HALF, {"kind": "nerve-cycle", "simplices": items}, 1, "unrestricted") is False


def test_one_bad_member_refuses_the_whole_list():
    bad = simplex((0, 1), (1, -1), 2, y=[1, 1])  # -a_1 . y = -1: not in its cone
    c = cert(EDGE_PAIR["simplices"][0], bad)
    assert check_nerve_cycle(eye(2), HALF, c, 1, "unrestricted") is False
    c = cert(bad, EDGE_PAIR["simplices"][0])
    assert check_nerve_cycle(eye(2), HALF, c, 1, "unrestricted") is False


def test_no_alternating_member_is_refused():
    # PLAIN_TRIANGLE is a cycle (faces (0,)+, (1,)+, (2,)+ twice each) with 0 alternating members.
    assert check_nerve_cycle(eye(3), HALF, PLAIN_TRIANGLE, 1, "unrestricted") is False


def test_two_alternating_members_are_refused():
    # EDGE_PAIR on rows (0,1) and again on rows (1,2): faces (0,)+ twice, (1,)+ four times,
    # (2,)+ twice (even); two alternating members (even): refused.
    c = cert(simplex((0, 1), (1, 1), 3), simplex((0, 1), (1, -1), 3),
             simplex((1, 2), (1, 1), 3), simplex((1, 2), (1, -1), 3))
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False


def test_an_odd_face_count_is_refused():
    # one alternating edge alone: faces (1,)+ and (0,)+ once each.
    assert check_nerve_cycle(eye(2), HALF, cert(simplex((0, 1), (1, -1), 2)), 1, "unrestricted") is False


def test_an_odd_count_of_the_last_face_is_refused():
    # (0,2)(+,-) and (1,2)(+,+): faces dropping vertex 0 are (2,)+ twice (even); faces dropping
    # the last vertex are (0,)+ and (1,)+ once each (odd).  One member alternates.
    c = cert(simplex((0, 2), (1, -1), 3), simplex((1, 2), (1, 1), 3))
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False


def test_an_odd_count_of_the_first_face_is_refused():
    # (0,1)(+,-) and (0,2)(+,+): dropping the last vertex gives (0,)+ twice; dropping the first
    # gives (1,)+ and (2,)+ once each.  One member alternates.
    c = cert(simplex((0, 1), (1, -1), 3), simplex((0, 2), (1, 1), 3))
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False


def test_a_face_counted_three_times_is_refused():
    # the star (0,1)+-, (0,2)+-, (0,3)+-: faces (0,)+ x3, (1,)+, (2,)+, (3,)+ once each; odd.
    c = cert(simplex((0, 1), (1, -1), 4), simplex((0, 2), (1, -1), 4), simplex((0, 3), (1, -1), 4))
    assert check_nerve_cycle(eye(4), HALF, c, 1, "unrestricted") is False


def test_a_member_listed_twice_is_refused():
    # (+,+), (+,-), (+,-), (+,-): faces (0,)+ and (1,)+ four times each (even), three alternating
    # members (odd): everything but "no member twice" holds.
    s = EDGE_PAIR["simplices"]
    c = cert(s[0], s[1], s[1], s[1])
    assert check_nerve_cycle(eye(2), HALF, c, 1, "unrestricted") is False


def test_members_of_two_dimensions_are_refused():
    # PLAIN_TRIANGLE (d = 1, no alternating member) then the four sign patterns of (0,1,2)
    # (d = 2): counting only faces 0 and 1 of the 3-row members, (1,2)++ / (1,2)+- / (0,2)++ /
    # (0,2)+- occur twice each, and one member (+,-,+) alternates; still refused: dimensions differ.
    c = cert(*PLAIN_TRIANGLE["simplices"], *SPHERE2["simplices"])
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False
    c = cert(*SPHERE2["simplices"], *PLAIN_TRIANGLE["simplices"])
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False


def test_a_sphere_on_other_rows_is_accepted_and_two_spheres_are_refused():
    # the four sign patterns of rows (1,2,3) in I_4: a cycle with one alternating member.  Together
    # with the four of rows (0,1,2) every face count stays even (each sphere has each of its faces
    # twice) and two members alternate: refused.
    A = eye(4)
    low = [simplex((0, 1, 2), (1, a, b), 4) for a in (1, -1) for b in (1, -1)]
    high = [simplex((1, 2, 3), (1, a, b), 4) for a in (1, -1) for b in (1, -1)]
    assert check_nerve_cycle(A, HALF, cert(*high), 2, "unrestricted") is True
    assert check_nerve_cycle(A, HALF, cert(*low, *high), 2, "unrestricted") is False


def test_rows_past_m_are_refused_without_raising():
    # row 4 of a 3-row cell (past m, not only equal to it): refused, no IndexError.
    c = cert(simplex((0, 4), (1, 1), 5), simplex((0, 4), (1, -1), 5))
    for item in c["simplices"]:
        item["y"] = item["y"][:3]
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False
    A = eye(3) + [[F(1), F(1), F(1)]] * 3  # rows 3..5 exist but m = 3 is passed
    assert checked_simplex(A, HALF, {"rows": [0, 5], "signs": [1, 1], "y": ["1", "1", "1"]}, 3, 3) is None


def test_a_simplex_of_many_rows_is_read_like_a_small_one():
    # 300 rows all (1, 0), y = (1, 0), signs all +1: every vertex has a . y = 1 > 1/2 (lengths past
    # Python's small-int cache compare by value, not identity).
    n = 300
    A = [[F(1), F(0)]] * n
    item = {"rows": list(range(n)), "signs": [1] * n, "y": ["1", "0"]}
    assert checked_simplex(A, HALF, item, n, 2) == (tuple(range(n)), (1,) * n)


def test_a_long_polygon_is_accepted():
    # A 300-gon of edges (i, i+1) and (0, 299) on a 300 x 2 cell whose rows are (1, 0) except the
    # last, (0, 1).  Whatever its signs, an edge (i, j) has faces (j,)+ and (i,)+, so every vertex
    # is a face of exactly two edges.  Only (0, 299) is (+,-) (y = (1, -1): a_0 . y = 1,
    # -a_299 . y = 1); the others are (+,+) with y = (1, 1).  One alternating member: accepted.
    n = 300
    A = [[F(1), F(0)]] * (n - 1) + [[F(0), F(1)]]
    items = [{"rows": [i, i + 1], "signs": [1, 1], "y": ["1", "1"]} for i in range(n - 1)]
    items.append({"rows": [0, n - 1], "signs": [1, -1], "y": ["1", "-1"]})
    assert len(items) == n
    assert check_nerve_cycle(A, HALF, cert(*items), 1, "unrestricted") is True
    items[3] = {"rows": [3, 4], "signs": [1, -1], "y": ["1", "-1"]}  # a_4 . (1, -1) = 1: not -
    assert check_nerve_cycle(A, HALF, cert(*items), 1, "unrestricted") is False


def test_a_face_counted_four_times_is_even():
    # two triangles sharing row 0: edges (0,1), (1,2), (0,2) and (0,3), (3,4), (0,4).  Row 0 is a
    # face of four edges, rows 1..4 of two each (an edge (i, j) has faces (j,)+ and (i,)+ whatever
    # its signs).  Only (3,4) is (+,-): one alternating member.  Accepted.
    members = [simplex(r, (1, 1), 5) for r in ((0, 1), (1, 2), (0, 2), (0, 3), (0, 4))]
    members.append(simplex((3, 4), (1, -1), 5))
    assert check_nerve_cycle(eye(5), HALF, cert(*members), 1, "unrestricted") is True


def test_shorter_members_after_a_longer_first_are_refused():
    # first member (0,1,2)(+,-,+) (d = 2), then (1,2)(+,-), (0,2)(+,+), (0,1)(+,-).  Were the
    # short members' faces counted over j = 0, 1, 2, every count would be even (the third "face"
    # of a 2-row member is the member itself, matching a face of the first) and three members
    # would alternate; but the members differ in dimension: refused.
    c = cert(simplex((0, 1, 2), (1, -1, 1), 3), simplex((1, 2), (1, -1), 3), simplex((0, 2), (1, 1), 3),
             simplex((0, 1), (1, -1), 3))
    assert check_nerve_cycle(eye(3), HALF, c, 1, "unrestricted") is False
    assert check_nerve_cycle(eye(3), HALF, c, 2, "unrestricted") is False


class Int(int):
    """An int that is not one of CPython's cached small ints (as ``json.loads(..., parse_int=Int)``
    gives): the check must compare signs by value, never by identity."""


def test_signs_are_compared_by_value():
    import json

    text = json.dumps(cert(simplex((0, 1), (1, 1), 2), simplex((0, 1), (1, -1), 2)))
    c = json.loads(text, parse_int=Int)
    assert type(c["simplices"][0]["signs"][1]) is Int
    assert check_nerve_cycle(eye(2), HALF, c, 1, "unrestricted") is True
    assert recheck(eye(2), HALF, 1, "unrestricted", "impossible", c)
