"""The predictor study's per-operator features: planted cases with known answers (uniform and
one-hot attention, rank-1 and diagonal Q K^T), real records written with the producer's writer
(qk, logits, masked), the intrinsic block from a real ``softrank study kappa`` operator and from
hand-made ones, and the fixed intrinsic subset's counts per layer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from softrank.errors import InputError
from softrank.studies.predictors import features as ft

SPEC = {
    "structural": "s_layer s_head s_m s_N",
    "calibrated": "c_logit_sd c_spread_median c_entropy_q10 c_entropy_q50 c_entropy_q90 c_conc_q10 c_conc_q50 "
                  "c_conc_q90 c_key_conc c_wqk_fro c_wqk_spec c_wqk_nuc",
    "native": "n_gamma n_gamma_upper n_dims_0.5 n_dims_0.1 n_dims_0.01 n_erank_q n_erank_k",
    "intrinsic": "i_kappa_C i_kappa_T2 i_kappa_T4 i_kappa_T8 i_kappa_T16 i_tau2 i_tau4 i_tau8 i_tau16 i_rstar",
}


def test_blocks_are_the_shared_column_names():
    assert ft.BLOCKS == {k: v.split() for k, v in SPEC.items()}


def test_uniform_attention_has_entropy_log_n():
    h = np.full((5, 7), 3.0)
    c = ft.calibrated_features(h)
    assert c["c_logit_sd"] == 0 and c["c_spread_median"] == 0
    for q in (10, 50, 90):
        assert c[f"c_entropy_q{q}"] == pytest.approx(math.log(7), rel=1e-12)
        assert c[f"c_conc_q{q}"] == pytest.approx(1 / 7, rel=1e-12)
    assert c["c_key_conc"] == pytest.approx(1 / 7, rel=1e-12)


def test_one_hot_attention_on_one_key():
    h = np.zeros((4, 6))
    h[:, 2] = 1000.0  # every row puts all its weight on key 2 (exp(-1000) underflows to 0)
    c = ft.calibrated_features(h)
    assert c["c_entropy_q50"] == 0 and c["c_conc_q10"] == 1 and c["c_key_conc"] == 1
    assert c["c_spread_median"] == 1000 and c["c_logit_sd"] == pytest.approx(np.std(h))


def test_quantiles_and_median_over_rows():
    h = np.array([[0.0, 1.0], [0.0, 3.0], [0.0, 5.0]])
    c = ft.calibrated_features(h)
    assert c["c_spread_median"] == 3.0
    conc = 1 / (1 + np.exp(-np.array([1.0, 3.0, 5.0])))
    assert c["c_conc_q50"] == pytest.approx(conc[1]) and c["c_conc_q10"] == pytest.approx(np.quantile(conc, 0.1))
    # key 1 takes conc_i in every row: the largest column sum over m
    assert c["c_key_conc"] == pytest.approx(conc.sum() / 3)


def test_rank_one_product_has_one_interaction_dimension():
    rng = np.random.default_rng(0)
    q = np.outer(rng.normal(size=9), rng.normal(size=4))
    k = np.outer(rng.normal(size=11), rng.normal(size=4))
    n = ft.native_features(q, k, 0.5, gamma=False)
    assert n["n_dims_0.5"] == n["n_dims_0.1"] == n["n_dims_0.01"] == 1
    assert n["n_erank_q"] == n["n_erank_k"] == 1 and math.isnan(n["n_gamma"])


def test_interaction_dimensions_count_relative_thresholds():
    sv = np.array([2.0, 1.0, 0.2, 0.02, 0.001])  # relative: 1, 0.5, 0.1, 0.01, 0.0005 ("at or above")
    q = np.vstack([np.diag(sv), np.zeros((3, 5))])
    k = np.vstack([np.eye(5), np.ones((2, 5))])
    k[5:] = 0
    n = ft.native_features(q, k, 3.0, gamma=False)
    assert (n["n_dims_0.5"], n["n_dims_0.1"], n["n_dims_0.01"]) == (2, 3, 4)
    assert n["n_erank_q"] == 4 and n["n_erank_k"] == 5
    assert ft.count_at_least(np.zeros(3), 0.5) == 0


def test_product_singular_values_match_the_full_svd():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(30, 6)), rng.normal(size=(25, 6)) * 3
    full = np.linalg.svd(q @ k.T, compute_uv=False)[:6]
    assert np.allclose(ft.product_singular_values(q, k), full, rtol=1e-10)


def _write(store, rid, q=None, k=None, scale=0.7, logits=None, support=None, prov=None):
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.store.writer import RecordWriter

    prov = prov if prov is not None else {"model": "synthetic", "family": "fam", "layer": 3, "head": 5,
                                          "source_id": "src0"}
    with RecordWriter(store, rid, provenance=prov, support=support) as w:
        if logits is not None:
            w.set_logits(logits)
            h = logits
        else:
            w.set_qk(q, k, scale)
            h = scale * q @ k.T
        if support is not None:
            h = np.where(np.tril(np.ones(h.shape, dtype=bool)), h, -np.inf)
        w.set_a_hat(rowsoftmax64(h))
    return store / "records" / rid


def test_record_features_of_real_records(tmp_path):
    from softrank.studies.theorem.kappa import gamma_native

    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(12, 3)), rng.normal(size=(10, 3))
    f = ft.record_features(_write(tmp_path / "store", "qk", q, k, 0.7))
    cols = [c for b in ("structural", "calibrated", "native") for c in ft.BLOCKS[b] if c not in ft.WEIGHT_COLUMNS]
    assert list(f) == cols and all(isinstance(v, float) for v in f.values())
    assert (f["s_layer"], f["s_head"], f["s_m"], f["s_N"]) == (3, 5, 12, 10)
    assert f["c_logit_sd"] == pytest.approx(np.std(0.7 * q @ k.T))
    g, g_up = gamma_native(q, k, 0.7)
    assert f["n_gamma"] == g and f["n_gamma_upper"] == g_up and f["n_dims_0.01"] == 3
    # a logits record has no factorization: the native block is NaN, the others are computed
    lg = ft.record_features(_write(tmp_path / "store", "lg", logits=0.7 * q @ k.T, prov={"family": "fam"}))
    assert all(math.isnan(lg[c]) for c in ft.BLOCKS["native"]) and math.isnan(lg["s_layer"])
    assert lg["c_entropy_q50"] == pytest.approx(f["c_entropy_q50"], rel=1e-12)


def test_masked_record_is_refused_in_one_line(tmp_path):
    rng = np.random.default_rng(3)
    folder = _write(tmp_path / "store", "causal", rng.normal(size=(6, 2)), rng.normal(size=(6, 2)),
                    support={"form": "causal", "offset": 0})
    with pytest.raises(InputError) as err:
        ft.record_features(folder)
    assert "causal" in str(err.value) and "\n" not in err.value.one_line()


def test_intrinsic_features_of_a_real_kappa_operator(tmp_path):
    from softrank.studies.kappa.kappa_operator import operator_study

    rng = np.random.default_rng(4)
    folder = _write(tmp_path / "store", "op", rng.normal(size=(12, 3)), rng.normal(size=(12, 3)), 0.8)
    op = operator_study(str(folder), [0.25], ranks=(2, 4, 8, 16))
    i = ft.intrinsic_features(op)
    assert list(i) == ft.BLOCKS["intrinsic"]
    assert op["kappa_C"]["lower"] <= i["i_kappa_C"] <= op["kappa_C"]["upper"]
    e2 = next(e for e in op["ranks"] if e["r"] == 2)
    assert e2["kappa_lower"] <= i["i_kappa_T2"] <= e2["kappa_upper"] and i["i_tau2"] == e2["tau_upper"]
    # rank C = 3 (d = 3): T_4, T_8, T_16 are C itself
    assert op["rank_C"] == 3 and i["i_kappa_T16"] == i["i_kappa_C"] and i["i_tau16"] == 0
    assert i["i_rstar"] == op["r_star"]["0.25"]


def test_intrinsic_features_by_hand():
    br = {"lower": 1.0, "upper": 3.0, "lower_validated": True}
    ranks = [{"r": 2, "kappa_lower": 2.0, "kappa_upper": 4.0, "kappa_lower_validated": True, "tau_upper": 0.5,
              "tau_float": 0.4},
             {"r": 4, "kappa_lower": 0.0, "kappa_upper": 5.0, "kappa_lower_validated": False, "tau_upper": 0.2}]
    i = ft.intrinsic_features({"kappa_C": br, "rank_C": 20, "ranks": ranks, "r_star": {"0.25": 4, "0.35": 2}})
    assert (i["i_kappa_C"], i["i_kappa_T2"], i["i_tau2"], i["i_tau4"], i["i_rstar"]) == (2.0, 3.0, 0.5, 0.2, 4.0)
    assert math.isnan(i["i_kappa_T4"]) and math.isnan(i["i_kappa_T8"]) and math.isnan(i["i_tau16"])
    assert all(math.isnan(v) for v in ft.intrinsic_features({}).values())


def _table(layers, per_layer, family):
    return [{"record_id": f"{family}-L{layer:02d}-{j:03d}", "family": family, "layer": layer}
            for layer in range(layers) for j in range(per_layer)]


def _per_layer(ids, rows):
    layer = {r["record_id"]: (r["family"], r["layer"]) for r in rows}
    out = {}
    for rid in ids:
        out[layer[rid]] = out.get(layer[rid], 0) + 1
    return out


def test_intrinsic_subset_counts_per_layer():
    rows = _table(6, 96, "all-MiniLM-L6-v2") + _table(30, 72, "SmolLM2-135M")
    ids = ft.intrinsic_subset(rows)
    counts = _per_layer(ids, rows)
    assert len(ids) == 576 and ids == sorted(set(ids))
    assert all(counts[("all-MiniLM-L6-v2", layer)] == 48 for layer in range(6))
    smol = sorted(counts[("SmolLM2-135M", layer)] for layer in range(30))
    assert smol == [9] * 12 + [10] * 18  # 288 = 30 x 9 + 18: the remainder to 18 distinct layers
    shuffled = list(rows)
    np.random.default_rng(5).shuffle(shuffled)
    assert ft.intrinsic_subset(shuffled) == ids  # the input order does not matter
    assert ft.intrinsic_subset(rows, seed=1) != ids


def test_intrinsic_subset_takes_every_operator_of_a_small_layer():
    rows = _table(3, 10, "fam")
    rows = [r for r in rows if not (r["layer"] == 1 and r["record_id"] >= "fam-L01-004")]  # layer 1: 4
    counts = _per_layer(ft.intrinsic_subset(rows, per_family=18), rows)
    assert counts == {("fam", 0): 6, ("fam", 1): 4, ("fam", 2): 6}
    assert len(ft.intrinsic_subset(_table(2, 3, "fam"), per_family=288)) == 6
