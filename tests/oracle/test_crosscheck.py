"""The oracle's brackets (both classes, including 4 x 4 cells, where sub-cells and the witness
search decide) against the validated brackets: zero contradictions.

The validated side is the one of tests/soundness/test_oracle_vs_validated.py (loaded from that
file): Lemma F, P and D lower claims and Lemma U upper witnesses on binary64-exact cells.
"""

from __future__ import annotations

import importlib.util
import random
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from softrank.oracle.search import profile

_SOUNDNESS = Path(__file__).resolve().parents[1] / "soundness" / "test_oracle_vs_validated.py"


def _validated():
    spec = importlib.util.spec_from_file_location("oracle_vs_validated_side", _SOUNDNESS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from helpers import exact_enclosure

    return mod.validated_lower, mod.validated_upper, exact_enclosure


def dyadic_cell(rng: random.Random, shapes):
    m, n = rng.choice(shapes)
    rows = []
    for _ in range(m):
        cuts = sorted(rng.randint(0, 64) for _ in range(n - 1))
        rows.append([F(b - a, 64) for a, b in zip([0, *cuts], [*cuts, 64])])
    if rng.random() < 0.3:
        rows = [[x + F(rng.randint(-4, 4), 64) for x in row] for row in rows]
    return rows, F(rng.randint(1, 31), 64)


def crosscheck(count, seed, shapes=((4, 4), (3, 4), (4, 3), (3, 5), (4, 5))):
    lower, upper, enclosure = _validated()
    rng = random.Random(seed)
    stats = {"cells": 0, "exact unrestricted": 0, "exact stochastic": 0, "contradictions": 0}
    for _ in range(count):
        A, eps = dyadic_cell(rng, shapes)
        a = np.array([[float(x) for x in row] for row in A], dtype=np.float64)
        assert all(F(float(x)) == x for row in A for x in row)
        enc = enclosure(a)
        L, U = lower(enc, a, eps), upper(enc, a, eps)
        pu, ps = profile(A, eps), profile(A, eps, "stochastic")
        bad = pu.upper < L or pu.lower > U  # unrestricted bracket disjoint from [L, U]
        if ps.lower is not None:  # stochastic r >= unrestricted r >= L
            bad = bad or ps.upper < L or ps.upper < pu.lower
        stats["contradictions"] += bad
        stats["cells"] += 1
        stats["exact unrestricted"] += pu.rank is not None
        stats["exact stochastic"] += ps.rank is not None
    return stats


def test_oracle_brackets_meet_the_validated_ones():
    stats = crosscheck(30, seed=7)
    assert stats["contradictions"] == 0, stats
    assert stats["exact unrestricted"] >= 25, stats


@pytest.mark.slow
def test_oracle_brackets_meet_the_validated_ones_large():
    stats = crosscheck(600, seed=70)
    assert stats["contradictions"] == 0, stats
