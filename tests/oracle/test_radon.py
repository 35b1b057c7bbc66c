"""Stochastic class at k = m - 1 (proofs/oracle_radon_stochastic.md): every stochastic cell with
three rows is decided, every certificate re-checks exactly after a JSON round trip, and the
verdicts agree with the other reductions, with monotonicity in eps and with the witness search."""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction as F

import pytest
from helpers import stochastic_rows
from softrank.oracle import recheck
from softrank.oracle.search import decide, profile
from softrank.oracle.search import witness as wit
from softrank.oracle.search.radon import splits

EXAMPLE = [[F(2, 19), F(7, 19), F(6, 19), F(4, 19)], [F(1, 21), F(3, 7), F(2, 21), F(3, 7)],
           [F(3, 10), F(1, 4), F(3, 20), F(3, 10)]]


def stochastic_cell(rng: random.Random, m=3, max_n=6):
    """Random rows on the simplex, a third of them pushed off it; eps in (0, 1/2]."""
    n = rng.randint(2, max_n)
    A = stochastic_rows(rng, m, n, random_fix=True)
    if rng.random() < 0.3:
        A = [[x + F(rng.randint(-2, 2), 40) for x in row] for row in A]
    return A, F(rng.randint(1, 30), 60)


def test_example_is_feasible_at_rank_2_with_a_witness():
    v = decide(EXAMPLE, F(2, 7), 2, "stochastic")
    assert v.verdict == "feasible" and v.reduction == "k=m-1 stochastic" and v.rechecked
    assert v.certificate["kind"] == "witness" and len(v.certificate["X"][0]) <= 2
    p = profile(EXAMPLE, F(2, 7), "stochastic")
    assert (p.lower, p.upper, p.rank) == (2, 2, 2)


def test_splits_are_every_partition_once():
    for m in range(1, 6):
        s = splits(m)
        assert len(s) == len(set(s)) == 2 ** (m - 1) - 1
        assert all(x[0] == 1 and -1 in x for x in s)


def sweep(count, seed, m=3, max_n=6, cross_every=8):
    rng = random.Random(seed)
    seen = {"feasible": 0, "impossible": 0}
    for t in range(count):
        A, eps = stochastic_cell(rng, m, max_n)
        p = profile(A, eps, "stochastic")
        if p.lower is None:  # a row farther than eps from the simplex
            continue
        if m <= 3:  # every k is decided; with more rows k = 2 .. m - 2 may not be
            assert p.lower == p.upper == p.rank, (A, eps)
        for d in p.decisions:
            assert d.verdict in ("feasible", "impossible") or m > 3
            assert recheck(A, eps, d.k, "stochastic", d.verdict, json.loads(json.dumps(d.certificate)))
        v = next((d for d in p.decisions if d.k == m - 1), None) or decide(A, eps, m - 1, "stochastic")
        assert v.verdict != "outside-scope"
        if v.reduction != "k=m-1 stochastic":
            continue
        seen[v.verdict] += 1
        if t % cross_every == 0:
            cross_check(A, eps, m, v)
    return seen


def cross_check(A, eps, m, v):
    """Against the unrestricted class, monotonicity in eps, and the witness search."""
    unres = decide(A, eps, m - 1)
    if v.verdict == "feasible":
        assert unres.verdict != "impossible"
        assert decide(A, eps * F(11, 10), m - 1, "stochastic").verdict == "feasible"
    else:
        assert decide(A, eps * F(9, 10), m - 1, "stochastic").verdict == "impossible"
        assert wit.search(A, eps, m - 1, "stochastic") is None
        assert recheck(A, eps * F(9, 10), m - 1, "stochastic", "impossible", v.certificate)


def test_every_three_row_stochastic_cell_is_decided():
    seen = sweep(1000, seed=3)
    assert seen["feasible"] > 50 and seen["impossible"] > 50, seen


@pytest.mark.slow
def test_every_three_row_stochastic_cell_is_decided_large():
    seen = sweep(6000, seed=33, cross_every=1)
    assert seen["feasible"] > 300 and seen["impossible"] > 300, seen
    seen = sweep(300, seed=34, m=4, max_n=5)  # k = 3 with 7 splits; the k = m - 1 decision only
    assert seen["feasible"] > 10 and seen["impossible"] > 10, seen


def _identity_cert():
    A = [[F(int(i == j)) for j in range(3)] for i in range(3)]
    v = decide(A, F(1, 2), 2, "stochastic")
    assert v.certificate["kind"] == "radon-separation"
    return A, v.certificate


def test_separation_certificate_tampering_fails():
    A, cert = _identity_cert()
    eps = F(1, 2)
    assert recheck(A, eps, 2, "stochastic", "impossible", cert)
    assert recheck(A, eps, 1, "stochastic", "impossible", cert)  # rank <= 1 excluded too
    bad = []
    short = copy.deepcopy(cert)
    short["splits"].pop()
    bad.append(short)
    twice = copy.deepcopy(cert)
    twice["splits"][1] = twice["splits"][0]
    bad.append(twice)
    flipped = copy.deepcopy(cert)
    flipped["splits"][0]["signs"] = [-s for s in flipped["splits"][0]["signs"]]
    bad.append(flipped)
    one_side = copy.deepcopy(cert)
    one_side["splits"][0]["signs"] = [1, 1, 1]
    bad.append(one_side)
    short_w = copy.deepcopy(cert)
    short_w["splits"][0]["w"].pop()
    bad.append(short_w)
    ragged = copy.deepcopy(cert)
    ragged["splits"][0]["g"][1].append("0")
    bad.append(ragged)
    garbage = copy.deepcopy(cert)
    garbage["splits"][0]["w"][0] = [1]
    bad.append(garbage)
    bad.append({"kind": "radon-separation"})
    for b in bad:
        assert not recheck(A, eps, 2, "stochastic", "impossible", b)
    assert not recheck(A, eps, 2, "unrestricted", "impossible", cert)  # a stochastic argument
    assert not recheck(A, eps, 3, "stochastic", "impossible", cert)  # only up to m - 1
    assert not recheck(A, F(1), 2, "stochastic", "impossible", cert)  # eps beyond its bound
