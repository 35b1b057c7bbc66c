"""oracle/nerve_checks.py: the fields of a nerve-cycle certificate are checked as
proofs/oracle_nerve_cycle.md states them (eps > 0, rows in range and increasing, one sign per row),
a cycle with three alternating simplices (an odd number other than 1) is accepted, and
simplices of two dimensions are refused.  Written
for surviving mutants of the mutation run of 2026-12-03 (docs/hardening.md, "Mutation testing")."""

from __future__ import annotations

import copy
from fractions import Fraction as F

import pytest
from softrank.oracle import recheck
from softrank.oracle.search import nerve

EPS = F(1, 4)


def identity_like(n, diag=F(7, 10)):
    off = (1 - diag) / (n - 1)
    return [[diag if i == j else off for j in range(n)] for i in range(n)]


def _sphere(n=3):
    A = identity_like(n)
    cert = nerve.lower_bound(A, EPS, 2)
    assert cert is not None and recheck(A, EPS, 2, "unrestricted", "impossible", cert)
    return A, cert


@pytest.mark.parametrize("eps", [F(0), F(-1, 4)])
def test_eps_must_be_positive(eps):
    A, cert = _sphere()
    assert not recheck(A, eps, 2, "unrestricted", "impossible", cert)


def test_rows_must_lie_in_range():
    """Row 2 relabelled -1 (the same row of A by Python indexing), signs and points adjusted so
    that every simplex is still in its cones and the list is still a cycle: refused all the same."""
    A, cert = _sphere()
    bad = copy.deepcopy(cert)
    for s in bad["simplices"]:
        rows, signs = s["rows"], s["signs"]
        s["rows"] = [-1] + rows[:-1]
        s["signs"] = [signs[-1]] + signs[:-1]
        if s["signs"][0] == -1:
            s["signs"] = [-x for x in s["signs"]]
            s["y"] = [str(-F(x)) for x in s["y"]]
    assert not recheck(A, EPS, 2, "unrestricted", "impossible", bad)


def test_one_sign_per_row():
    A, cert = _sphere()
    bad = copy.deepcopy(cert)
    for s in bad["simplices"]:
        s["signs"] = s["signs"][:-1]
    assert not recheck(A, EPS, 1, "unrestricted", "impossible", bad)
    assert not recheck(A, EPS, 2, "unrestricted", "impossible", bad)


def _spheres(triples):
    """Sign spheres on the given row triples of the symmetric 4 x 4 cell, from the one the search
    finds (A is invariant under simultaneous permutations of rows and columns)."""
    A, sphere = _sphere(4)
    rows0 = sphere["simplices"][0]["rows"]
    assert all(s["rows"] == rows0 for s in sphere["simplices"])
    simplices = []
    for triple in triples:
        # the increasing map rows0 -> triple, extended to a permutation of the 4 indices
        rest_from = [i for i in range(4) if i not in rows0]
        rest_to = [i for i in range(4) if i not in triple]
        sigma = dict(zip(rows0 + rest_from, triple + rest_to))
        for s in sphere["simplices"]:
            y = [None] * 4
            for j, v in enumerate(s["y"]):
                y[sigma[j]] = v
            simplices.append({"rows": [sigma[r] for r in s["rows"]], "signs": list(s["signs"]), "y": y})
    return A, simplices


def _alternating(simplices):
    return sum(all(a != b for a, b in zip(s["signs"], s["signs"][1:])) for s in simplices)


def test_three_alternating_simplices_are_an_odd_count():
    """Three sign spheres on the row triples {0,1,2}, {0,1,3}, {0,2,3}: a mod-2 cycle (a sum of
    cycles on disjoint simplices) with three alternating simplices."""
    A, simplices = _spheres([[0, 1, 2], [0, 1, 3], [0, 2, 3]])
    assert _alternating(simplices) == 3
    assert recheck(A, EPS, 2, "unrestricted", "impossible", {"kind": "nerve-cycle", "simplices": simplices})


def test_simplices_of_one_dimension_only():
    """Two triangle spheres (an even cycle: 2 alternating) and an edge sphere (1 alternating):
    each dimension is a cycle and the total count is odd, but the certificate mixes dimensions."""
    A, triangles = _spheres([[0, 1, 2], [0, 1, 3]])
    edges = nerve.lower_bound(A, EPS, 1)
    assert edges is not None and len(edges["simplices"][0]["rows"]) == 2
    assert recheck(A, EPS, 1, "unrestricted", "impossible", edges)
    mixed = {"kind": "nerve-cycle", "simplices": triangles + edges["simplices"]}
    assert _alternating(mixed["simplices"]) % 2 == 1
    assert not recheck(A, EPS, 2, "unrestricted", "impossible", mixed)
    assert not recheck(A, EPS, 1, "unrestricted", "impossible", mixed)
