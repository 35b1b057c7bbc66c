"""A small demonstration store (synthetic softmax operators, no model needed), with float64
truncated-SVD witnesses and Frobenius-tail certificates (``softrank demo``)."""

from __future__ import annotations

import numpy as np

from softrank.fastpath.bracket.matrix import BUDGETS, verdict
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter, write_index

DEMO_EPS = (0.15, 0.25, 0.35)


def tsvd_witness(a: np.ndarray, eps: float):
    """Smallest truncated-SVD rank whose float64 error is below eps (with a 1e-9 relative margin)."""
    u, s, vt = np.linalg.svd(a)
    lo, hi = 0, min(a.shape)
    while lo < hi:
        k = (lo + hi) // 2
        err = np.abs(a - (u[:, :k] * s[:k]) @ vt[:k]).sum(axis=1).max()
        lo, hi = (k + 1, hi) if err > eps * (1 - 1e-9) else (lo, k)
    return u[:, :lo] * s[:lo], vt[:lo].T.copy(), s


def frobenius_lower(s: np.ndarray, m: int, eps: float) -> int:
    """Largest L with sum_{i >= L} sigma_i^2 > m eps^2 (float64; r >= L by Lemma F), at least 1."""
    tails = np.cumsum((s**2)[::-1])[::-1]  # tails[k] = sum_{i >= k} sigma_i^2
    ok = [k + 1 for k in range(len(s)) if tails[k] > m * eps**2 * (1 + 1e-9)]
    return max(ok, default=1)


def build_demo_store(store, operators: int = 8, size: int = 96, seed: int = 0) -> list[str]:
    """``operators`` synthetic size x size operators (low-rank logits plus noise) in ``store``."""
    rng = np.random.default_rng(seed)
    ids = []
    for i in range(operators):
        r = int(rng.integers(2, 9))
        h = 4.0 * rng.normal(size=(size, r)) @ rng.normal(size=(r, size)) / np.sqrt(r) + 0.5 * rng.normal(size=(size, size))
        a = rowsoftmax64(h)
        rid = f"demo-{i:02d}"
        with RecordWriter(store, rid, {"model": "synthetic", "family": "synthetic", "layer": 0, "head": i,
                                       "producer": "softrank demo", "seed": seed}) as w:
            w.set_logits(h)
            w.set_a_hat(a)
            for eps in DEMO_EPS:
                x, y, s = tsvd_witness(a, eps)
                lower = frobenius_lower(s, size, eps)
                upper = x.shape[1]
                verdicts = {k: verdict(k, lower, upper) for k in BUDGETS}
                w.add_tolerance(eps, upper=(x, y, "tsvd"),
                                lower=[{"kind": "frobenius", "lower": lower}] if lower > 1 else [],
                                float64={"lower": lower, "upper": upper, "verdicts": verdicts})
        ids.append(rid)
    write_index(store)
    return ids
