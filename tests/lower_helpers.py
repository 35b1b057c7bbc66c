"""Shared constructions for the tests/test_lower_*.py files (not a test module).

- ``exact_svd_matrix``: M = Q1 diag(d) Q2^T with rational orthogonal Q1, Q2 (products of
  Householder reflections I - 2 v v^T / v^T v with integer v), so sigma(M) = sorted |d| exactly.
- ``softmax_enclosure_of``: the validated enclosure of rowsoftmax(H) for float logits.
- float64 producers of lower certificates (untrusted, like the fast path would be).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure


def householder_product(n: int, count: int, rng: np.random.Generator) -> fmpq_mat:
    """Exact rational orthogonal n x n matrix: product of ``count`` Householder reflections."""
    q = fmpq_mat(n, n)
    for i in range(n):
        q[i, i] = 1
    for _ in range(count):
        v = [int(x) for x in rng.integers(-4, 5, size=n)]
        if not any(v):
            v[0] = 1
        vv = sum(x * x for x in v)
        h = fmpq_mat(n, n)
        for i in range(n):
            vi2 = fmpq(2 * v[i], vv)
            for j in range(n):
                h[i, j] = (1 if i == j else 0) - vi2 * v[j]
        q = q * h
    return q


def exact_svd_matrix(a: int, b: int, d: list[Fraction], rng: np.random.Generator, count: int = 2):
    """(M exact fmpq_mat a x b, exact singular values sorted decreasing) with M = Q1 D Q2^T."""
    p = len(d)
    assert p <= min(a, b)
    q1 = householder_product(a, count, rng)
    q2 = householder_product(b, count, rng)
    dm = fmpq_mat(a, b)
    for i, x in enumerate(d):
        dm[i, i] = fmpq(x.numerator, x.denominator)
    m = q1 * dm * q2.transpose()
    sing = sorted((abs(x) for x in d), reverse=True) + [Fraction(0)] * (min(a, b) - p)
    return m, sing


def fmpq_mat_to_float(m: fmpq_mat) -> np.ndarray:
    """Entrywise round-to-nearest (Python's float(Fraction) is correctly rounded)."""
    rows = m.tolist()
    return np.array([[float(Fraction(int(x.p), int(x.q))) for x in row] for row in rows], dtype=np.float64)


def softmax_enclosure_of(h: np.ndarray):
    return rowsoftmax_enclosure(logits_balls(logits=h))


def rowsoftmax_float(h: np.ndarray) -> np.ndarray:
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def float64_decoder(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """W = (A_S restricted to columns ...) pseudo-inverse: A_S W ~ I (untrusted float64)."""
    return np.linalg.pinv(a[rows])


def float64_decoder_sum(a: np.ndarray, rows: np.ndarray, w: np.ndarray, eps: float) -> float:
    p = len(rows)
    return float(np.abs(a[rows] @ w - np.eye(p)).sum(axis=1).max() + eps * np.abs(w).sum(axis=1).max())


def float64_frobenius_lower(a: np.ndarray, eps: float) -> int:
    """Largest L with sum_{i >= L} sigma_i^2 > m eps^2 in float64 (0 if none)."""
    m = a.shape[0]
    s = np.linalg.svd(a, compute_uv=False)
    tails = np.cumsum((s ** 2)[::-1])[::-1]  # tails[k] = sum_{i>=k} s_i^2 (0-based)
    ok = np.nonzero(tails > m * eps * eps)[0]
    return int(ok.max()) + 1 if ok.size else 0


def float64_projected(a: np.ndarray, rows: np.ndarray, q: int, eps: float):
    """(W = V_q Sigma_q^{-1} of A_S, float64 lower L) for Lemma P."""
    a_s = a[rows]
    _, s, vt = np.linalg.svd(a_s, full_matrices=False)
    w = vt[:q].T / s[:q]
    m_ = a_s @ w
    sv = np.linalg.svd(m_, compute_uv=False)
    omega2 = float(np.max(np.sum(w * w, axis=1)))
    tails = np.cumsum((sv ** 2)[::-1])[::-1]
    ok = np.nonzero(tails > len(rows) * eps * eps * omega2)[0]
    return w, (int(ok.max()) + 1 if ok.size else 0)
