"""Gauge audit: for random diagonal and dense gauges S (Q' = fl(Q S), K' = fl(K S^-T)) the operator
A, the double-centred logits C, tau and the kappa(C) lower bound stay (validated), while the native
Gamma of the factorization moves."""

from __future__ import annotations

import math
import time
import zlib

import numpy as np
from flint import arb, arb_mat

from softrank.studies.theorem.kappa_sdp import balanced_factors
from softrank.studies.theorem.kappa import gamma_native, uniform_dual_lower
from softrank.studies.theorem.record_logits import double_centre, logits_float
from softrank.studies.theorem.tau_check import q_lp
from softrank.validated.balls import upper_fraction
from softrank.validated.precision import working_precision


def random_gauges(d: int, rng) -> list[tuple[str, np.ndarray]]:
    diag = np.diag(np.exp(rng.uniform(-2, 2, d)))
    dense = rng.standard_normal((d, d)) / math.sqrt(d) + np.eye(d)
    return [("diagonal", diag), ("dense", dense)]


def _delta_logits_upper(q1, k1, q2, k2, scale) -> tuple[float, float]:
    """Upper bounds on max_i osc(H2_i - H1_i) and max |H2 - H1| in balls (exact products)."""
    with working_precision("gauge"):
        def h(q, k):
            return (arb_mat(q.shape[0], q.shape[1], q.ravel().tolist())
                    * arb_mat(k.shape[1], k.shape[0], np.ascontiguousarray(k.T).ravel().tolist())) * arb(float(scale))
        diff = (h(q2, k2) - h(q1, k1)).tolist()
        osc_max, abs_max = arb(0), arb(0)
        for row in diff:
            hi, lo = row[0], row[0]
            for v in row[1:]:
                hi, lo = hi.max(v), lo.min(v)
                abs_max = abs_max.max(abs(v))
            abs_max = abs_max.max(abs(row[0]))
            osc_max = osc_max.max(hi - lo)
    return float(upper_fraction(osc_max)), float(upper_fraction(abs_max))


def _tau_lp(c: np.ndarray, r: int) -> float:
    """Float tau of the rank-r truncation of C (LP column term)."""
    x, y = balanced_factors(c, r)
    return 2 * math.tanh(q_lp(c - x @ y.T)[0] / 4)


def _gauge_row(rec, r: int, name: str, s: np.ndarray, frame0: dict, tau0: float | None) -> dict:
    t0 = time.perf_counter()
    q, k, beta = rec.queries, rec.keys, float(rec.scale)
    q2 = q @ s
    k2 = k @ np.linalg.inv(s).T
    osc_up, abs_up = _delta_logits_upper(q, k, q2, k2, beta)
    g1, g1_up = gamma_native(q2, k2, beta)
    kap1 = uniform_dual_lower(q2, k2, beta)
    g0, g0_up, kap0 = frame0["gamma"], frame0["gamma_upper"], frame0["kappa"]
    row = {
        "record": rec.record_id, "gauge": name, "cond_S": float(np.linalg.cond(s)),
        # 2 tanh(x/4) <= x/2 and x/2, 4 y are exact in binary64: both stay upper bounds.
        "A_change_validated_upper": osc_up / 2,
        "C_change_validated_upper": 4 * abs_up,
        "kappa_C_lower_frame0": kap0, "kappa_C_lower_gauged": kap1,
        "kappa_lower_rel_change": abs(kap1 - kap0) / kap0,
        "gamma_frame0": g0, "gamma_gauged": g1, "gamma_ratio": g1 / g0,
        "kappa_le_gamma_validated": bool(kap0 <= g0_up and kap1 <= g1_up),
    }
    if tau0 is not None:
        tau1 = _tau_lp(double_centre(beta * (q2 @ k2.T)), r)
        row.update({"tau_frame0": tau0, "tau_gauged": tau1, "tau_change": abs(tau1 - tau0)})
    row["seconds"] = time.perf_counter() - t0
    return row


def gauge_audit_record(rec, r: int, seed: int = 0, with_tau: bool = True) -> list[dict]:
    """For random diagonal and dense gauges S: Q' = fl(Q S), K' = fl(K S^-T).  Validated:
    ||A' - A||_inf <= 2 tanh(max osc(H' - H)/4) (perturbation lemma); |C' - C| <= 4 max|H' - H|;
    the uniform-weight kappa(C) lower bound in both frames (Lemma K1, gauge-free by construction);
    kappa lower <= Gamma upper in both frames.  Native Gamma is reported in both frames."""
    if rec.form != "qk" or rec.bias is not None:
        return []
    rng = np.random.default_rng([seed, zlib.crc32(rec.record_id.encode())])
    q, k, beta = rec.queries, rec.keys, float(rec.scale)
    g0, g0_up = gamma_native(q, k, beta)
    frame0 = {"gamma": g0, "gamma_upper": g0_up, "kappa": uniform_dual_lower(q, k, beta)}
    tau0 = _tau_lp(double_centre(logits_float(rec)), r) if with_tau else None
    return [_gauge_row(rec, r, name, s, frame0, tau0) for name, s in random_gauges(q.shape[1], rng)]
