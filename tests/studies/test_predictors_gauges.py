"""The gauge audit: the diagonal and dense gauges do what the protocol defines (equal column norms,
identity covariance, rank-deficient Q), a balanced pair is left unchanged, a planted unbalanced
pair's Gamma falls by the factor known by hand, real records written with the producer's writer
(qk, logits, bias, masked), and the summary's counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from softrank.studies.predictors import gauges as ga


def test_diagonal_gauge_equalises_column_norms():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(20, 4)) * [1, 10, 0.1, 1], rng.normal(size=(15, 4)) * [3, 1, 1, 0]
    d = ga.diagonal_gauge(q, k)
    assert d[3] == 1  # a zero key column keeps its scale
    nq, nk = np.linalg.norm(q * d, axis=0), np.linalg.norm(k / d, axis=0)
    assert np.allclose(nq[:3], nk[:3], rtol=1e-12)


def test_dense_gauge_whitens_q():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(50, 4)) @ rng.normal(size=(4, 4)) + 3.0
    g, g_inv = ga.dense_gauge(q)
    qg = q @ g
    qc = qg - qg.mean(0)
    assert np.allclose(qc.T @ qc / 50, np.eye(4), atol=1e-10) and np.allclose(g @ g_inv, np.eye(4), atol=1e-10)


def test_dense_gauge_of_rank_deficient_q_is_identity_off_its_range():
    rng = np.random.default_rng(2)
    q = np.zeros((30, 3))
    q[:, :2] = rng.normal(size=(30, 2)) * [2.0, 0.5]  # the third dimension is constant (zero)
    g, g_inv = ga.dense_gauge(q)
    assert np.allclose(g[2], [0, 0, 1], atol=1e-12) and np.allclose(g @ g_inv, np.eye(3), atol=1e-10)
    qc = q @ g - (q @ g).mean(0)
    assert np.allclose(qc.T @ qc / 30, np.diag([1.0, 1.0, 0.0]), atol=1e-10)


def test_planted_unbalanced_pair_falls_by_four():
    """Q rows (+-4, 0), (0, +-1), K rows (+-1, 0), (0, +-4): Gamma = beta 4 x 4; both gauges give
    rows of norm 2 (diagonal) or sqrt(2) and sqrt(8) (dense): Gamma = 4 beta."""
    q = np.array([[4.0, 0], [-4, 0], [0, 1], [0, -1]])
    k = np.array([[1.0, 0], [-1, 0], [0, 4], [0, -4]])
    out = ga.audit_factors(q, k, 0.5)
    assert out["gamma_frame0"] == pytest.approx(8.0, rel=1e-6)
    for name in ga.GAUGES:
        assert out[f"gamma_ratio_{name}"] == pytest.approx(0.25, rel=1e-5)
        assert out[f"gamma_{name}"] <= out[f"gamma_{name}_upper"] * (1 + 1e-6)
    assert out["kappa_le_gamma_validated"] and out["h_change_upper_diagonal"] == 0  # exact: powers of 2


def test_balanced_pair_is_left_unchanged():
    rng = np.random.default_rng(3)
    u = np.linalg.qr(rng.normal(size=(40, 3)))[0]
    q = (u - u.mean(0)) * 4.0  # centred, equal column norms
    k = -q  # the same column norms: D = I exactly
    out = ga.audit_factors(q, k, 0.3, kappa=False)
    assert ga.diagonal_gauge(q, k).tolist() == [1.0, 1.0, 1.0]
    # Q D = Q, K D^-1 = K exactly; the ball bound on the (zero) change is at the working precision
    assert out["gamma_diagonal"] == out["gamma_frame0"] and out["h_change_upper_diagonal"] < 1e-25
    assert "kappa_le_gamma_validated" not in out and "kappa_C_lower_frame0" not in out


def _write(store, rid, q, k, scale=0.7, bias=None, support=None, logits=False):
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.store.writer import RecordWriter

    h = scale * q @ k.T + (0 if bias is None else bias)
    with RecordWriter(store, rid, provenance={"family": "fam", "layer": 0, "head": 0}, support=support) as w:
        if logits:
            w.set_logits(h)
        else:
            w.set_qk(q, k, scale, bias=bias)
        if support is not None:
            h = np.where(np.tril(np.ones(h.shape, dtype=bool)), h, -np.inf)
        w.set_a_hat(rowsoftmax64(h))
    return store / "records" / rid


def test_audit_of_real_records(tmp_path):
    from softrank.studies.theorem.kappa import gamma_native

    rng = np.random.default_rng(4)
    q, k = rng.normal(size=(16, 4)) * [3, 1, 0.3, 1], rng.normal(size=(14, 4))
    store = tmp_path / "store"
    out = ga.gauge_audit(_write(store, "qk", q, k))
    g0, g0_up = gamma_native(q, k, 0.7)
    assert out["gauge_note"] == "" and (out["gamma_frame0"], out["gamma_frame0_upper"]) == (g0, g0_up)
    assert out["kappa_le_gamma_validated"]
    for name in ga.GAUGES:
        assert out[f"gamma_ratio_{name}"] == out[f"gamma_{name}"] / g0
        h_up = out[f"h_change_upper_{name}"]
        assert 0 < h_up < 1e-12 and out[f"C_change_upper_{name}"] == 4 * h_up
        # the same H: the uniform kappa(C) lower bound agrees across frames to rounding
        assert out[f"kappa_C_lower_{name}"] == pytest.approx(out["kappa_C_lower_frame0"], rel=1e-9)
    again = ga.gauge_audit(store / "records" / "qk", kappa=False, frame0=(1.0, 2.0))
    assert again["gamma_frame0_upper"] == 2.0 and again["gamma_ratio_dense"] == out["gamma_dense"]
    notes = {rid: ga.gauge_audit(_write(store, rid, q[:14], k, **kw))["gauge_note"] for rid, kw in
             [("lg", {"logits": True}), ("bias", {"bias": np.ones((14, 14))}),
              ("causal", {"support": {"form": "causal", "offset": 0}})]}
    assert notes["lg"].startswith("logits") and notes["bias"].startswith("additive")
    assert notes["causal"].startswith("masked")


def test_summarise_counts_changes_beyond_ten_percent():
    def row(rd, rg):
        return {"gauge_note": "", "gamma_ratio_diagonal": rd, "gamma_ratio_dense": rg, "h_change_upper_diagonal": 1e-16,
                "h_change_upper_dense": 2e-14, "A_change_upper_diagonal": 0.0, "A_change_upper_dense": 1e-14,
                "kappa_le_gamma_validated": True}

    s = ga.summarise([row(1.05, 0.5), row(0.85, 1.09), row(1.2, 3.0), {"gauge_note": "logits record"}])
    assert s["operators"] == 3 and s["skipped"] == 1 and s["kappa_le_gamma_validated"] == 3
    assert s["diagonal"]["changed"] == 2 and s["diagonal"]["largest_factor"] == pytest.approx(1.2)
    assert s["dense"]["changed"] == 2 and s["dense"]["largest_factor"] == 3.0
    assert s["dense"]["h_change_upper_max"] == 2e-14 and math.isnan(ga.summarise([])["dense"]["largest_factor"])


def test_kappa_shift_is_sqrt_of_the_smaller_side_rounded_up():
    assert ga.kappa_shift_upper(1e-13, 256, 300) == pytest.approx(16e-13, rel=1e-15)
    assert ga.kappa_shift_upper(1e-13, 128, 128) >= 1e-13 * math.sqrt(128)  # 12 >= 11.31...
    assert ga.kappa_shift_upper(0.0, 5, 5) == 0.0 and ga.kappa_shift_upper(math.nan, 5, 5) == math.inf


def test_shift_covers_a_planted_change_of_the_logits():
    """Lemma K4 on a case known by hand: E = delta e_1 e_1^T has kappa(E) = delta / 4 after centring
    (a 2 x 2 contrast gives at least |E_11 - E_12 - E_21 + E_22| / 4); the bound sqrt(p) delta covers it,
    and the validated uniform lower bounds of C and C + P E P differ by at most the shift."""
    from softrank.studies.theorem.kappa import uniform_dual_lower

    rng = np.random.default_rng(7)
    q, k = rng.normal(size=(9, 3)), rng.normal(size=(7, 3))
    delta = 1e-3
    # 0.5 Q2 K2^T = 0.5 Q K^T + delta e1 e1^T
    q2, k2 = np.hstack([q, np.eye(9)[:, :1] * 2 * delta]), np.hstack([k, np.eye(7)[:, :1]])
    lo1, lo2 = uniform_dual_lower(q, k, 0.5), uniform_dual_lower(q2, k2, 0.5)
    assert lo1 != lo2 and abs(lo2 - lo1) <= ga.kappa_shift_upper(delta, 9, 7)
    assert ga.kappa_shift_upper(delta, 9, 7) >= delta / 4  # kappa(P E P) >= delta / 4 (a 2 x 2 contrast)


def test_beta_is_applied_exactly_to_the_kappa_bound():
    """kappa(beta X Y^T) = beta kappa(X Y^T): the bound with beta as an argument is the unit bound times
    beta rounded down, for a beta that is not a power of two."""
    from fractions import Fraction

    from softrank.studies.theorem.kappa import uniform_dual_lower

    rng = np.random.default_rng(8)
    q, k = rng.normal(size=(12, 4)), rng.normal(size=(10, 4))
    beta = 1 / math.sqrt(32)
    unit, scaled = uniform_dual_lower(q, k), uniform_dual_lower(q, k, beta)
    assert Fraction(scaled) <= Fraction(unit) * Fraction(beta) < Fraction(np.nextafter(scaled, np.inf))


def test_frames_agree_compares_each_frame_less_its_shift():
    audit = {"kappa_C_lower_frame0": 3.0, "kappa_C_lower_diagonal": 3.0 + 1e-12, "kappa_C_lower_dense": 3.0,
             "kappa_shift_upper_diagonal": 2e-12, "kappa_shift_upper_dense": 1e-12}
    assert ga.frames_agree(audit, 3.0) is True  # the diagonal frame's excess is inside its shift
    assert ga.frames_agree({**audit, "kappa_shift_upper_diagonal": 1e-13}, 3.0) is False
    assert ga.frames_agree({**audit, "kappa_C_lower_frame0": 3.5}, 3.2) is False
    assert ga.frames_agree({k: v for k, v in audit.items() if k != "kappa_shift_upper_dense"}, 3.0) is None
    assert ga.frames_agree(audit, math.nan) is None
    unchanged = {"gauge_note": "", "gamma_ratio_diagonal": 1.0, "gamma_ratio_dense": 1.0, "h_change_upper_diagonal": 0.0,
                 "h_change_upper_dense": 0.0, "A_change_upper_diagonal": 0.0, "A_change_upper_dense": 0.0, **audit}
    rows = [{"record_id": rid, **unchanged} for rid in ("a", "b")]
    s = ga.summarise(rows, kappa_c_upper={"a": 3.0, "b": 2.0, "c": 9.0})
    assert s["kappa_frames"] == {"operators": 2, "agree": 1, "disagree": 1, "not_checked": 0, "shift_upper_max": 2e-12}
    assert "kappa_frames" not in ga.summarise(rows)


def test_audit_records_its_version_and_shift(tmp_path):
    rng = np.random.default_rng(9)
    q, k = rng.normal(size=(16, 4)) * [3, 1, 0.3, 1], rng.normal(size=(14, 4))
    out = ga.gauge_audit(_write(tmp_path / "store", "qk", q, k, scale=1 / math.sqrt(32)))
    assert out["audit_version"] == ga.AUDIT_VERSION
    for name in ga.GAUGES:
        assert out[f"kappa_shift_upper_{name}"] >= math.sqrt(14) * out[f"h_change_upper_{name}"]
    # kappa(C) <= Gamma of the stored factors: a validated upper end every frame must sit under
    assert ga.frames_agree(out, out["gamma_frame0_upper"]) is True
    assert ga.frames_agree(out, out["kappa_C_lower_frame0"] / 2) is False
