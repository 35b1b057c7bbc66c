"""The six kept cells: stored exact verdicts and certificates.

The stored certificates are re-checked exactly with no LP solver involved; then the oracle
re-derives every stored verdict and profile.  ``special_unres1_stoch2`` was found by search
(tests/cells/make_cells.py): its unrestricted r_eps is 1 and its stochastic r_eps is 2, each proved
both ways (impossible one rank below, feasible at the rank).
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest
from softrank.oracle import checks, recheck
from softrank.oracle.search import decide, profile

CELLS = sorted((Path(__file__).parent / "cells").glob("*.json"))


def load(path):
    cell = json.loads(path.read_text())
    A = [[F(x) for x in row] for row in cell["A"]]
    return cell, A, F(cell["eps"])


def test_six_cells_kept():
    assert len(CELLS) == 6


@pytest.mark.parametrize("path", CELLS, ids=lambda p: p.stem)
def test_stored_certificates_recheck_without_any_solver(path, monkeypatch):
    from softrank.oracle.search import lp as xlp

    def no_lp(*a, **k):
        raise AssertionError("re-checking a stored certificate must not solve an LP")

    monkeypatch.setattr(xlp, "solve", no_lp)
    monkeypatch.setattr(xlp, "feasibility", no_lp)
    cell, A, eps = load(path)
    assert cell["verdicts"]
    for v in cell["verdicts"]:
        assert recheck(A, eps, v["k"], v["class"], v["verdict"], v["certificate"]), (path.stem, v["k"], v["class"])


@pytest.mark.parametrize("path", CELLS, ids=lambda p: p.stem)
def test_oracle_rederives_stored_verdicts(path):
    cell, A, eps = load(path)
    for v in cell["verdicts"]:
        d = decide(A, eps, v["k"], v["class"])
        assert d.verdict == v["verdict"] and d.rechecked
    for klass, want in cell["profiles"].items():
        p = profile(A, eps, klass)
        assert (p.lower, p.upper, p.rank) == (want["lower"], want["upper"], want["rank"])
        assert {str(k): str(t) for k, t in p.thresholds.items()} == want["thresholds"]


def test_special_cell_unrestricted_1_stochastic_2_proved_both_ways():
    cell, A, eps = load(Path(__file__).parent / "cells" / "special_unres1_stoch2.json")
    got = {(v["class"], v["k"]): v for v in cell["verdicts"]}
    # unrestricted r = 1: no rank-0 matrix (row norm), an exact rank-1 witness
    assert got[("unrestricted", 0)]["verdict"] == "impossible"
    assert got[("unrestricted", 1)]["verdict"] == "feasible"
    assert got[("unrestricted", 1)]["certificate"]["kind"] == "witness"
    # stochastic r = 2: a dual certificate excludes every 1 v^T, an exact stochastic rank-2 witness
    assert got[("stochastic", 1)]["verdict"] == "impossible"
    assert got[("stochastic", 1)]["certificate"]["kind"] == "rank1-stochastic-dual"
    assert got[("stochastic", 2)]["verdict"] == "feasible"
    w = got[("stochastic", 2)]["certificate"]
    assert checks.check_witness(A, eps, 2, "stochastic", w)
    assert not checks.check_witness(A, eps, 1, "stochastic", w)
    assert cell["profiles"]["unrestricted"]["rank"] == 1 and cell["profiles"]["stochastic"]["rank"] == 2
    # the stochastic rank-1 threshold exceeds eps, the unrestricted rank-1 witness is within eps
    assert F(cell["profiles"]["stochastic"]["thresholds"]["1"]) > eps


def test_boundary_cell_is_exactly_at_the_threshold():
    cell, A, eps = load(Path(__file__).parent / "cells" / "boundary2x2.json")
    assert F(cell["profiles"]["unrestricted"]["thresholds"]["1"]) == eps == F(1, 3)
    assert decide(A, eps - F(1, 10 ** 30), 1).verdict == "impossible"
