"""Property test of the oracle: random rational cells up to 3x4.

For every cell: the unrestricted profile is exact (lower == upper; min(m, N) <= 3 means the
reductions k = 0, 1, N - 1, m - 1 and k >= rank cover every k), every decision's certificate
re-checks exactly after a JSON round trip, the profile agrees with the exact thresholds, and a
stochastic decision at a random k re-checks too.  A share of the cells takes eps equal to an exact
threshold, where a binary64 decision would be a coin toss.  Seeded; the default run takes a few
seconds per thousand cells (measured in the issue note).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F

import pytest
from helpers import stochastic_rows
from softrank.exact.rational import inf_norm, rank
from softrank.oracle import recheck
from softrank.oracle.search import decide, profile


def gen_cell(rng: random.Random, max_m=3, max_n=4):
    # sizes weighted towards the largest (min(m, N) = 1 cells are decided by k = 0 alone)
    m = min(max_m, rng.choice([1, 2, 2, 3, 3, 3, 4, 5]))
    n = min(max_n, rng.choice([1, 2, 3, 3, 4, 4, 4, 5]))
    kind = rng.choice(["stochastic", "signed", "lowrank", "sparse"])
    if kind == "stochastic":
        A = stochastic_rows(rng, m, n, random_fix=True)
    elif kind == "signed":
        A = [[F(rng.randint(-6, 6), rng.randint(1, 6)) for _ in range(n)] for _ in range(m)]
    elif kind == "lowrank":  # rank-1 plus a small perturbation
        x = [F(rng.randint(-4, 4), rng.randint(1, 3)) for _ in range(m)]
        v = [F(rng.randint(-4, 4), rng.randint(1, 4)) for _ in range(n)]
        A = [[xi * vj + F(rng.randint(-2, 2), 40) for vj in v] for xi in x]
    else:
        A = [[F(rng.choice([0, 0, 1, -1, 2]), rng.randint(1, 3)) for _ in range(n)] for _ in range(m)]
    scale = inf_norm(A)
    if scale > 1:  # keep ||A||_inf <= 1 so that eps in (0, 1) spans every rank
        A = [[x / scale for x in row] for row in A]
        scale = F(1)
    eps = F(rng.randint(1, 19), 20) * (scale if scale > 0 else 1) * rng.choice([1, F(1, 2), F(1, 4)])
    return A, eps


def check_cell(A, eps, rng):
    m, n = len(A), len(A[0])
    p = profile(A, eps)
    assert p.lower == p.upper == p.rank, (A, eps, p)
    r = p.rank
    assert 0 <= r <= rank(A)
    assert (r == 0) == (inf_norm(A) <= eps)
    for d in p.decisions:
        assert d.verdict in ("feasible", "impossible")
        cert = json.loads(json.dumps(d.certificate))
        assert recheck(A, eps, d.k, "unrestricted", d.verdict, cert)
    # decisions proving r: impossible at r - 1 (if r > 0), feasible at r
    by_k = {d.k: d.verdict for d in p.decisions}
    assert by_k[r] == "feasible" and (r == 0 or by_k[r - 1] == "impossible")
    for k, t in p.thresholds.items():
        assert (t <= eps) == (k >= r), (A, eps, k, t, r)
    # a stochastic decision at a random k
    k = rng.randint(0, min(m, n))
    v = decide(A, eps, k, "stochastic")
    assert v.verdict in ("feasible", "impossible", "outside-scope")
    assert recheck(A, eps, k, "stochastic", v.verdict, json.loads(json.dumps(v.certificate)))
    return p


def sweep(count, seed, max_m=3, max_n=4):
    rng = random.Random(seed)
    stats = {"cells": 0, "boundary": 0, "ranks": {}}
    for i in range(count):
        A, eps = gen_cell(rng, max_m, max_n)
        p = check_cell(A, eps, rng)
        stats["cells"] += 1
        stats["ranks"][p.rank] = stats["ranks"].get(p.rank, 0) + 1
        # every fourth cell: also at eps equal to one of its exact positive thresholds
        if i % 4 == 0:
            ts = sorted(t for t in p.thresholds.values() if 0 < t)
            if ts:
                t = rng.choice(ts)
                check_cell(A, t, rng)
                stats["boundary"] += 1
    return stats


def test_property_2000_cells_up_to_3x4():
    stats = sweep(2000, seed=20260)
    assert stats["cells"] == 2000
    assert stats["boundary"] >= 300
    assert set(stats["ranks"]) >= {0, 1, 2, 3}


@pytest.mark.slow
def test_property_10000_cells_up_to_3x4():
    sweep(10000, seed=99)


@pytest.mark.slow
def test_property_larger_cells_brackets_recheck():
    """4x4 to 5x5: not every k is covered; brackets must still be sound and certificates re-check."""
    rng = random.Random(5)
    for _ in range(300):
        A, eps = gen_cell(rng, 5, 5)
        p = profile(A, eps)
        assert p.lower <= p.upper <= rank(A)
        for d in p.decisions:
            assert recheck(A, eps, d.k, "unrestricted", d.verdict, d.certificate)
