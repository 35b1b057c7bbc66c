"""Validated brackets versus the exact oracle.

Random small cells with binary64-exact (dyadic) entries, so the validated side (zero-radius
enclosure: the stored binary64 numbers read as exact reals) and the oracle see the same exact A.
Validated L: the largest lower claim proved by Lemma F, P or D certificates that a float64
producer would write; validated U: the smallest rank whose float64 truncated-SVD witness (or
B = A) Lemma U proves.  The oracle's exact r_eps(A) must satisfy L <= r <= U: zero contradictions.
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F

import numpy as np
import pytest

from helpers import exact_enclosure, float64_frobenius_lower, float64_projected
from softrank.oracle.search import profile
from softrank.validated.contractive_decoder import check_contractive_decoder
from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.upper_witness import check_upper_witness


def dyadic_cell(rng: random.Random):
    m, n = rng.randint(1, 4), rng.randint(1, 4)
    if min(m, n) > 3:
        n = 3
    if rng.random() < 0.6:  # row-stochastic with dyadic entries (sums exactly 1)
        rows = []
        for _ in range(m):
            cuts = sorted(rng.randint(0, 64) for _ in range(n - 1))
            parts = [b - a for a, b in zip([0] + cuts, cuts + [64])]
            rows.append([F(p, 64) for p in parts])
    else:
        rows = [[F(rng.randint(-32, 32), 64) for _ in range(n)] for _ in range(m)]
    eps = F(rng.randint(1, 31), 32)
    return rows, eps


def validated_lower(enc, a: np.ndarray, eps: F) -> int:
    m, n = a.shape
    best = 0
    e = float(eps)
    lf = float64_frobenius_lower(a, e)
    for lower in sorted({max(lf, 1), lf + 1}):
        if lower <= min(m, n) and check_frobenius_tail(enc, eps, lower).proved:
            best = max(best, lower)
    rows = np.arange(m, dtype=np.int64)
    sv = np.linalg.svd(a, compute_uv=False)
    for q in range(1, min(m, n) + 1):
        if not sv[q - 1] > 0:  # the producer's W = V_q Sigma_q^{-1} needs sigma_q > 0
            break
        with np.errstate(all="ignore"):
            w, lp = float64_projected(a, rows, q, e)
        if not np.isfinite(w).all():
            continue
        for lower in sorted({max(lp, 1), lp + 1}):
            if lower <= q and check_projected_tail(enc, eps, lower, rows, w).proved:
                best = max(best, lower)
    for p in range(1, min(m, n) + 1):
        for s in itertools.combinations(range(m), p):
            s = np.array(s, dtype=np.int64)
            w = np.linalg.pinv(a[s])
            if check_contractive_decoder(enc, eps, s, w).proved:
                best = max(best, p)
    return best


def validated_upper(enc, a: np.ndarray, eps: F) -> int:
    m, n = a.shape
    if check_upper_witness(enc, a.copy(), np.eye(n), eps).proved:
        top = n
    else:  # pragma: no cover - B = A is exact
        top = None
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    for k in range(1, min(m, n) + 1):
        if check_upper_witness(enc, u[:, :k] * s[:k], vt[:k].T.copy(), eps).proved:
            return min(k, top) if top is not None else k
    return top


def crosscheck(count: int, seed: int):
    rng = random.Random(seed)
    stats = {"cells": 0, "L=r": 0, "U=r": 0, "contradictions": 0}
    for _ in range(count):
        A, eps = dyadic_cell(rng)
        a = np.array([[float(x) for x in row] for row in A], dtype=np.float64)
        assert all(F(float(x)) == x for row in A for x in row)  # binary64-exact entries
        enc = exact_enclosure(a)
        r = profile(A, eps).rank
        assert r is not None
        lo, up = validated_lower(enc, a, eps), validated_upper(enc, a, eps)
        if not lo <= r <= up:
            stats["contradictions"] += 1
        stats["cells"] += 1
        stats["L=r"] += lo == r
        stats["U=r"] += up == r
    return stats


def test_validated_brackets_contain_exact_rank():
    stats = crosscheck(120, seed=4)
    assert stats["contradictions"] == 0, stats
    assert stats["L=r"] > 0 and stats["U=r"] > 0


@pytest.mark.slow
def test_validated_brackets_contain_exact_rank_large():
    stats = crosscheck(1500, seed=40)
    assert stats["contradictions"] == 0, stats
