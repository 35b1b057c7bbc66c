"""Branch and bound over factor boxes (proofs/oracle_branch_bound.md): agrees with the direct
reductions wherever both answer, every certificate re-checks exactly, tampering fails, and a
budget that runs out gives outside-scope."""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction as F

import pytest
from helpers import competitor_point, stochastic_rows
from softrank.oracle import recheck
from softrank.oracle.search import branch, decide
from softrank.oracle.branch_checks import check_farkas_rows, relaxation_rows, root_box
from softrank.oracle.search.cell import CellCache

I3 = [[F(int(i == j)) for j in range(3)] for i in range(3)]


def _cell(rng, m, n):
    return stochastic_rows(rng, m, n), F(rng.randint(1, 40), 80)


def sweep(count, seed, budget=5):
    rng = random.Random(seed)
    seen = {"feasible": 0, "impossible": 0, "open": 0}
    for _ in range(count):
        m, n = rng.choice([(3, 3), (2, 3), (3, 2), (4, 3), (3, 4)])
        A, eps = _cell(rng, m, n)
        klass = rng.choice(["unrestricted", "stochastic"])
        k = rng.randint(1, n - 1)
        out = branch.decide(A, eps, k, klass, CellCache(A), budget)
        if out is None:
            seen["open"] += 1
            continue
        assert recheck(A, eps, k, klass, out[0], json.loads(json.dumps(out[1])))
        direct = decide(A, eps, k, klass, search=False, subcells=False)
        assert direct.verdict in (out[0], "outside-scope"), (A, eps, k, klass)
        seen[out[0]] += 1
    return seen


def test_agrees_with_the_direct_reductions():
    seen = sweep(14, seed=8)
    assert seen["feasible"] >= 3 and seen["impossible"] >= 3, seen


@pytest.mark.slow
def test_agrees_with_the_direct_reductions_large():
    seen = sweep(300, seed=9)
    assert seen["feasible"] >= 50 and seen["impossible"] >= 50, seen


def test_decide_uses_it_only_with_a_budget():
    assert decide(I3, F(1, 2), 1, search=False, subcells=False).reduction == "k=1 unrestricted"
    I4 = [[F(int(i == j)) for j in range(4)] for i in range(4)]
    v = decide(I4, F(1, 2), 2, search=False, subcells=False, nerves=False, decoders=False)
    assert v.verdict == "outside-scope"
    v = decide(I4, F(1, 2), 2, search=False, subcells=False, nerves=False, decoders=False, search_budget=1e-9)
    assert v.verdict == "outside-scope" and "budget" in v.note
    v = decide(I4, F(1, 2), 2, search=False, subcells=False, nerves=False, decoders=False, search_budget=60)
    assert v.verdict == "impossible" and v.reduction == "branch-and-bound" and v.rechecked


def _cert(klass="unrestricted", k=1, eps=F(1, 2)):
    out = branch.decide(I3, eps, k, klass, CellCache(I3), 30)
    assert out is not None and out[0] == "impossible"
    return out[1]


def _first_leaf(tree):
    while "y" not in tree:
        tree = tree["low"]
    return tree


def test_tampered_certificates_fail():
    eps, cert = F(1, 2), _cert()
    assert recheck(I3, eps, 1, "unrestricted", "impossible", cert)
    assert recheck(I3, eps, 1, "stochastic", "impossible", cert)  # unrestricted speaks for both
    assert not recheck(I3, eps, 2, "unrestricted", "impossible", cert)  # trees for k' = 1 only
    assert not recheck(I3, F(2), 1, "unrestricted", "impossible", cert)
    bad = copy.deepcopy(cert)
    bad["trees"].pop()
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", bad)
    bad = copy.deepcopy(cert)
    leaf = _first_leaf(bad["trees"][0]["tree"])
    leaf["y"][0][1] = str(F(leaf["y"][0][1]) + F(1, 10 ** 9))
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", bad)
    bad = copy.deepcopy(cert)
    _first_leaf(bad["trees"][0]["tree"])["y"] = []
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", bad)
    bad = copy.deepcopy(cert)
    bad["trees"][0]["tree"] = {"split": ["c", 0, 1, "2"], "low": {"y": []}, "high": {"y": []}}
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", bad)  # split outside the interval
    bad["trees"][0]["tree"]["split"] = ["q", 0, 1, "0"]
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", bad)  # unknown coordinate
    st = _cert("stochastic")
    assert recheck(I3, eps, 1, "stochastic", "impossible", st)
    assert not recheck(I3, eps, 1, "unrestricted", "impossible", st)  # a stochastic argument


def test_relaxation_holds_at_every_true_factorisation():
    """B2: the rows of the root box are satisfied by (Z, C, Z C, |A - B|) of a competitor."""
    rng = random.Random(3)
    for _ in range(20):
        A, _ = _cell(rng, 3, 3)
        z = [[F(rng.randint(0, 8), 8) for _ in range(2)] for _ in range(3)]
        c = {(t, 2): F(rng.randint(-8, 8), 8) for t in range(2)}
        eps, point = competitor_point(A, z, c)
        rows = relaxation_rows(A, eps, "unrestricted", [0, 1], root_box(A, eps, "unrestricted", [0, 1]))
        for coefs, rhs, eq in rows:
            lhs = sum((x * point[v] for v, x in coefs.items()), F(0))
            assert lhs == rhs if eq else lhs <= rhs
        assert not check_farkas_rows(rows, [])


def test_cli_search_budget(tmp_path, capsys):
    from softrank.cli import main

    path = tmp_path / "i4.json"
    path.write_text(json.dumps([[int(i == j) for j in range(4)] for i in range(4)]))
    assert main(["oracle", str(path), "--eps", "1/2", "--rank", "2", "--search-budget", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "impossible"
    for bad in ("-1", "soon", "inf"):
        assert main(["oracle", str(path), "--eps", "1/2", "--rank", "2", "--search-budget", bad]) == 2
        assert "search-budget" in capsys.readouterr().err


def test_checker_counts_pivot_sets_without_listing_them():
    """A tiny certificate naming one 20-column set of a 40-column cell: C(40, 20) ~ 1.4e11 sets are
    counted, not listed (listing them exhausted memory), and the certificate is refused at once."""
    import time

    A = [[F(int(i == j)) for j in range(40)] for i in range(2)]
    cert = {"kind": "branch-and-bound", "class": "unrestricted",
            "trees": [{"columns": list(range(20)), "tree": {"y": []}}]}
    t = time.perf_counter()
    assert not recheck(A, F(1, 4), 20, "unrestricted", "impossible", cert)
    assert time.perf_counter() - t < 5


def test_checker_counts_only_increasing_pivot_sets():
    """As many trees as pivot sets, but one keyed by an unsorted (or out-of-range) set: refused."""
    eps, cert = F(1, 2), _cert(k=2)
    assert recheck(I3, eps, 2, "unrestricted", "impossible", cert)
    for key in ([1, 0], [0, 3], [-1, 0]):
        bad = copy.deepcopy(cert)
        bad["trees"][-1]["columns"] = key
        assert not recheck(I3, eps, 2, "unrestricted", "impossible", bad), key


def test_budget_bounds_a_huge_number_of_pivot_sets():
    """C(30, 15) ~ 1.6e8 pivot sets: the roots are taken one at a time, so the budget ends the search
    (listing every root box first exhausted memory)."""
    import time

    A = [[F(rng_x, 10) for rng_x in range(1, 11)] * 3]
    t = time.perf_counter()
    assert branch.decide(A, F(1, 100), 15, "unrestricted", CellCache(A), 0.2) is None
    assert time.perf_counter() - t < 20
