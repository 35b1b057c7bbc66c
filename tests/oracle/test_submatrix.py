"""Lower bounds from sub-cells (proofs/oracle_submatrix.md): sound against the direct reductions
and the witness search, and the re-check extracts the sub-cell from A itself."""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction as F

from helpers import stochastic_rows
from softrank.oracle import recheck
from softrank.oracle.search import decide
from softrank.oracle.search import submatrix as sm
from softrank.oracle.search import witness as wit
from softrank.oracle.search.cell import CellCache

I4 = [[F(int(i == j)) for j in range(4)] for i in range(4)]


def rand_cell(rng, m, n, stochastic=True):
    if stochastic:
        A = stochastic_rows(rng, m, n)
    else:
        A = [[F(rng.randint(-6, 6), rng.randint(1, 6)) for _ in range(n)] for _ in range(m)]
    return A, F(rng.randint(1, 40), 80)


def test_identity_4x4_at_rank_2_in_both_classes():
    for klass, inner in (("unrestricted", "unrestricted"), ("stochastic", "stochastic")):
        v = decide(I4, F(1, 2), 2, klass, search=False, decoders=False)
        assert v.verdict == "impossible" and v.reduction == "submatrix" and v.rechecked
        cert = v.certificate
        assert cert["class"] == inner and len(cert["rows"]) == 3
        assert recheck(I4, F(1, 2), 2, klass, "impossible", json.loads(json.dumps(cert)))


def test_set_partitions_are_counted_by_stirling_numbers():
    stirling = {(4, 3): 6, (5, 3): 25, (5, 2): 15, (6, 3): 90, (3, 3): 1, (3, 4): 0}
    for (n, k), count in stirling.items():
        parts = list(sm.set_partitions(list(range(n)), k))
        assert len(parts) == count
        canon = {tuple(sorted(tuple(sorted(g)) for g in p)) for p in parts}
        assert len(canon) == count and all(sorted(j for g in p for j in g) == list(range(n)) for p in canon)


def test_subcell_bounds_agree_with_direct_decisions():
    """Where the oracle decides (A, eps, k) directly, a sub-cell impossibility must agree."""
    rng = random.Random(5)
    found = 0
    for t in range(150):
        m, n = rng.choice([(3, 3), (3, 4), (4, 3), (2, 4), (4, 2)])
        A, eps = rand_cell(rng, m, n, stochastic=t % 3 != 0)
        for klass in ("unrestricted", "stochastic"):
            for k in range(1, min(m, n)):
                cert = sm.lower_bound(A, eps, k, klass, CellCache(A))
                if cert is None:
                    continue
                found += 1
                assert recheck(A, eps, k, klass, "impossible", json.loads(json.dumps(cert)))
                v = decide(A, eps, k, klass, subcells=False)
                assert v.verdict == "impossible", (A, eps, k, klass)
    assert found > 30


def test_subcell_bounds_never_meet_a_witness():
    rng = random.Random(6)
    found = 0
    for _ in range(25):
        A, eps = rand_cell(rng, 4, 4)
        for klass in ("unrestricted", "stochastic"):
            cert = sm.lower_bound(A, eps, 2, klass, CellCache(A))
            if cert is not None:
                found += 1
                assert wit.search(A, eps, 2, klass) is None
                assert wit.search(A, eps * F(9, 10), 2, klass) is None
    assert found > 5


def test_tampered_or_misapplied_subcell_certificates_fail():
    eps = F(1, 2)
    cert = decide(I4, eps, 2, search=False, decoders=False).certificate
    st = decide(I4, eps, 2, "stochastic", search=False, decoders=False).certificate
    assert recheck(I4, eps, 2, "unrestricted", "impossible", cert)

    def changed(c, **fields):
        return dict(copy.deepcopy(c), **fields)

    bad = [
        changed(cert, rows=[0, 1, 1]),  # repeated row
        changed(cert, rows=[0, 1, 4]),  # out of range
        changed(cert, rows=[]),
        changed(cert, columns=[[0], [1], [1]]),  # overlapping groups
        changed(cert, columns=[[0], [], [1]]),
        changed(cert, rows=[0, 1, 2, 3], columns=[[0], [1], [2], [3]]),  # not smaller
        changed(cert, rows=[1, 2, 3]) if cert["rows"] != [1, 2, 3] else changed(cert, rows=[0, 1, 2]),
        changed(cert, **{"class": "doubly"}),
        changed(cert, certificate={"kind": "nonsense"}),
    ]
    for b in bad:
        assert not recheck(I4, eps, 2, "unrestricted", "impossible", b), b
    # a stochastic sub-cell argument does not speak for the unrestricted class
    assert not recheck(I4, eps, 2, "unrestricted", "impossible", st)
    # ... nor, with deleted columns, for the stochastic class (row sums would break)
    assert not recheck(I4, eps, 2, "stochastic", "impossible", changed(st, columns=[[0], [1], [2]]))
    assert not recheck(I4, eps, 3, "unrestricted", "impossible", cert)  # rank limit of the sub-cell


def test_nested_subcells_and_a_chain_that_does_not_shrink():
    I5 = [[F(int(i == j)) for j in range(5)] for i in range(5)]
    inner = decide(I4, F(1, 2), 2, search=False, decoders=False).certificate
    nested = {"kind": "submatrix", "rows": [0, 1, 2, 3], "columns": [[0], [1], [2], [3]],
              "class": "unrestricted", "certificate": inner}
    assert recheck(I5, F(1, 2), 2, "unrestricted", "impossible", nested)
    deep = nested
    for _ in range(3000):  # sub-cells must shrink: rejected, never an exception
        deep = {"kind": "submatrix", "rows": [0], "columns": [[0]], "class": "unrestricted", "certificate": deep}
    assert not recheck(I5, F(1, 2), 2, "unrestricted", "impossible", deep)


def _chain(n, depth):
    """``depth`` submatrix certificates inside one another on the n x n identity, each dropping a
    row, around a row-norm certificate at k = 0."""
    cert = {"kind": "row-norm", "row": 0}
    for m in range(n - depth, n):
        cert = {"kind": "submatrix", "rows": list(range(m)), "columns": [[j] for j in range(n)],
                "class": "unrestricted", "certificate": cert}
    return cert


def test_nesting_depth_is_bounded():
    """A chain of 399 shrinking sub-cells of a 400 x 400 cell (each level extracts a sub-cell:
    > 60 s and 1.5 GB) is refused at once; MAX_NESTING levels still re-check."""
    import time

    n = 400
    A = [[F(int(i == j)) for j in range(n)] for i in range(n)]
    t = time.perf_counter()
    assert not recheck(A, F(1, 2), 0, "unrestricted", "impossible", _chain(n, n - 1))
    assert time.perf_counter() - t < 5
    from softrank.oracle.subcell_checks import MAX_NESTING

    assert not recheck(A, F(1, 2), 0, "unrestricted", "impossible", _chain(n, MAX_NESTING + 1))
    A = [[F(int(i == j)) for j in range(40)] for i in range(40)]
    assert recheck(A, F(1, 2), 0, "unrestricted", "impossible", _chain(40, MAX_NESTING))


def test_subcells_stop_at_an_lp_budget(monkeypatch):
    """Sub-cells are tried until they have used MAX_LPS LPs in all (sixty 13-row sub-cells of a
    14 x 14 cell, 4,096 orthant LPs each, ran ~20 min; now about 30 s at 4,096 LPs)."""
    import random

    from softrank.oracle.search import submatrix as sm
    from softrank.oracle.search.cell import CellCache

    rng = random.Random(2)
    A = [[F(rng.randint(0, 9), 10) for _ in range(6)] for _ in range(6)]
    full = CellCache(A)
    assert sm.lower_bound(A, F(3), 4, "unrestricted", full) is None  # every sub-cell feasible at eps 3
    assert full.stats["lps"] > 100
    monkeypatch.setattr(sm, "MAX_LPS", 40)
    cut = CellCache(A)
    assert sm.lower_bound(A, F(3), 4, "unrestricted", cut) is None
    assert 40 <= cut.stats["lps"] <= 40 + 16  # one 5-row sub-cell takes 2^4 orthant LPs
