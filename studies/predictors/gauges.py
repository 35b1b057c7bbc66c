"""The gauge audit of ``softrank study predictors`` (docs/predictors-protocol-2.md, "Gauge audit"):
native Gamma = beta rad(Q) rad(K) of one record's own factorization, and in two gauges that leave
H = beta Q K^T unchanged in exact arithmetic, Q' = Q S, K' = K S^-T:

- diagonal: S = D = diag(d_j), d_j = sqrt(||K_:,j|| / ||Q_:,j||) (the per-dimension norm ratio), so
  that Q D and K D^-1 have equal column norms; d_j = 1 where either column is zero;
- dense: S = G, the whitening of Q's covariance Sigma = (Q - mean)^T (Q - mean) / m (population):
  with the eigen-decomposition Sigma = V diag(lambda) V^T, G = V diag(g) V^T, g_i = lambda_i^-1/2 on
  the eigenvalues above ``RANK_TOL`` times the largest and 1 elsewhere (the pseudo-inverse square
  root on Sigma's range, the identity on its null space), so Q G has identity covariance on the
  range of Sigma and 0 on its null space; G is symmetric and K' = K G^-T = K G^-1 with
  G^-1 = V diag(1/g) V^T (both formed in float64).

Q' and K' are rounded to binary64, so H' = beta Q' K'^T differs from H by rounding; the audit bounds
that difference in balls (``studies.theorem.gauge._delta_logits_upper``: exact products in Arb) and
gives the consequences the repository proves: ||A' - A||_inf <= max osc(H' - H) / 2 (the softmax
perturbation lemma, proofs/softmax_perturbation.md, with 2 tanh(x/4) <= x/2) and
|C' - C| <= 4 max |H' - H| entrywise (C = P_m H P_N).  No Lipschitz bound for kappa or tau under a
perturbation of C is proved in proofs/, so those are not claimed unchanged from these numbers.
kappa(C) is: it moves by at most sqrt(min(m, N)) max |H' - H| (Lemma K4,
proofs/kappa_duality_contrast.md).  The audit evaluates the validated uniform-weight lower bound on
kappa(C') (Lemma K1, beta applied exactly) with each frame's factors, checks it against each
frame's validated Gamma upper bound (kappa(C) <= Gamma), and records ``kappa_shift_upper_<g>``, the
Lemma K4 bound on |kappa(C') - kappa(C)|; ``summarise`` then checks every frame's lower bound, less
that shift, against the validated upper end of kappa(C) computed in the stored frame (where the
intrinsic block has one): the frames must bracket one number.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

AUDIT_VERSION = 2  # 2: beta applied exactly to the kappa lower bounds, and the Lemma K4 shift recorded
RANK_TOL = 1e-12  # eigenvalues of Q's covariance at or below this times the largest count as zero
GAUGES = ("diagonal", "dense")
NAN = float("nan")


def diagonal_gauge(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The diagonal d of D (S = diag(d)): sqrt(||K_:,j|| / ||Q_:,j||), 1 where a column is zero."""
    nq, nk = np.linalg.norm(q, axis=0), np.linalg.norm(k, axis=0)
    ok = (nq > 0) & (nk > 0)
    d = np.ones(q.shape[1])
    d[ok] = np.sqrt(nk[ok] / nq[ok])
    return d


def dense_gauge(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G, G^-1): the whitening of Q's covariance (pseudo-inverse square root on its range, the
    identity on its null space), both symmetric, from one eigen-decomposition."""
    qc = q - q.mean(0)
    lam, v = np.linalg.eigh(qc.T @ qc / q.shape[0])
    top = float(lam.max()) if lam.size else 0.0
    keep = lam > RANK_TOL * top if top > 0 else np.zeros(lam.shape, dtype=bool)
    root = np.ones_like(lam)
    root[keep] = np.sqrt(lam[keep])
    return (v / root) @ v.T, (v * root) @ v.T


def gauged_factors(q: np.ndarray, k: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{gauge: (Q', K')} in binary64 for the two gauges of the protocol."""
    d = diagonal_gauge(q, k)
    g, g_inv = dense_gauge(q)
    return {"diagonal": (q * d, k / d), "dense": (q @ g, k @ g_inv)}


def gauge_audit(folder, kappa: bool = True, frame0: tuple[float, float] | None = None) -> dict:
    """The audit of the record in ``folder`` (one flat dict): ``gamma_frame0``, ``gamma_<g>`` (float
    Gamma from minimum enclosing balls) and ``gamma_<...>_upper`` (validated upper bounds, from
    ``studies.theorem.kappa.gamma_native``), ``gamma_ratio_<g>`` = gamma_<g> / gamma_frame0;
    ``h_change_upper_<g>`` >= max |H' - H| and ``h_osc_upper_<g>`` >= max_i osc(H'_i - H_i)
    (validated), ``A_change_upper_<g>`` >= ||A' - A||_inf, ``C_change_upper_<g>`` >= max |C' - C|;
    with ``kappa``: ``kappa_C_lower_<frame>`` (validated uniform-weight lower bounds on kappa of
    each frame's C) and ``kappa_le_gamma_validated`` (kappa lower <= Gamma upper in every frame);
    ``seconds`` (CPU).  ``frame0`` = (Gamma, validated upper bound) of the stored factors when
    already known (``record_features``' ``n_gamma``, ``n_gamma_upper``) saves their computation.
    ``kappa=False`` leaves out the kappa columns (three ball-certified dual bounds, the larger part
    of the cost at d = 64).  A record without the model's own factorization (logits, an additive bias or
    a support) gets ``gauge_note`` saying why and no numbers."""
    from softrank.replay.reader import read_record

    rec = read_record(Path(folder))
    out: dict = {"record_id": rec.record_id, "gauge_note": "", "audit_version": AUDIT_VERSION}
    if rec.form != "qk" or rec.bias is not None or rec.mask is not None:
        out["gauge_note"] = ("logits record: no native factorization" if rec.form != "qk" else
                             "additive bias: H is not beta Q K^T" if rec.bias is not None else
                             "masked operator: no common positive support")
        return out
    return {**out, **audit_factors(rec.queries, rec.keys, float(rec.scale), kappa=kappa, frame0=frame0)}


def audit_factors(q: np.ndarray, k: np.ndarray, beta: float, kappa: bool = True,
                  frame0: tuple[float, float] | None = None) -> dict:
    """``gauge_audit``'s numbers for the factorization H = beta Q K^T (beta >= 0)."""
    from softrank.studies.theorem.gauge import _delta_logits_upper
    from softrank.studies.theorem.kappa import gamma_native, uniform_dual_lower

    t0 = time.process_time()
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    frames = {"frame0": (q, k), **gauged_factors(q, k)}
    out: dict = {}
    for name, (qf, kf) in frames.items():
        g, g_up = frame0 if name == "frame0" and frame0 is not None else gamma_native(qf, kf, beta)
        out[f"gamma_{name}"], out[f"gamma_{name}_upper"] = float(g), float(g_up)
        if kappa:
            out[f"kappa_C_lower_{name}"] = uniform_dual_lower(qf, kf, beta)
    for name in GAUGES:
        qf, kf = frames[name]
        out[f"gamma_ratio_{name}"] = out[f"gamma_{name}"] / out["gamma_frame0"] if out["gamma_frame0"] > 0 else NAN
        osc_up, abs_up = _delta_logits_upper(q, k, qf, kf, beta)
        # x / 2 and 4 y are exact in binary64: both stay upper bounds
        out.update({f"h_change_upper_{name}": abs_up, f"h_osc_upper_{name}": osc_up,
                    f"A_change_upper_{name}": osc_up / 2, f"C_change_upper_{name}": 4 * abs_up,
                    f"kappa_shift_upper_{name}": kappa_shift_upper(abs_up, q.shape[0], k.shape[0])})
    if kappa:
        ok = (out[f"kappa_C_lower_{f}"] <= out[f"gamma_{f}_upper"] for f in frames)  # nan: not validated
        out["kappa_le_gamma_validated"] = bool(all(ok))
    out["seconds"] = time.process_time() - t0
    return out


def kappa_shift_upper(h_change_upper: float, m: int, n: int) -> float:
    """An upper bound on |kappa(C') - kappa(C)| when max |H' - H| <= ``h_change_upper`` (Lemma K4:
    sqrt(min(m, N)) times it; the square root replaced by the least integer at or above it, the
    product rounded up)."""
    from softrank.validated.balls import float_at_least

    if not math.isfinite(h_change_upper) or h_change_upper < 0:
        return math.inf
    p = min(int(m), int(n))
    root = math.isqrt(p) + (math.isqrt(p) ** 2 < p)
    return float_at_least(Fraction(h_change_upper) * root)


def frames_agree(audit: dict, kappa_c_upper: float) -> bool | None:
    """Whether every frame's lower bound on kappa(C), less its Lemma K4 shift (0 in the stored frame),
    is at or below ``kappa_c_upper`` (a validated upper end of kappa(C) in the stored frame), compared
    exactly; None when the audit lacks a number it needs."""
    if not math.isfinite(kappa_c_upper):
        return None
    for frame in ("frame0", *GAUGES):
        lower = audit.get(f"kappa_C_lower_{frame}")
        shift = 0.0 if frame == "frame0" else audit.get(f"kappa_shift_upper_{frame}")
        if lower is None or shift is None or not math.isfinite(lower) or not math.isfinite(shift):
            return None
        if Fraction(lower) - Fraction(shift) > Fraction(kappa_c_upper):
            return False
    return True


def summarise(audits: list[dict], threshold: float = 0.10, kappa_c_upper: dict[str, float] | None = None) -> dict:
    """Per gauge over the audited operators (those without ``gauge_note``): how many Gammas change by
    more than ``threshold`` (|ratio - 1| > threshold), the largest factor max(ratio, 1 / ratio), the
    largest validated bounds on max |H' - H| and ||A' - A||_inf, and how many operators have
    kappa(C) lower <= Gamma upper validated in every frame (when audited with kappa)."""
    done = [a for a in audits if not a.get("gauge_note")]
    out: dict = {"operators": len(done), "skipped": len(audits) - len(done)}
    for name in GAUGES:
        ratios = np.array([a[f"gamma_ratio_{name}"] for a in done], dtype=np.float64)
        ok = ratios[np.isfinite(ratios) & (ratios > 0)]
        out[name] = {
            "changed": int(np.sum(np.abs(ok - 1) > threshold)),
            "largest_factor": float(np.max(np.maximum(ok, 1 / ok))) if ok.size else NAN,
            "h_change_upper_max": max((a[f"h_change_upper_{name}"] for a in done), default=NAN),
            "A_change_upper_max": max((a[f"A_change_upper_{name}"] for a in done), default=NAN),
        }
    with_kappa = [a for a in done if "kappa_le_gamma_validated" in a]
    if with_kappa:
        out["kappa_le_gamma_validated"] = sum(bool(a["kappa_le_gamma_validated"]) for a in with_kappa)
    if kappa_c_upper:
        checks = [frames_agree(a, kappa_c_upper[a["record_id"]]) for a in done if a.get("record_id") in kappa_c_upper]
        out["kappa_frames"] = {"operators": len(checks), "agree": sum(c is True for c in checks),
                               "disagree": sum(c is False for c in checks), "not_checked": sum(c is None for c in checks),
                               "shift_upper_max": max((v for a in done for g in GAUGES
                                                       if math.isfinite(v := a.get(f"kappa_shift_upper_{g}", math.nan))),
                                                      default=math.nan)}
    return out
