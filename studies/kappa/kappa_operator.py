"""One operator of ``softrank study kappa`` (``kappa_study.py``): tau(T_r) in float64 and validated,
kappa(T_r) and kappa(C) bracketed, kappa_bal and the native Gamma, at the fixed ranks and at the
least rank with tau(T_r) < eps per tolerance (untrusted orchestration; every bound reported as
proved comes from ``softrank.validated``)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

DEFAULT_RANKS = (2, 4, 8, 16)
KAPPA_TOL = 1e-5


def column_weights(f: np.ndarray) -> np.ndarray:
    """w[j, j'] = max_i (F_ij - F_ij') (the column graph of the cycle lemma)."""
    n = f.shape[1]
    w = np.empty((n, n))
    for j in range(n):
        w[j] = (f[:, [j]] - f).max(0)
    return w


def column_term(f: np.ndarray, lam: float) -> np.ndarray:
    """Longest-path potentials: c_j - c_j' >= w[j, j'] - lam for all j, j' (Bellman-Ford), so that
    max_i osc(F_i - c) <= lam when lam is at least the maximum cycle mean (float, untrusted)."""
    w = column_weights(f) - (lam * (1 + 1e-12) + 1e-15)
    c = np.zeros(f.shape[1])
    for _ in range(f.shape[1]):
        new = np.maximum(c, (c[None, :] + w).max(1))
        if np.array_equal(new, c):
            break
        c = new
    return c


def tau_float(h: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> float:
    from softrank.studies.theorem.tau_check import max_mean_cycle

    return 2 * math.tanh(max(max_mean_cycle(h - x0 @ y0.T)[0], 0.0) / 4)


def tau_validated(balls, h: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> dict:
    """tau_lower <= tau(X0 Y0^T) <= tau_upper, both from validated/tau.py."""
    from softrank.studies.theorem.tau_check import max_mean_cycle
    from softrank.validated.balls import lower_fraction
    from softrank.validated.tau import check_tau_bound, q_lower_cycle, tau_from_q_ball

    f = h - x0 @ y0.T
    lam, rows, cols = max_mean_cycle(f)
    chk = check_tau_bound(balls, x0, y0, column_term(f, lam))
    lo = tau_from_q_ball(q_lower_cycle(balls, x0, y0, rows, cols))
    return {"tau_float": 2 * math.tanh(max(lam, 0.0) / 4), "tau_upper": chk.tau_hat_upper,
            "tau_lower": max(0.0, float(lower_fraction(lo))) if lo.is_finite() else 0.0,
            "tau_outcome": chk.check.outcome.value}


class _Operator:
    """One record's float data: logits, C, its SVD, rank, and cached float tau per rank."""

    def __init__(self, rec):
        from softrank.studies.kappa.kappa_full import numerical_rank
        from softrank.studies.theorem.record_logits import double_centre, logits_float

        self.rec = rec
        self.h = logits_float(rec)
        self.u, self.s, self.vt = np.linalg.svd(double_centre(self.h), full_matrices=False)
        self.rank = max(1, numerical_rank(self.s))
        self.taus: dict[int, float] = {}

    def factors(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        g = np.sqrt(self.s[:r])
        return np.ascontiguousarray(self.u[:, :r] * g), np.ascontiguousarray(self.vt[:r].T * g)

    def tau(self, r: int) -> float:
        if r >= self.rank:
            return 0.0
        if r not in self.taus:
            self.taus[r] = tau_float(self.h, *self.factors(r))
        return self.taus[r]

    def rank_for(self, eps: float) -> int:
        """The least r with float tau(T_r) < eps, by bisection on [1, rank C]."""
        lo, hi = 0, self.rank
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.tau(mid) < eps else (mid, hi)
        return hi


def _bal(x0: np.ndarray, y0: np.ndarray) -> dict:
    from softrank.studies.theorem.kappa_sdp import chebyshev_centre
    from softrank.validated import kappa_certificates as kc
    from softrank.validated.balls import float_at_least

    cx, rx, _ = chebyshev_centre(x0)
    cy, ry, _ = chebyshev_centre(y0)
    return {"kappa_bal": rx * ry, "kappa_bal_upper": float_at_least(kc.radius_upper(x0, cx) * kc.radius_upper(y0, cy))}


def rank_entry(op: _Operator, r: int, balls, full: dict) -> dict:
    """tau, kappa and kappa_bal of T_r (r = rank C: C itself, tau = 0 exactly)."""
    from softrank.studies.kappa.kappa_full import bracket_kappa_eg

    t0 = time.perf_counter()
    x0, y0 = op.factors(min(r, op.rank))
    entry = {"r": r, "is_C": r >= op.rank}
    if entry["is_C"]:
        entry.update(tau_float=0.0, tau_upper=0.0, tau_lower=0.0, tau_outcome="exact (T = C)")
        kap = full
    else:
        entry.update(tau_validated(balls, op.h, x0, y0))
        kap = bracket_kappa_eg(x0, y0, tol=KAPPA_TOL)
    entry.update(kappa_lower=kap["lower"], kappa_upper=kap["upper"], kappa_rel_gap=kap["rel_gap"],
                 kappa_lower_validated=kap["lower_validated"])
    entry.update(_bal(x0, y0))
    entry["seconds"] = time.perf_counter() - t0
    return entry


def _gamma(rec) -> dict:
    if rec.form != "qk" or rec.bias is not None:
        return {"gamma": None, "gamma_upper": None,
                "gamma_note": "logits record: no native factorization" if rec.form == "logits"
                else "additive bias: C is not P_m (beta Q K^T) P_N"}
    from softrank.studies.theorem.kappa import gamma_native

    g, g_up = gamma_native(rec.queries, rec.keys, float(rec.scale))
    return {"gamma": g, "gamma_upper": g_up, "gamma_note": ""}


def operator_study(folder: str, eps_list: list[float], ranks=DEFAULT_RANKS) -> dict:
    """Everything the study needs from one record (one JSON-ready dict)."""
    from softrank.studies.kappa.kappa_full import kappa_c_record
    from softrank.studies.theorem.record_logits import logits_balls_of
    from softrank.replay.reader import read_record
    from softrank.replay.support import refuse_masked

    t0 = time.perf_counter()
    rec = read_record(Path(folder))
    refuse_masked(rec)
    op, balls = _Operator(rec), logits_balls_of(rec)
    full = kappa_c_record(rec, tol=KAPPA_TOL)
    entries: dict[int, dict] = {}

    def entry(r):
        if r not in entries:
            entries[r] = rank_entry(op, r, balls, full)
        return entries[r]

    for r in ranks:
        entry(min(r, op.rank))
    r_star = {}
    for eps in eps_list:
        r = op.rank_for(eps)
        while entry(r)["tau_upper"] >= eps and r < op.rank:
            r += 1
        r_star[repr(float(eps))] = r
    prov = rec.provenance
    out = {"record_id": rec.record_id, "family": prov.get("family"), "model": prov.get("model"),
           "source_id": prov.get("source_id"), "layer": prov.get("layer"), "head": prov.get("head"),
           "m": rec.shape[0], "N": rec.shape[1], "form": rec.form, "rank_C": op.rank,
           "ranks_requested": list(ranks), "fixed_ranks": [min(r, op.rank) for r in ranks], "r_star": r_star,
           "kappa_C": full, "ranks": [entries[r] for r in sorted(entries)], **_gamma(rec)}
    out["seconds"] = time.perf_counter() - t0
    return json.loads(json.dumps(out, default=_jsonable))


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    raise TypeError(type(v))
