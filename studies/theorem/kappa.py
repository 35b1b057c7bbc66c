"""kappa studies (proofs/kappa_duality_contrast.md): validated brackets of the intrinsic size
kappa(T) per record (``softrank kappa``), and kappa(C) <= Gamma for the model's own factorization
with kappa(T) <= kappa_bal (``softrank theorem kappa-gamma``).

For a record, C = P_m H P_N is formed from the logits (never from log A) and T := X0 Y0^T with
X0, Y0 the balanced factors of a float64 rank-r SVD of C (T is defined exactly by these binary64
factors).  The SDP (``studies/theorem/kappa_sdp.py``, untrusted) proposes weights and a primal point;
``softrank.validated.kappa_certificates`` turns them into validated bounds.
"""

from __future__ import annotations

import time

import numpy as np

from softrank.studies.theorem.kappa_sdp import balanced_factors, bracket_kappa, chebyshev_centre, dual_lower_best
from softrank.studies.theorem.record_logits import double_centre, logits_float
from softrank.validated import kappa_certificates as kc


def scaled_lower(value, beta: float) -> float | None:
    """A lower bound on beta kappa(X0 Y0^T) = kappa(beta X0 Y0^T) (Lemma K4 (a), beta >= 0) from a
    validated lower bound ``value`` on kappa(X0 Y0^T): the product rounded down, so that beta is
    applied exactly (the binary64 product fl(beta X0) is not beta X0 unless beta is a power of two)."""
    from fractions import Fraction

    from softrank.validated.balls import float_at_most

    if value is None or not beta >= 0:
        return None
    return float_at_most(Fraction(float(value)) * Fraction(float(beta)))


def uniform_dual_lower(x0, y0, beta: float = 1.0) -> float:
    """Validated lower bound on kappa(beta X0 Y0^T) with uniform weights (nan if none)."""
    p, q = np.full(x0.shape[0], 1.0), np.full(y0.shape[0], 1.0)
    v = scaled_lower(dual_lower_best(x0, y0, p, q), beta)
    return float("nan") if v is None else float(v)


def gamma_native(queries, keys, scale) -> tuple[float, float]:
    """(float Gamma from minimum enclosing balls, validated upper bound with those centres)."""
    cq, rq, _ = chebyshev_centre(queries)
    ck, rk, _ = chebyshev_centre(keys)
    return float(scale) * rq * rk, float(kc.native_gamma_upper(queries, keys, float(scale), cq, ck))


def kappa_bracket_record(rec, r: int) -> dict:
    """Validated bracket of kappa(T), T the rank-r truncation of C, for one record: one row."""
    t0 = time.perf_counter()
    x0, y0 = balanced_factors(double_centre(logits_float(rec)), r)
    row = {"record": rec.record_id, "model": rec.provenance.get("model", ""), "layer": rec.provenance.get("layer"),
           "head": rec.provenance.get("head")}
    row.update(bracket_kappa(x0, y0).as_dict())
    row["seconds_total"] = time.perf_counter() - t0
    return row


def kappa_gamma_record(rec, r: int) -> dict:
    """kappa(C) <= Gamma for the model's own factorization (validated lower bound on kappa(C), the
    better of uniform weights and the rank-r SDP's weights, against the validated upper bound on
    Gamma), and kappa(T) <= kappa_bal
    (validated SDP lower bound against the validated balanced-factor product)."""
    if rec.form != "qk" or rec.bias is not None:
        raise ValueError("kappa-gamma needs a record with queries and keys and no bias")
    t0 = time.perf_counter()
    beta = float(rec.scale)
    g, g_up = gamma_native(rec.queries, rec.keys, beta)
    kc_lower = uniform_dual_lower(rec.queries, rec.keys, beta)
    x0, y0 = balanced_factors(double_centre(logits_float(rec)), r)
    br = bracket_kappa(x0, y0)
    # The rank-r SDP's weights are a (p, q) certificate for C too (Lemma K1 holds for every T).
    via_t = scaled_lower(dual_lower_best(rec.queries, rec.keys, br.p, br.q), beta)
    kc_uniform = kc_lower
    if via_t is not None:
        kc_lower = max(kc_lower, float(via_t))
    return {"record": rec.record_id, "m": rec.shape[0], "N": rec.shape[1], "r": r,
            "gamma": g, "gamma_validated_upper": g_up, "kappa_C_lower_validated": kc_lower,
            "kappa_C_lower_uniform": kc_uniform,
            "kappa_C_lower_le_gamma": bool(kc_lower <= g_up), "gamma_over_kappa_C_lower": g / kc_lower,
            "kappa_T_lower": br.lower, "kappa_T_upper": br.upper, "kappa_bal": br.kappa_bal,
            "kappa_bal_validated_upper": br.kappa_bal_upper, "kappa_T_lower_le_bal": bool(br.lower <= br.kappa_bal_upper),
            "bal_over_kappa": br.kappa_bal / br.upper, "seconds": time.perf_counter() - t0}
