"""Lower certificates (untrusted, float64), in the record fields of docs/record-format.md.

Each certificate proves ``r_eps(A) >= L`` once the validated replay confirms it (the lemmas are
in proofs/: ``lemma_F_frobenius_tail.md``, ``lemma_P_projected_tail.md``,
``lemma_D_contractive_decoder.md``):

- ``frobenius`` (Lemma F): ``sum_{i>k} sigma_i(A)^2 > m eps^2`` gives L = k + 1;
- ``projected`` (Lemma P): rows S, W (N x q) a truncated pseudoinverse ``V_q Sigma_q^{-1}`` of
  A_S, ``sum_{i>k} sigma_i(A_S W)^2 > s eps^2 omega^2`` gives L = k + 1;
- ``decoder`` (Lemma D): rows S (p of them) and W (N x p) with
  ``||A_S W - I_p||_inf + eps max_j ||W_j||_1 < 1`` gives L = p; found by ``fastpath/lower/decoder.py``.

Every certificate returned satisfies its inequality in float64 with a relative margin of at
least ``MARGIN`` so that the validated replay (which charges rounding, singular-value accuracy and
chi ~ 1e-15) confirms it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from softrank.fastpath.float64 import MARGIN
from softrank.fastpath.operator_cache import OperatorCache


@dataclass
class Certificate:
    kind: str
    lower: int
    rows: np.ndarray | None = None
    W: np.ndarray | None = None
    margin: float = 0.0  # float64 slack of the inequality (diagnostic only)
    lp_pending: bool = False  # decoder W from the set oracle: the decoder LP may give a better W

    def as_record(self) -> dict:
        out: dict = {"kind": self.kind, "lower": int(self.lower)}
        if self.rows is not None:
            out["rows"] = np.asarray(self.rows, dtype=np.int64)
        if self.W is not None:
            out["W"] = np.asarray(self.W, dtype=np.float64)
        out["float64_margin"] = float(self.margin)
        return out


# ----------------------------------------------------------------------------------------------
# Frobenius and projected tails
# ----------------------------------------------------------------------------------------------


def tail_lower(s: np.ndarray, threshold: float) -> tuple[int, float]:
    """Largest L = k + 1 with ``sum_{i>k} s_i^2 > threshold`` (with margin); 0 if none.
    Returns (L, relative slack)."""
    tails = np.cumsum((np.asarray(s, dtype=np.float64) ** 2)[::-1])[::-1]  # tails[k] = sum_{i>=k+1}
    ok = np.nonzero(tails > threshold * (1 + 1e-6) + 1e-12)[0]
    if ok.size == 0:
        return 0, 0.0
    k = int(ok.max())
    return k + 1, float(tails[k] / threshold - 1) if threshold > 0 else float("inf")


def frobenius_certificate(op: OperatorCache, eps: float) -> Certificate | None:
    _, s, _ = op.svd
    L, slack = tail_lower(s, op.m * eps * eps)
    return Certificate("frobenius", L, margin=slack) if L >= 1 else None


def projected_certificate(op: OperatorCache, eps: float) -> Certificate | None:
    """S = all rows, W = V_q Sigma_q^{-1} for a few q; the best L."""
    A = op.A
    _, s, Vt = op.svd
    best = None
    qs = sorted({q for q in (4, 8, 16, 32, 64, 128, op.p) if q <= op.p})
    for q in qs:
        if s[q - 1] <= s[0] * 1e-10:
            continue
        W = Vt[:q].T / s[:q]
        sv = np.linalg.svd(A @ W, compute_uv=False)
        omega2 = float(np.max(np.sum(W * W, axis=1)))
        L, slack = tail_lower(sv, op.m * eps * eps * omega2)
        if L >= 1 and (best is None or L > best.lower):
            best = Certificate("projected", L, rows=np.arange(op.m, dtype=np.int64), W=W, margin=slack)
    return best
