"""A small demonstration store (synthetic softmax operators, no model needed), with float64
truncated-SVD witnesses and Frobenius-tail certificates (``softrank demo``).

Two styles of operator:

- ``"heads"`` (what ``softrank demo`` writes): a grid of ``layers x HEADS`` synthetic heads.  Three
  heads in four are *sharp*: each query row puts most of its weight on one of r anchor keys
  (logits ``beta`` above a weak diffuse background, r in 2..8, beta in 7..12), so A is close to
  rank r and most brackets are resolved (many closed exactly, L = U = r).  Every fourth head
  (head 3) is *diffuse*, as in the ``"diffuse"`` style, and its brackets stay wide: the page shows
  both kinds.
- ``"diffuse"`` (the default of :func:`build_demo_store`, kept as it was: the golden store
  ``tests/golden`` and many tests were made with it): low-rank logits plus noise, softened by the
  softmax; no bracket is resolved.
"""

from __future__ import annotations

import numpy as np

from softrank.fastpath.bracket.matrix import BUDGETS, verdict
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter, write_index

DEMO_EPS = (0.15, 0.25, 0.35)
STYLES = ("diffuse", "heads")
DEMO_STYLE = "heads"  # softrank demo's
HEADS = 4  # heads per layer in the "heads" style; head HEADS - 1 is the diffuse one
SHARP_BETA = (7.0, 12.0)  # logit lift of the anchor key, uniform in this range
BACKGROUND = 0.25  # weight of the diffuse logits under a sharp head


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


def _diffuse(rng, size: int) -> np.ndarray:
    r = int(rng.integers(2, 9))
    return 4.0 * rng.normal(size=(size, r)) @ rng.normal(size=(r, size)) / np.sqrt(r) + 0.5 * rng.normal(size=(size, size))


def _sharp(rng, size: int) -> np.ndarray:
    """Each row lifts one of r anchor keys by beta over a weak diffuse background: A is near rank r."""
    h = BACKGROUND * _diffuse(rng, size)
    r = int(rng.integers(2, 9))
    anchors = rng.choice(size, size=min(r, size), replace=False)
    picks = anchors[rng.integers(0, len(anchors), size=size)]
    h[np.arange(size), picks] += rng.uniform(*SHARP_BETA)
    return h


def build_demo_store(store, operators: int = 8, size: int = 96, seed: int = 0, style: str = "diffuse") -> list[str]:
    """``operators`` synthetic size x size operators in ``store`` (``style``: see the module
    docstring; ``softrank demo`` uses ``DEMO_STYLE``)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    rng = np.random.default_rng(seed)
    ids = []
    for i in range(operators):
        if style == "heads":
            layer, head = divmod(i, HEADS)
            h = _diffuse(rng, size) if head == HEADS - 1 else _sharp(rng, size)
        else:
            layer, head = 0, i
            h = _diffuse(rng, size)
        a = rowsoftmax64(h)
        rid = f"demo-{i:02d}"
        with RecordWriter(store, rid, {"model": "synthetic", "family": "synthetic", "layer": layer, "head": head,
                                       "producer": "softrank demo", "seed": seed}) as w:
            w.set_logits(h)
            w.set_a_hat(a)
            for eps in DEMO_EPS:
                x, y, s = tsvd_witness(a, eps)
                lower = frobenius_lower(s, size, eps)
                upper = x.shape[1]
                verdicts = {k: verdict(k, lower, upper) for k in BUDGETS}
                # "heads": the exact decimal 0.15 (as `softrank bracket --eps 0.15` writes it); "diffuse":
                # the binary64 number, as before
                w.add_tolerance(repr(eps) if style == "heads" else eps, upper=(x, y, "tsvd"),
                                lower=[{"kind": "frobenius", "lower": lower}] if lower > 1 else [],
                                float64={"lower": lower, "upper": upper, "verdicts": verdicts})
        ids.append(rid)
    write_index(store)
    return ids
