"""Rank search (untrusted, float64): per eps, the least rank k at which a construction of
``fastpath/upper/constructions.py`` gives a checked witness.

Every candidate is checked in max-row-l1: a witness satisfies ``||A - X Y^T||_inf <= eps - MARGIN``
in float64.  The binary search assumes the error falls with k, which is how it chooses where to
look, never how it decides that a witness is valid.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from softrank.fastpath.upper.constructions import CONSTRUCTIONS, TARGET_DEPENDENT, build_tsvd
from softrank.fastpath.float64 import MARGIN, max_row_l1
from softrank.fastpath.operator_cache import OperatorCache



@dataclass
class Witness:
    rank: int
    X: np.ndarray
    Y: np.ndarray
    construction: str
    error: float  # float64 ||A - X Y^T||_inf


@dataclass
class SearchLog:
    evaluations: dict[int, float] = field(default_factory=dict)  # k -> float64 error


def tsvd_scan(op: OperatorCache, eps_list, k_max: int | None = None) -> dict[float, Witness | None]:
    """Truncated SVD at every rank 0..k_max (incremental residual): the least checked k per eps."""
    U, s, Vt = op.svd
    A = op.A
    k_max = len(s) if k_max is None else min(k_max, len(s))
    targets = {eps: eps - MARGIN for eps in eps_list}
    found: dict[float, Witness | None] = {eps: None for eps in eps_list}
    R = A.copy()
    for k in range(0, k_max + 1):
        if k > 0:
            R -= s[k - 1] * np.outer(U[:, k - 1], Vt[k - 1])
        err = float(np.abs(R).sum(axis=1).max())
        for eps, tgt in targets.items():
            if found[eps] is None and err <= tgt:
                X, Y = build_tsvd(op, k)
                e = max_row_l1(A, X, Y)  # recheck from the factors actually stored
                if e <= tgt:
                    found[eps] = Witness(k, X, Y, "tsvd", e)
        if all(w is not None for w in found.values()):
            break
    return found


class _Evaluator:
    """Candidates of one construction by rank, each built once (a target-dependent construction
    is rebuilt when asked for a smaller target than the cached candidate missed)."""

    def __init__(self, op: OperatorCache, name: str, log: SearchLog):
        self.op, self.name, self.log = op, name, log
        self.build = CONSTRUCTIONS[name]
        self.target_dependent = name in TARGET_DEPENDENT
        self.cache: dict[int, tuple[float, np.ndarray, np.ndarray, float]] = {}

    def __call__(self, k: int, target: float):
        hit = self.cache.get(k)
        if hit is None or (self.target_dependent and hit[0] > target and hit[3] > target):
            X, Y = self.build(self.op, k, target)
            X = np.ascontiguousarray(X, dtype=np.float64)
            Y = np.ascontiguousarray(Y, dtype=np.float64)
            self.cache[k] = hit = (max_row_l1(self.op.A, X, Y), X, Y, target)
            self.log.evaluations[k] = hit[0]
        return hit[:3]


def _least_rank(evaluate: _Evaluator, a: int, b: int, tgt: float) -> Witness | None:
    """Binary search over [a, b] for the least rank whose candidate meets ``tgt``."""
    if a > b:
        return None
    e, X, Y = evaluate(b, tgt)
    if e > tgt:
        return None
    best = Witness(b, X, Y, evaluate.name, e)
    while a < b:
        mid = (a + b) // 2
        e, X, Y = evaluate(mid, tgt)
        if e <= tgt:
            b = mid
            best = Witness(mid, X, Y, evaluate.name, e)
        else:
            a = mid + 1
    return best


def search_ranks(op: OperatorCache, name: str, eps_list, lo: dict, hi: dict,
                 log: SearchLog | None = None) -> dict[float, Witness | None]:
    """Least rank per eps in [lo[eps], hi[eps]] at which construction ``name`` gives a checked
    witness (binary search; every evaluated candidate is checked in max-row-l1)."""
    evaluate = _Evaluator(op, name, log or SearchLog())
    out: dict[float, Witness | None] = {}
    for eps in sorted(eps_list, reverse=True):
        a, b = max(0, int(lo[eps])), min(op.p, int(hi[eps]))
        out[eps] = _least_rank(evaluate, a, b, eps - MARGIN)
    return out
