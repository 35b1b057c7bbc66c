"""``softrank demo``: build a small demonstration store (synthetic softmax operators, no model
needed), with float64 truncated-SVD witnesses and Frobenius-tail certificates, then replay it."""

from __future__ import annotations

import numpy as np

from softrank.cli.replay import replay_store
from softrank.fastpath.writer import RecordWriter, write_index

DEMO_EPS = (0.15, 0.25, 0.35)


def configure(parser) -> None:
    parser.add_argument("--out", default="softrank-demo", help="output folder (store/ and replay/ inside)")
    parser.add_argument("--operators", type=int, default=8, help="number of synthetic operators")
    parser.add_argument("--size", type=int, default=96, help="m = N of each operator")
    parser.add_argument("--seed", type=int, default=0)


def softmax64(h: np.ndarray) -> np.ndarray:
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


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
    rng = np.random.default_rng(seed)
    ids = []
    for i in range(operators):
        r = int(rng.integers(2, 9))
        h = 4.0 * rng.normal(size=(size, r)) @ rng.normal(size=(r, size)) / np.sqrt(r) + 0.5 * rng.normal(size=(size, size))
        a = softmax64(h)
        rid = f"demo-{i:02d}"
        w = RecordWriter(store, rid, {"model": "synthetic", "family": "synthetic", "layer": 0, "head": i,
                                      "producer": "softrank demo", "seed": seed})
        w.set_logits(h)
        w.set_a_hat(a)
        for eps in DEMO_EPS:
            x, y, s = tsvd_witness(a, eps)
            lower = frobenius_lower(s, size, eps)
            upper = x.shape[1]
            verdicts = {k: ("feasible" if upper <= k else "impossible" if lower > k else "unresolved") for k in (8, 16, 32)}
            w.add_tolerance(eps, upper=(x, y, "tsvd"), lower=[{"kind": "frobenius", "lower": lower}] if lower > 1 else [],
                            float64={"lower": lower, "upper": upper, "verdicts": verdicts})
        w.commit()
        ids.append(rid)
    write_index(store)
    return ids


def run(args) -> int:
    from pathlib import Path

    out = Path(args.out)
    ids = build_demo_store(out / "store", args.operators, args.size, args.seed)
    print(f"demo store: {len(ids)} synthetic operators ({args.size} x {args.size}) in {out / 'store'}")
    summary = replay_store(out / "store", out / "replay")
    print(summary.line())
    return 0
