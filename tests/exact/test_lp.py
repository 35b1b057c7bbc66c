"""Exact LP: every answer carries a certificate checked in rationals; HiGHS is only an advisor."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from softrank.advisors import highs, simplex
from softrank.exact.lp import LP, check_farkas, check_optimal, check_result
from softrank.oracle.search import lp as xlp
from softrank.oracle.search.lp import feasibility, solve

ONE = F(1)


def random_lp(rng, box=True):
    n, p, q = rng.randint(1, 5), rng.randint(0, 7), rng.randint(0, 2)
    R = lambda: F(rng.randint(-5, 5), rng.randint(1, 4))  # noqa: E731
    lp = LP(c=[R() for _ in range(n)], A_ub=[[R() for _ in range(n)] for _ in range(p)], b_ub=[R() for _ in range(p)],
            A_eq=[[R() for _ in range(n)] for _ in range(q)], b_eq=[R() for _ in range(q)])
    if box:
        for j in range(n):
            for s in (1, -1):
                e = [F(0)] * n
                e[j] = F(s)
                lp.A_ub.append(e)
                lp.b_ub.append(F(3))
    return lp


def test_small_optimum_both_routes():
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, -ONE], [-ONE, F(-3)]], b_ub=[-ONE, F(-2)])
    for method in ("auto", "simplex"):
        r = solve(lp, method)
        assert r.status == "optimal" and r.value == 1 and check_optimal(lp, r.x, r.y, r.z)


def test_infeasible_gives_checked_farkas():
    lp = LP(c=[F(0)], A_ub=[[ONE], [-ONE]], b_ub=[F(0), -ONE])  # x <= 0 and x >= 1
    r = solve(lp, "simplex")
    assert r.status == "infeasible" and check_farkas(lp, r.y, r.z)
    for method in ("auto", "simplex"):
        f = feasibility(lp, method)
        assert not f.feasible and check_farkas(lp, f.y, f.z)


def test_unbounded_gives_checked_ray():
    lp = LP(c=[-ONE, F(0)], A_ub=[[F(0), ONE]], b_ub=[ONE])
    r = solve(lp, "auto")
    assert r.status == "unbounded" and check_result(lp, r)


def test_degenerate_and_equality_rows():
    # many constraints active at the optimum (0, 0); a redundant equality row
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, F(0)], [F(0), -ONE], [-ONE, -ONE], [-ONE, F(-2)]], b_ub=[F(0)] * 4,
            A_eq=[[ONE, -ONE], [F(2), F(-2)]], b_eq=[F(0), F(0)])
    for method in ("auto", "simplex"):
        r = solve(lp, method)
        assert r.status == "optimal" and r.value == 0 and check_result(lp, r)


def test_feasible_at_the_boundary_exactly():
    # x >= 1/3 and 3x <= 1: the only point is 1/3 (binary64 cannot represent it)
    lp = LP(c=[F(0)], A_ub=[[-ONE], [F(3)]], b_ub=[F(-1, 3), ONE])
    f = feasibility(lp)
    assert f.feasible and f.x == [F(1, 3)]
    lp.b_ub[1] = ONE - F(1, 10 ** 30)  # now infeasible by 1e-30
    f = feasibility(lp)
    assert not f.feasible and check_farkas(lp, f.y, f.z)


def test_random_lps_highs_and_exact_simplex_agree():
    rng = random.Random(1)
    seen = set()
    for _ in range(250):
        lp = random_lp(rng, box=rng.random() < 0.7)
        a, b = solve(lp, "auto"), solve(lp, "simplex")
        assert check_result(lp, a) and check_result(lp, b)
        assert a.status == b.status
        if a.status == "optimal":
            assert a.value == b.value
        seen.add(a.status)
    assert seen == {"optimal", "infeasible", "unbounded"}


def test_checkers_reject_wrong_certificates():
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, -ONE], [-ONE, F(-3)]], b_ub=[-ONE, F(-2)])
    r = solve(lp)
    assert check_optimal(lp, r.x, r.y, r.z)
    assert not check_optimal(lp, [F(1, 2), F(1, 2) - F(1, 10 ** 20)], r.y, r.z)  # infeasible x
    assert not check_optimal(lp, [ONE, ONE], r.y, r.z)  # feasible, not optimal
    assert not check_optimal(lp, r.x, [F(2), F(0)], r.z)  # dual not stationary
    assert not check_optimal(lp, r.x, [F(-1), F(0)], r.z)  # negative multiplier
    bad = LP(c=[F(0)], A_ub=[[ONE], [-ONE]], b_ub=[F(0), -ONE])
    assert not check_farkas(bad, [ONE, F(0)], [])
    assert not check_farkas(bad, [ONE, ONE + F(1, 7)], [])


def test_without_highs_the_exact_simplex_answers(monkeypatch):
    monkeypatch.setattr(highs, "_hs", None)
    before = dict(xlp.STATS)
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, -ONE], [-ONE, F(-3)]], b_ub=[-ONE, F(-2)])
    r = solve(lp)
    assert r.route == "exact-simplex" and r.value == 1
    assert xlp.STATS["exact-simplex"] == before["exact-simplex"] + 1


def test_a_wrong_highs_basis_is_never_trusted(monkeypatch):
    """If HiGHS proposes a wrong basis, its certificate fails the exact check and the simplex runs."""
    def wrong(lp, attempt=0):
        res = simplex.solve(lp)
        if res.status == "optimal":
            res.value += 1  # corrupt
            res.route = "highs-basis"
        return res

    monkeypatch.setattr(highs, "solve_via_basis", wrong)
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, -ONE], [-ONE, F(-3)]], b_ub=[-ONE, F(-2)])
    r = solve(lp)
    assert r.route == "exact-simplex" and r.value == 1
    with pytest.raises(xlp.LPVerificationError):
        solve(lp, "highs")


def test_no_sympy_simplex_anywhere():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for part in ("exact", "oracle"):
        for f in (root / part).rglob("*.py"):
            text = f.read_text()
            assert "lpmin" not in text and "lpmax" not in text and "linprog(" not in text.replace("linprog / ", ""), f
            assert "sympy.solvers.simplex" not in text, f


def test_a_basis_that_fails_the_exact_check_is_retried_with_other_highs_settings(monkeypatch):
    """A binary64-optimal basis can be infeasible in rationals: the next HiGHS settings are tried
    (each proposal checked exactly) before the exact simplex."""
    real = highs.solve_via_basis
    seen = []

    def first_wrong(lp, attempt=0):
        seen.append(attempt)
        prop = real(lp, attempt)
        if attempt == 0 and prop is not None:
            prop.x = [v + 1 for v in prop.x]  # corrupt the first basis point
        return prop

    monkeypatch.setattr(highs, "solve_via_basis", first_wrong)
    before = dict(xlp.STATS)
    lp = LP(c=[ONE, ONE], A_ub=[[-ONE, -ONE], [-ONE, F(-3)]], b_ub=[-ONE, F(-2)])
    r = solve(lp)
    assert r.route == "highs-basis" and r.value == 1 and seen == [0, 1]
    assert xlp.STATS["highs-failed"] == before["highs-failed"] + 1
    assert highs.ATTEMPTS == len(highs.OPTION_SETS) >= 2
    assert highs.solve_via_basis is first_wrong and real(lp, highs.ATTEMPTS) is None


def _sparse(lp):
    as_dict = lambda r: {j: a for j, a in enumerate(r) if a}  # noqa: E731
    return LP(c=list(lp.c), A_ub=[as_dict(r) for r in lp.A_ub], b_ub=list(lp.b_ub),
              A_eq=[as_dict(r) for r in lp.A_eq], b_eq=list(lp.b_eq))


@pytest.mark.parametrize("method", ["highs", "simplex"])
def test_sparse_rows_give_the_answers_of_dense_rows(method):
    """The same LPs with rows as {column: value} dicts: same status and optimum on both routes, and
    the dense answer's certificate checks against the sparse LP (and back)."""
    rng = random.Random(11)
    for _ in range(150):
        lp = random_lp(rng, box=rng.random() < 0.7)
        sp = _sparse(lp)
        try:
            d, s = solve(lp, method), solve(sp, method)
        except xlp.LPVerificationError:  # the "highs" route alone may fail to check; never answers
            continue
        assert d.status == s.status and d.value == s.value
        assert check_result(sp, d) and check_result(lp, s)
        fd, fs = feasibility(lp, method), feasibility(sp, method)
        assert fd.feasible == fs.feasible


def test_a_sparse_row_outside_the_columns_is_refused():
    with pytest.raises(ValueError):
        solve(LP(c=[ONE], A_ub=[{1: ONE}], b_ub=[ONE]))
    with pytest.raises(ValueError):
        solve(LP(c=[ONE], A_ub=[{True: ONE}], b_ub=[ONE]))
