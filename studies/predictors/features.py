"""Per-operator features of ``softrank study predictors`` (docs/predictors-protocol-2.md, "Feature
blocks"): the column names of every block (``BLOCKS``, the one place they are written), the
structural, calibrated and native features of one record (``record_features``), the intrinsic
features of one ``softrank study kappa`` operator (``intrinsic_features``) and the protocol's fixed
intrinsic subset (``intrinsic_subset``).  The weight-space norms of the calibrated block come from
the checkpoint (``softrank.studies.predictors.weights.weight_norms``).

Untrusted orchestration: the features are float64 descriptions of an operator, not bounds, except
``n_gamma_upper`` (a validated upper bound on the native Gamma, ``studies.theorem.kappa.gamma_native``)
and the intrinsic block's validated brackets (from ``softrank study kappa``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

BLOCKS: dict[str, list[str]] = {
    "structural": ["s_layer", "s_head", "s_m", "s_N"],
    "calibrated": ["c_logit_sd", "c_spread_median", "c_entropy_q10", "c_entropy_q50", "c_entropy_q90",
                   "c_conc_q10", "c_conc_q50", "c_conc_q90", "c_key_conc", "c_wqk_fro", "c_wqk_spec", "c_wqk_nuc"],
    "native": ["n_gamma", "n_gamma_upper", "n_dims_0.5", "n_dims_0.1", "n_dims_0.01", "n_erank_q", "n_erank_k"],
    "intrinsic": ["i_kappa_C", "i_kappa_T2", "i_kappa_T4", "i_kappa_T8", "i_kappa_T16", "i_tau2", "i_tau4", "i_tau8",
                  "i_tau16", "i_rstar"],
}
#: the calibrated columns read off the checkpoint, not the record (``weights.weight_norms``)
WEIGHT_COLUMNS = ("c_wqk_fro", "c_wqk_spec", "c_wqk_nuc")
DIMS_THRESHOLDS = (0.5, 0.1, 0.01)  # n_dims_<t>: singular values of beta Q K^T >= t times the largest
ERANK_THRESHOLD = 0.01  # n_erank_q, n_erank_k
INTRINSIC_RANKS = (2, 4, 8, 16)
INTRINSIC_EPS = 0.25  # i_rstar: r* at eps = 1/4 (the study's targets are at eps = 1/4 too)
NAN = float("nan")


def count_at_least(sv: np.ndarray, rel: float) -> int:
    """The number of singular values (sorted descending) at or above ``rel`` times the largest; 0 for
    a zero matrix."""
    sv = np.asarray(sv, dtype=np.float64)
    if sv.size == 0 or not sv[0] > 0:
        return 0
    return int(np.sum(sv >= rel * sv[0]))


def product_singular_values(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The singular values of X Y^T (m x d times d x N) from the d x d core of two thin QRs:
    X Y^T = Q_x (R_x R_y^T) Q_y^T, so they are those of R_x R_y^T (never forms the m x N product)."""
    rx = np.linalg.qr(np.asarray(x, dtype=np.float64), mode="r")
    ry = np.linalg.qr(np.asarray(y, dtype=np.float64), mode="r")
    return np.linalg.svd(rx @ ry.T, compute_uv=False)


def calibrated_features(h: np.ndarray) -> dict[str, float]:
    """The calibrated block from the float64 logits H (m x N), A = rowsoftmax(H):
    ``c_logit_sd`` the standard deviation of every entry of H (population, ddof 0);
    ``c_spread_median`` the median over rows of max - min; ``c_entropy_q*`` the 10/50/90% quantiles
    over rows of the entropy of A's row (natural log, 0 log 0 = 0; numpy's linear quantiles);
    ``c_conc_q*`` the same quantiles of the largest entry per row; ``c_key_conc`` the largest column
    sum of A divided by m (1/N for a uniform A, 1 when every row puts all weight on one key)."""
    from scipy.special import xlogy

    from softrank.fastpath.float64 import rowsoftmax64

    h = np.asarray(h, dtype=np.float64)
    a = rowsoftmax64(h)
    entropy = -xlogy(a, a).sum(1)
    conc = a.max(1)
    qs = (0.1, 0.5, 0.9)
    e_q, c_q = np.quantile(entropy, qs), np.quantile(conc, qs)
    out = {"c_logit_sd": float(np.std(h)), "c_spread_median": float(np.median(h.max(1) - h.min(1)))}
    for name, vals in (("c_entropy", e_q), ("c_conc", c_q)):
        out.update({f"{name}_q{int(round(100 * q))}": float(v) for q, v in zip(qs, vals)})
    out["c_key_conc"] = float(a.sum(0).max() / h.shape[0])
    return out


def native_features(queries: np.ndarray, keys: np.ndarray, scale: float, gamma: bool = True) -> dict[str, float]:
    """The native block of H = beta Q K^T: ``n_gamma`` = beta rad(Q) rad(K) (minimum enclosing balls,
    float) and ``n_gamma_upper`` its validated upper bound (``studies.theorem.kappa.gamma_native``);
    ``n_dims_<t>`` the number of singular values of beta Q K^T at or above t times the largest
    (t = 0.5, 0.1, 0.01; from the d x d core of thin QRs, ``product_singular_values``);
    ``n_erank_q``, ``n_erank_k`` the number of singular values of Q (of K), the raw stored factors,
    not centred, at or above 0.01 times the largest.  ``gamma=False`` leaves the two Gamma columns
    NaN (they cost two SOCPs and a ball evaluation)."""
    q, k = np.asarray(queries, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    out = {"n_gamma": NAN, "n_gamma_upper": NAN}
    if gamma:
        from softrank.studies.theorem.kappa import gamma_native

        g, g_up = gamma_native(q, k, float(scale))
        out.update(n_gamma=float(g), n_gamma_upper=float(g_up))
    sv = product_singular_values(q, k) * abs(float(scale))
    for t in DIMS_THRESHOLDS:
        out[f"n_dims_{t}"] = float(count_at_least(sv, t))
    out["n_erank_q"] = float(count_at_least(np.linalg.svd(q, compute_uv=False), ERANK_THRESHOLD))
    out["n_erank_k"] = float(count_at_least(np.linalg.svd(k, compute_uv=False), ERANK_THRESHOLD))
    return out


def record_features(folder, gamma: bool = True) -> dict[str, float]:
    """The structural, calibrated (without the weight-space columns ``WEIGHT_COLUMNS``, which come from
    the checkpoint) and native features of the record in ``folder``: one float per column.

    The logits are ``studies.theorem.record_logits.logits_float`` (float64 beta Q K^T (+ bias), or the
    stored logits; refused in one line outside the theory range).  The native block needs the
    model's own factorization: a logits record or one with an additive bias has every ``n_`` column
    NaN.  A masked record (a support) is refused (``InputError``): the study's operators have one
    common positive support.  ``s_layer`` and ``s_head`` are NaN when the provenance lacks them."""
    from softrank.replay.reader import read_record
    from softrank.replay.support import refuse_masked
    from softrank.studies.theorem.record_logits import logits_float

    rec = read_record(Path(folder))
    refuse_masked(rec)
    prov = rec.provenance
    m, n = rec.shape
    out = {"s_layer": _number(prov.get("layer")), "s_head": _number(prov.get("head")), "s_m": float(m), "s_N": float(n)}
    out.update(calibrated_features(logits_float(rec)))
    if rec.form == "qk" and rec.bias is None:
        out.update(native_features(rec.queries, rec.keys, float(rec.scale), gamma=gamma))
    else:
        out.update({c: NAN for c in BLOCKS["native"]})
    return out


def _number(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else NAN


def _midpoint(bracket: dict | None) -> float:
    """(lower + upper) / 2 of a validated kappa bracket; NaN when its lower end is not validated or
    an end is missing or infinite."""
    if not bracket or not bracket.get("lower_validated"):
        return NAN
    lo, up = bracket.get("lower"), bracket.get("upper")
    if not isinstance(lo, (int, float)) or not isinstance(up, (int, float)) or not math.isfinite(lo + up):
        return NAN
    return (float(lo) + float(up)) / 2


def intrinsic_features(op: dict) -> dict[str, float]:
    """The intrinsic block of one ``operators/<id>.json`` of ``softrank study kappa``
    (``studies/kappa/kappa_operator.py: operator_study``): ``i_kappa_C`` and ``i_kappa_T<r>`` the
    midpoints of the validated brackets of kappa(C) and kappa(T_r); ``i_tau<r>`` the validated upper
    bound on tau(T_r) (``tau_upper``: a proved value, not the float estimate ``tau_float``);
    ``i_rstar`` r* at eps = 1/4 (the least r whose validated tau upper bound is below 1/4).  T_r at a
    rank r >= rank C is C itself (the study stores it at r = rank C: kappa(C), tau 0).  A column the
    JSON lacks is NaN."""
    out = {c: NAN for c in BLOCKS["intrinsic"]}
    out["i_kappa_C"] = _midpoint(op.get("kappa_C"))
    entries = {e.get("r"): e for e in op.get("ranks") or [] if isinstance(e, dict)}
    rank_c = op.get("rank_C")
    for r in INTRINSIC_RANKS:
        e = entries.get(min(r, rank_c) if isinstance(rank_c, int) else r)
        if e is None:
            continue
        out[f"i_kappa_T{r}"] = _midpoint({"lower": e.get("kappa_lower"), "upper": e.get("kappa_upper"),
                                          "lower_validated": e.get("kappa_lower_validated")})
        tau = e.get("tau_upper")
        out[f"i_tau{r}"] = float(tau) if isinstance(tau, (int, float)) else NAN
    r_star = (op.get("r_star") or {}).get(repr(float(INTRINSIC_EPS)))
    out["i_rstar"] = float(r_star) if isinstance(r_star, (int, float)) else NAN
    return out


def intrinsic_subset(rows: list[dict], per_family: int = 288, seed: int = 0) -> list[str]:
    """The protocol's fixed intrinsic subset of one panel's operators table: per family an equal
    number per layer, ``per_family // L`` for L layers; the remainder goes to distinct layers drawn
    with ``numpy.random.default_rng(seed)`` (one generator per family: first the remainder's layers,
    then each layer's operators in increasing layer order); within a layer the operators (sorted by
    record id, so the input order does not matter) are drawn without replacement.  A layer with
    fewer operators than asked gives all of them (nothing is moved to other layers).  Returns the
    chosen record ids, sorted."""
    by_family: dict[str, dict[int, list[str]]] = {}
    for row in rows:
        by_family.setdefault(str(row["family"]), {}).setdefault(int(row["layer"]), []).append(str(row["record_id"]))
    chosen: list[str] = []
    for family in sorted(by_family):
        layers = sorted(by_family[family])
        rng = np.random.default_rng(seed)
        base, extra = divmod(per_family, len(layers))
        bonus = {layers[i] for i in rng.choice(len(layers), size=extra, replace=False)} if extra else set()
        for layer in layers:
            ids = sorted(by_family[family][layer])
            want = base + (layer in bonus)
            if want >= len(ids):
                chosen.extend(ids)
            elif want > 0:
                chosen.extend(ids[i] for i in rng.choice(len(ids), size=want, replace=False))
    return sorted(chosen)
