"""Validated L <= exact r_eps(A) <= validated U on small operators whose exact r_eps is known by
construction:

- block operators (logits c within p blocks, 0 across): A is block-constant, so r <= p (B = A);
  the block decoder satisfies Lemma D exactly in the regime of ``block_rank_is_exact``: r = p;
- identity-like operators (logits c on the diagonal): 2 (n - 1) a_off + eps < 1 gives r = n;
- near-uniform operators with ||A - 1 v^T||_inf <= eps / 2 for the column means v: r = 1.

Every float64 certificate the producer would write (decoder, Frobenius, projected, at the float64
lower end and one above) is replayed; the validated lower end may never exceed r.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from helpers import (
    block_decoder,
    block_logits,
    block_rank_is_exact,
    float64_frobenius_lower,
    float64_projected,
    rowsoftmax_float,
    softmax_enclosure_of,
)
from softrank.validated.contractive_decoder import check_contractive_decoder
from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.upper_witness import check_upper_witness


def _validated_lower(enc, a, eps: Fraction, extra_decoders=()) -> int:
    """Largest claim proved among the producer's certificates (1 is trivial: ||A||_inf = 1 > eps)."""
    best = 1
    e = float(eps)
    lf = float64_frobenius_lower(a, e)
    for lower in {max(lf, 1), lf + 1, lf + 2}:
        if check_frobenius_tail(enc, eps, lower).proved:
            best = max(best, lower)
    m = a.shape[0]
    for rows in (np.arange(m, dtype=np.int64), np.arange(0, m, 2, dtype=np.int64)):
        w, lp = float64_projected(a, rows, min(len(rows), a.shape[1]), e)
        for lower in {max(lp, 1), lp + 1}:
            if check_projected_tail(enc, eps, lower, rows, w).proved:
                best = max(best, lower)
    for rows, w in extra_decoders:
        if check_contractive_decoder(enc, eps, rows, w).proved:
            best = max(best, len(rows))
    return best


@pytest.mark.parametrize("seed", range(10))
def test_block_operators_exact_rank_p(seed):
    rng = np.random.default_rng(500 + seed)
    p = int(rng.integers(1, 6))
    sizes = [int(x) for x in rng.integers(1, 5, size=p)]
    c = float(rng.uniform(4.5, 8))
    eps = Fraction(int(rng.integers(1, 40)), 100)
    if not block_rank_is_exact(sizes, c, eps):
        c += 3.0
    assert block_rank_is_exact(sizes, c, eps)
    h, rl, cl = block_logits(sizes, c, rng)
    a, enc = rowsoftmax_float(h), softmax_enclosure_of(h)
    rows, w = block_decoder(rl, cl, p)
    n = a.shape[0]
    decoders = [(rows, w)]
    for extra in range(min(n, 4)):  # over-claims: p + 1 rows
        if extra not in rows:
            r2 = np.append(rows, extra).astype(np.int64)
            decoders.append((r2, np.linalg.pinv(a[r2])))
    lower = _validated_lower(enc, a, eps, decoders)
    x = (rl[:, None] == np.arange(p)[None, :]).astype(np.float64)
    upper_check = check_upper_witness(enc, x, a[rows].T.copy(), eps)
    assert upper_check.proved
    validated_upper = x.shape[1]
    assert lower <= p <= validated_upper  # exact r = p
    assert lower == p, "the honest block decoder proves the exact rank"


@pytest.mark.parametrize("n,c", [(3, 4.0), (5, 6.0), (8, 7.5), (12, 9.0)])
def test_identity_like_exact_rank_n(n, c):
    h = np.eye(n) * c
    a, enc = rowsoftmax_float(h), softmax_enclosure_of(h)
    ec = Fraction(math.exp(c)) / 2  # certainly below e^c
    a_off_upper = 1 / (ec + n - 1)
    for eps in (Fraction(1, 10), Fraction(1, 4)):
        assert 2 * (n - 1) * a_off_upper + eps < 1  # exact r_eps(A) = n (Lemma D with W = I)
        rows = np.arange(n, dtype=np.int64)
        lower = _validated_lower(enc, a, eps, [(rows, np.eye(n)), (rows, np.linalg.inv(a))])
        assert check_upper_witness(enc, a, np.eye(n), eps).proved  # validated U = n
        assert lower == n


@pytest.mark.parametrize("seed", range(12))
def test_near_uniform_exact_rank_one(seed):
    rng = np.random.default_rng(900 + seed)
    m, n = int(rng.integers(3, 10)), int(rng.integers(3, 10))
    h = rng.normal(size=(m, n)) * rng.uniform(0.02, 0.3)
    a, enc = rowsoftmax_float(h), softmax_enclosure_of(h)
    v = a.mean(axis=0)
    dist = float(np.abs(a - v[None, :]).sum(axis=1).max())
    eps = Fraction(min(0.9, max(2.5 * dist, 0.01)))
    check = check_upper_witness(enc, np.ones((m, 1)), v[:, None], eps)
    assert check.proved  # U = 1, so exact r = 1
    decoders = []
    for p in (2, 3):
        rows = np.arange(p, dtype=np.int64)
        decoders.append((rows, np.linalg.pinv(a[rows])))
    assert _validated_lower(enc, a, eps, decoders) == 1


def _oracle_profile():
    try:
        from softrank.oracle.search.core import profile
    except ImportError:  # pragma: no cover - the oracle is another component
        pytest.skip("softrank.oracle.search.core.profile not available")
    return profile


@pytest.mark.parametrize("shape", [(3, 3), (3, 4), (4, 3), (4, 4)])
def test_random_small_matrices_against_the_exact_oracle(shape):
    """A = a binary64 row-stochastic matrix (rounded softmax rows), read as exact rationals by both
    the oracle and the checkers (zero-radius enclosure): validated L <= exact r <= validated U."""
    from itertools import combinations

    from helpers import exact_enclosure

    profile = _oracle_profile()
    m, n = shape
    rng = np.random.default_rng(sum(shape) * 7 + m)
    compared = 0
    for trial in range(6):
        h = rng.normal(size=(m, n)) * rng.uniform(0.5, 4)
        a = rowsoftmax_float(h)
        enc = exact_enclosure(a)
        for eps in (Fraction(1, 20), Fraction(1, 5), Fraction(2, 5)):
            prof = profile([[Fraction(x) for x in row] for row in a.tolist()], eps)
            lo_exact, up_exact = prof.lower, prof.upper
            decoders = []
            for p in range(2, min(m, n) + 1):
                for rows in combinations(range(m), p):
                    r_ = np.array(rows, dtype=np.int64)
                    decoders.append((r_, np.linalg.pinv(a[r_])))
                    decoders.append((r_, np.linalg.pinv(a[r_]) * 0.9))
            lower = _validated_lower(enc, a, eps, decoders)
            assert lower <= up_exact, (trial, eps, lower, prof.to_json(certificates=False))
            u, s, vt = np.linalg.svd(a)
            for k in range(1, min(m, n) + 1):
                x, y = u[:, :k] * s[:k], vt[:k].T
                if check_upper_witness(enc, x, y, eps).proved:
                    assert k >= lo_exact, (trial, eps, k, prof.to_json(certificates=False))
                    break
            compared += 1
    assert compared == 18
