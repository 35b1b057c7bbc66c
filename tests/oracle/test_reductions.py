"""Each exact reduction on hand-made cells, and cross-checks between reductions."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F

import pytest
from softrank.oracle import check_threshold
from softrank.oracle.search import corank, decide, profile, thresholds
from softrank.oracle.search import reductions as red
from softrank.errors import InputError

Q = lambda rows: [[F(x) for x in r] for r in rows]


def stochastic(rng, m, n, top=9):
    out = []
    for _ in range(m):
        w = [rng.randint(0, top) for _ in range(n)]
        if not any(w):
            w[0] = 1
        out.append([F(x, sum(w)) for x in w])
    return out


def signed(rng, m, n):
    return [[F(rng.randint(-6, 6), rng.randint(1, 6)) for _ in range(n)] for _ in range(m)]


def test_k0_both_classes():
    A = Q([[F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]])
    assert decide(A, F(1, 2), 0).verdict == "impossible"
    small = Q([[F(1, 8), F(-1, 8)], [0, F(1, 5)]])
    v = decide(small, F(1, 4), 0)
    assert v.verdict == "feasible" and v.rechecked
    v = decide(small, F(1, 4), 0, "stochastic")
    assert v.verdict == "impossible" and v.certificate["kind"] in ("zero-not-stochastic", "row-simplex-distance")


def test_k_at_least_rank_is_feasible_with_B_equal_A():
    A = Q([[1, 2, 3], [2, 4, 6]])
    v = decide(A, F(1, 100), 1)
    assert v.verdict == "feasible" and v.reduction == "k>=rank"
    assert decide(Q([[0, 0], [0, 0]]), F(1, 2), 0).reduction == "k>=rank"


def test_k1_free_rows_get_zero():
    # row 2 has l1 norm 1/5 <= eps: b_2 = 0; rows 0, 1 are parallel
    A = Q([[F(1, 2), F(1, 2), 0], [F(1, 4), F(1, 4), 0], [F(1, 10), 0, F(1, 10)]])
    v = decide(A, F(1, 5), 1)
    assert v.verdict == "feasible" and v.reduction == "k=1 unrestricted"
    X = v.certificate["X"]
    assert X[2] == ["0"]
    assert v.certificate["derivation"]["free_rows"] == [2]


def test_k1_single_nonfree_row():
    A = Q([[3, 0, 0], [0, F(1, 10), 0], [0, 0, F(1, 10)]])
    v = decide(A, F(1, 5), 1)
    assert v.verdict == "feasible"


def test_k1_opposite_signs_need_negative_x():
    # rows a and -a: a rank-1 B must use x = (1, -1); the sign search finds it
    A = Q([[1, 2, 3], [-1, -2, F(-3) + F(1, 20)], [F(1, 2), 1, F(3, 2) + F(1, 40)]])
    v = decide(A, F(1, 10), 1)
    assert v.verdict == "feasible" and v.reduction == "k=1 unrestricted" and v.certificate["derivation"]["signs"]["1"] == -1 * v.certificate["derivation"]["signs"]["0"]


def test_k1_identity_impossible_with_all_patterns():
    A = Q([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    for prune in (True, False):
        v = decide(A, F(1, 2), 1, prune=prune)
        assert v.verdict == "impossible" and v.rechecked
    assert len(decide(A, F(1, 2), 1, prune=False).certificate["patterns"]) == 4


def test_k1_prune_and_full_enumeration_agree():
    rng = random.Random(3)
    for _ in range(60):
        m, n = rng.randint(2, 4), rng.randint(2, 4)
        A = signed(rng, m, n) if rng.random() < 0.5 else stochastic(rng, m, n)
        eps = F(rng.randint(1, 19), 20)
        a, b = decide(A, eps, 1, prune=True), decide(A, eps, 1, prune=False)
        assert a.verdict == b.verdict and a.rechecked and b.rechecked


@pytest.mark.parametrize("shape", [(2, 2), (2, 3), (3, 2), (2, 4), (4, 2)])
def test_k1_signed_agrees_with_corank_routes_at_the_threshold(shape):
    """For m = 2 or N = 2, k = 1 is also k = m - 1 / N - 1, whose exact threshold is an LP optimum:
    the signed LPs must say feasible at eps = eps*_1 and impossible just below."""
    rng = random.Random(hash(shape) % 1000)
    m, n = shape
    for _ in range(12):
        A = signed(rng, m, n)
        ts = []
        if n == 2:
            ts.append(F(corank.kernel_threshold(A)["value"]))
        if m == 2:
            ts.append(F(corank.cokernel_threshold(A)["value"]))
        t = ts[0]
        assert all(x == t for x in ts)
        for eps, want in ((t, "feasible"), (t * F(999, 1000), "impossible"), (t + F(1, 10 ** 9), "feasible")):
            if eps <= 0:
                continue
            v = decide(A, eps, 1)
            assert v.reduction in ("k=1 unrestricted", "k>=rank")
            assert v.verdict == (want if t > 0 else "feasible"), (A, eps, t)


def test_thresholds_monotone_and_sharp():
    rng = random.Random(7)
    for _ in range(25):
        m, n = rng.randint(2, 4), rng.randint(2, 4)
        A = signed(rng, m, n)
        vals, certs = thresholds(A)
        for k, c in certs.items():
            assert check_threshold(A, c)
        ks = sorted(vals)
        assert all(vals[a] >= vals[b] for a, b in itertools.pairwise(ks))
        for k, t in vals.items():
            if t > 0:
                assert decide(A, t, k).verdict == "feasible"
                assert decide(A, t * F(99, 100), k).verdict == "impossible"


def test_stochastic_rank1_threshold_sharp():
    rng = random.Random(9)
    for _ in range(20):
        A = stochastic(rng, rng.randint(2, 4), rng.randint(2, 4))
        c = red.rank1_stochastic_threshold(A)
        assert check_threshold(A, c)
        t = F(c["value"])
        if 0 < t < 1:
            assert decide(A, t, 1, "stochastic").verdict == "feasible"
            assert decide(A, t * F(99, 100), 1, "stochastic").verdict == "impossible"


def test_stochastic_rows_far_from_simplex():
    A = Q([[2, 0], [0, 1]])
    v = decide(A, F(1, 2), 5, "stochastic")
    assert v.verdict == "impossible" and v.certificate["kind"] == "row-simplex-distance"
    p = profile(A, F(1, 2), "stochastic")
    assert p.lower is None and p.upper is None and p.rank is None


def test_simplex_distance_and_nearest_point():
    rng = random.Random(4)
    for _ in range(200):
        a = [F(rng.randint(-5, 5), rng.randint(1, 5)) for _ in range(rng.randint(1, 5))]
        p = red.nearest_probability_vector(a)
        assert all(x >= 0 for x in p) and sum(p) == 1
        assert sum(abs(x - y) for x, y in zip(a, p)) == red.simplex_distance(a)


def test_stochastic_k2_uses_unrestricted_impossibility():
    # identity 3x3 plus a repeated row at eps 1/2: unrestricted r = 3 (k = 2 = N - 1 refuted by
    # kernel duals), so stochastic too; k = 2 is not m - 1 here
    A = Q([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])
    v = decide(A, F(1, 2), 2, "stochastic")
    assert v.verdict == "impossible" and v.reduction == "k=N-1" and "unrestricted" in v.note and v.rechecked


def test_stochastic_k_m_minus_1_by_splits():
    # identity 3x3 at eps 1/2: every split of the rows is separated
    v = decide(Q([[1, 0, 0], [0, 1, 0], [0, 0, 1]]), F(1, 2), 2, "stochastic")
    assert v.verdict == "impossible" and v.reduction == "k=m-1 stochastic" and v.rechecked
    assert v.certificate["kind"] == "radon-separation" and len(v.certificate["splits"]) == 3


def test_user_witness_and_outside_scope():
    rng = random.Random(11)
    A = stochastic(rng, 5, 5)
    v = decide(A, F(1, 20), 2, search=False, subcells=False, nerves=False, decoders=False)
    assert v.verdict == "outside-scope" and v.certificate is None and v.recheck()
    v = decide(A, F(1, 20), 2, search=False, decoders=False)  # a 3-row or 3-column sub-cell settles it
    assert v.verdict == "impossible" and v.reduction == "submatrix" and v.rechecked
    # B = A with one row replaced: rank of A itself is too large, but a given witness is checked
    B = [row[:] for row in A]
    v = decide(A, F(1, 20), 5, witness=B)
    assert v.verdict == "feasible"
    far = [[F(0)] * 5 for _ in range(5)]
    v = decide(A, F(1, 20), 2, witness=far, search=False, subcells=False, nerves=False, decoders=False)
    assert v.verdict == "outside-scope"


def test_lp_route_does_not_change_verdicts():
    rng = random.Random(12)
    for _ in range(8):
        A = signed(rng, 3, 3)
        eps = F(rng.randint(1, 19), 20)
        for k in (1, 2):
            a, b = decide(A, eps, k), decide(A, eps, k, method="simplex")
            assert a.verdict == b.verdict and b.rechecked


def test_input_errors():
    A = Q([[1, 0], [0, 1]])
    for bad in ((A, 0, 1), (A, -1, 1), (A, F(1, 2), -1), (A, F(1, 2), 1.5), ([[1], [1, 2]], F(1, 2), 1)):
        with pytest.raises(InputError):
            decide(*bad)
    with pytest.raises(InputError):
        decide(A, F(1, 2), 1, "doubly-stochastic")


def test_profile_unpacks_and_accepts_strings_and_fmpq():
    from flint import fmpq_mat

    lower, upper, r, th = profile([["1", "0"], ["1/2", "1/2"]], "1/3")
    assert (lower, upper, r) == (1, 1, 1) and th[1] == F(1, 3)
    M = fmpq_mat(2, 2, [1, 0, 1, 2])
    assert profile(M, F(1, 2)).rank is not None


def test_orthant_routes_stop_at_thirteen_rows():
    """k = m - 1 by one LP per orthant (unrestricted) or per split (stochastic) only while
    2^(m-1) <= 4,096; a wider cell with more rows is left to the other routes and answers at once
    (it used to list 2^(m-1) sign vectors: 2^29 exhausted memory on a 30 x 60 cell)."""
    import time

    from softrank.oracle.search.cell import ORTHANT_ROWS, CellCache

    rng = random.Random(3)
    for m, expect in ((ORTHANT_ROWS + 1, "cokernel"), (ORTHANT_ROWS + 2, None), (30, None)):
        A = [[F(rng.randint(1, 9), 10) for _ in range(m + 5)] for _ in range(m)]
        cell = CellCache(A)
        assert cell.corank_route(m - 1) == expect
        assert cell.splits_route(m - 1) == (expect is not None)
    A = [[F(rng.randint(1, 9), 10) for _ in range(40)] for _ in range(20)]
    t0 = time.perf_counter()
    v = decide(A, F(1, 4), 19, search=False, subcells=False, nerves=False, decoders=False)
    assert v.verdict == "outside-scope"
    vals, _ = thresholds(A)
    assert 19 not in vals and 0 in vals
    assert time.perf_counter() - t0 < 60
