"""oracle/branch_checks.py: the relaxation the checker rebuilds is valid (McCormick rows at the
corners of every box, the root box of each class, competitors with entries outside [0, 1] in the
unrestricted class), a certificate for k' pivot columns speaks for every k <= k', and the node
budget is enforced.  Written for surviving mutants of the mutation run of 2026-12-03
(docs/hardening.md, "Mutation testing")."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F

import pytest
from helpers import competitor_point
from softrank.oracle import branch_checks as bc
from softrank.oracle import recheck
from softrank.oracle.search import branch
from softrank.oracle.search.cell import CellCache

I3 = [[F(int(i == j)) for j in range(3)] for i in range(3)]


@pytest.mark.parametrize(("zb", "cb"), [((F(1, 2), F(1)), (F(-1), F(1))), ((F(-3, 4), F(1, 4)), (F(-1, 2), F(1))),
                                        ((F(0), F(2)), (F(1, 3), F(1, 2)))])
def test_mccormick_rows_hold_at_every_corner_and_are_tight(zb, cb):
    """w = z c for z in [zl, zu], c in [L, U]: the four envelope rows hold at the four corners
    (where w = z c is the product), and each is an equality at three of them (z or c at the bound
    the row is built from)."""
    rows = bc._mccormick("w", "z", "c", zb, cb)
    assert len(rows) == 4
    tight = [0] * 4
    for z, c in itertools.product(zb, cb):
        point = {"w": z * c, "z": z, "c": c}
        for t, (coefs, rhs) in enumerate(rows):
            lhs = sum(x * point[v] for v, x in coefs.items())
            assert lhs <= rhs, (t, z, c)
            tight[t] += lhs == rhs
    assert tight == [3, 3, 3, 3]


def test_root_box_clamps_z_to_0_1_only_in_the_stochastic_class():
    A = [[F(1, 10), F(9, 10), F(0)], [F(1, 2), F(1, 4), F(1, 4)]]
    eps = F(1, 5)
    J = [0, 1]
    st, un = bc.root_box(A, eps, "stochastic", J), bc.root_box(A, eps, "unrestricted", J)
    for i, t in itertools.product(range(2), range(2)):
        a = A[i][J[t]]
        assert un[("z", i, t)] == (a - eps, a + eps)
        assert st[("z", i, t)] == (max(a - eps, F(0)), min(a + eps, F(1)))


def test_relaxation_holds_at_unrestricted_factorisations_with_entries_outside_0_1():
    """As tests/oracle/test_branch.py's B2 check, with Z and B entries below 0 and above 1."""
    rng = random.Random(5)
    for _ in range(20):
        A = [[F(rng.randint(0, 8), 8) for _ in range(3)] for _ in range(3)]
        z = [[F(rng.randint(-8, 16), 8) for _ in range(2)] for _ in range(3)]
        c = {(t, 2): F(rng.randint(-8, 8), 8) for t in range(2)}
        eps, point = competitor_point(A, z, c)
        rows = bc.relaxation_rows(A, eps, "unrestricted", [0, 1], bc.root_box(A, eps, "unrestricted", [0, 1]))
        for coefs, rhs, eq in rows:
            lhs = sum((x * point[v] for v, x in coefs.items()), F(0))
            assert lhs == rhs if eq else lhs <= rhs


def _cert(klass="unrestricted", k=1, eps=F(1, 2)):
    out = branch.decide(I3, eps, k, klass, CellCache(I3), 30)
    assert out is not None and out[0] == "impossible"
    return out[1]


def test_trees_for_k_prime_pivot_columns_speak_for_every_k_up_to_k_prime():
    cert = _cert(k=2)
    assert {len(e["columns"]) for e in cert["trees"]} == {2}
    for k in (0, 1, 2):
        assert recheck(I3, F(1, 2), k, "unrestricted", "impossible", cert), k


def test_the_node_budget_is_enforced(monkeypatch):
    """MAX_NODES bounds the nodes of one tree: one node fewer than the largest tree refuses."""
    cert = _cert()
    biggest = max(sum(1 for _ in _walk(e["tree"])) for e in cert["trees"])
    assert recheck(I3, F(1, 2), 1, "unrestricted", "impossible", cert)
    monkeypatch.setattr(bc, "MAX_NODES", biggest - 1)
    assert not recheck(I3, F(1, 2), 1, "unrestricted", "impossible", cert)
    monkeypatch.setattr(bc, "MAX_NODES", biggest)
    assert recheck(I3, F(1, 2), 1, "unrestricted", "impossible", cert)


def _walk(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if "y" not in node:
            stack += [node["low"], node["high"]]
