"""End to end: records with lower certificates written by RecordWriter, replayed through
``softrank.findings.replay_job.replay_store``, then ``softrank regress`` on the replay tables."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers import (
    block_decoder,
    block_logits,
    block_rank_is_exact,
    float64_decoder,
    float64_decoder_sum,
    float64_frobenius_lower,
    float64_projected,
    rowsoftmax_float,
)
from softrank.findings.replay_job import replay_store
from softrank.replay import record as core
from softrank.fastpath.store.writer import RecordWriter


def _block_record(store, rid, seed):
    rng = np.random.default_rng(seed)
    p = 4
    sizes = [3, 4, 2, 5]
    c = 7.0
    eps = 0.2
    assert block_rank_is_exact(sizes, c, Fraction(eps))
    h, rl, cl = block_logits(sizes, c, rng)
    a = rowsoftmax_float(h)
    rows, w = block_decoder(rl, cl, p)
    x = (rl[:, None] == np.arange(p)[None, :]).astype(np.float64)  # A = X Y^T exactly block-constant
    y = a[rows].T.copy()
    lf = float64_frobenius_lower(a, eps)
    wp, lp = float64_projected(a, np.arange(a.shape[0], dtype=np.int64), p, eps)
    wr = RecordWriter(store, rid, {"model": "synthetic-block", "family": "synthetic", "layer": 0, "head": seed})
    wr.set_logits(h)
    wr.set_a_hat(a)
    lower = [
        {"kind": "decoder", "lower": p, "rows": rows, "W": w},
        {"kind": "frobenius", "lower": lf},
        {"kind": "projected", "lower": lp, "rows": np.arange(a.shape[0], dtype=np.int64), "W": wp},
        # tampered: claims p + 1 > exact r_eps = p
        {"kind": "decoder", "lower": p + 1, "rows": np.append(rows, 1 if 1 not in rows else 2).astype(np.int64),
         "W": np.column_stack([w, np.eye(a.shape[0])[:, 1]])},
        # malformed: |rows| != lower
        {"kind": "decoder", "lower": p, "rows": rows[:2], "W": w[:, :2]},
        {"kind": "nuclear", "lower": 3},
    ]
    verdicts = {str(k): ("impossible" if k < p else "feasible") for k in (1, 2, 3, 4, 8)}
    wr.add_tolerance(eps, upper=(x, y, "block"), lower=lower, float64={"lower": p, "upper": p, "verdicts": verdicts})
    # a second tolerance where float64 over-claims (decoder p + 1): validation must refuse it
    wr.add_tolerance("1/5", upper=None, lower=[lower[3]],
                     float64={"lower": p + 1, "upper": None, "verdicts": {"4": "impossible"}})
    wr.commit()
    return p, lf, lp


def _qk_record(store, rid, seed):
    rng = np.random.default_rng(seed)
    m, n, d = 20, 24, 6
    q, k = rng.normal(size=(m, d)), rng.normal(size=(n, d))
    scale = 0.9
    h = scale * (q @ k.T)
    a = rowsoftmax_float(h)
    eps = 0.1
    lf = float64_frobenius_lower(a, eps)
    rows = np.arange(0, m, 2, dtype=np.int64)
    wp, lp = float64_projected(a, rows, 6, eps)
    wr = RecordWriter(store, rid, {"model": "synthetic-qk", "family": "synthetic-qk", "layer": 1, "head": 0})
    wr.set_qk(q, k, scale)
    wr.set_a_hat(a)
    lower = [{"kind": "frobenius", "lower": lf}]
    if lp >= 1:
        lower.append({"kind": "projected", "lower": lp, "rows": rows, "W": wp})
    wr.add_tolerance(eps, lower=lower, float64={"lower": max(lf, lp), "upper": None,
                                                "verdicts": {str(max(lf, lp) - 1): "impossible"}})
    wr.commit()
    return max(lf, lp)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    info = {"block": _block_record(store, "block-0", 0), "qk": _qk_record(store, "qk-0", 1)}
    out = store / "replay"
    summary = replay_store(store, out)
    rows = pq.read_table(out / "replay.parquet").to_pylist()
    verdicts = pq.read_table(out / "verdicts.parquet").to_pylist()
    return store, out, summary, rows, verdicts, info


def test_block_record_lower_end_is_proved_by_the_decoder(replayed):
    _, _, summary, rows, verdicts, info = replayed
    p = info["block"][0]
    r = next(r for r in rows if r["record_id"] == "block-0" and r["eps"] == "binary64(0.2)")
    assert r["validated_lower"] == p == r["float64_lower"]
    assert r["lower_kind"] == "decoder"
    assert r["validated_upper"] == p  # the block witness, Lemma U
    outcomes = [(o["kind"], o["claimed"], o["outcome"]) for o in r["lower_outcomes"]]
    assert ("decoder", p, "proved") in outcomes
    assert all(o["lemma"] == "proofs/lemma_D_contractive_decoder.md" for o in r["lower_outcomes"]
               if o["kind"] == "decoder" and o["outcome"] == "proved")
    assert ("decoder", p + 1, "refuted") in outcomes or ("decoder", p + 1, "unresolved") in outcomes
    assert ("nuclear", 3, "unresolved") in outcomes
    reasons = " ".join(o["reason"] or "" for o in r["lower_outcomes"])
    assert "malformed certificate" in reasons and "unknown certificate kind" in reasons
    assert any("binary64" in a for a in r["assumptions"])
    vb = {v["k"]: v["validated_verdict"] for v in verdicts if v["record_id"] == "block-0" and v["eps"] == "binary64(0.2)"}
    assert vb[p - 1] == "impossible" and vb[p] == "feasible" and vb[8] == "feasible"


def test_overclaim_is_not_validated(replayed):
    _, _, _, rows, verdicts, info = replayed
    p = info["block"][0]
    r = next(r for r in rows if r["record_id"] == "block-0" and r["eps"] == "1/5")
    assert r["float64_lower"] == p + 1 and r["validated_lower"] == 1
    v = next(v for v in verdicts if v["record_id"] == "block-0" and v["eps"] == "1/5" and v["k"] == p)
    assert v["float64_verdict"] == "impossible" and v["validated_verdict"] == "unresolved"


def test_qk_record_tails(replayed):
    _, _, _, rows, _, info = replayed
    r = next(r for r in rows if r["record_id"] == "qk-0")
    assert r["validated_lower"] == info["qk"] == r["float64_lower"]
    assert r["lower_kind"] in ("frobenius", "projected")


def test_regress_reports_the_overclaim(replayed, tmp_path):
    store, out, _, _, _, info = replayed
    p = info["block"][0]
    proc = subprocess.run([sys.executable, "-m", "softrank", "regress", str(out), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "fail validation" in proc.stdout
    for name in ("transitions", "ends", "failures", "end_differences"):
        for suffix in (".parquet", ".csv", ".json"):
            assert (tmp_path / f"{name}{suffix}").is_file()
    failures = json.loads((tmp_path / "failures.json").read_text())
    assert len(failures) == 1
    f = failures[0]
    assert (f["record_id"], f["eps"], f["k"], f["float64_verdict"], f["validated_verdict"]) == \
        ("block-0", "1/5", p, "impossible", "unresolved")
    assert "decoder claims r >= 5" in f["reason"] and "||A_S W - I_p||_inf" in f["reason"] and "margin" in f["reason"]
    trans = pq.read_table(tmp_path / "transitions.parquet").to_pylist()
    count = {(t["eps"], t["float64_verdict"], t["validated_verdict"]): t["count"] for t in trans if t["family"] == "synthetic"}
    assert count[("binary64(0.2)", "impossible", "impossible")] == 3
    assert count[("binary64(0.2)", "feasible", "feasible")] == 2
    assert count[("1/5", "impossible", "unresolved")] == 1
    diffs = json.loads((tmp_path / "end_differences.json").read_text())
    assert [(d["record_id"], d["eps"], d["end"]) for d in diffs] == [("block-0", "1/5", "lower")]


def test_regress_missing_table_is_input_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "softrank", "regress", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "replay.parquet" in proc.stderr and "Traceback" not in proc.stderr


def _masked_records(store) -> dict:
    """Masked records (operator.support) through Store.write: causal 40 x 40 (logits), window 16 of
    40 x 40 (qk), a random packed support (logits); float64 witnesses (truncated SVD) and lower
    certificates (frobenius, decoder) made here. Returns record id -> (eps, witness rank, lower)."""
    from softrank.api.records import Record
    from softrank.api.store import Store

    rng = np.random.default_rng(7)
    n, eps = 40, 0.1
    idx = np.arange(n)
    random_mask = rng.random((n, n)) < 0.4
    random_mask[idx, idx] = True
    q, k = rng.normal(size=(n, 8)), rng.normal(size=(n, 8))
    records = {
        "causal-40": Record.from_logits(rng.normal(size=(n, n)) * 3 + np.eye(n) * 4, record_id="causal-40",
                                        mask=idx[None, :] <= idx[:, None]),
        "window-16": Record.from_qk(q, k, 0.7, bias=np.eye(n) * 5, record_id="window-16",
                                    mask=(idx[:, None] - idx[None, :] >= 0) & (idx[:, None] - idx[None, :] < 16)),
        "packed-40": Record.from_logits(rng.normal(size=(n, n)) * 3 + np.eye(n) * 4, record_id="packed-40",
                                        mask=random_mask),
    }
    info = {}
    for rid, rec in records.items():
        a = rec.a_hat
        u, s, vt = np.linalg.svd(a)
        rank = next(r for r in range(1, n + 1) if np.abs(a - (u[:, :r] * s[:r]) @ vt[:r]).sum(axis=1).max() <= eps / 2)
        rec = rec.with_upper(eps, u[:, :rank] * s[:rank], vt[:rank].T.copy(), construction="tsvd")
        lf = float64_frobenius_lower(a, eps)
        p = next(p for p in range(n, 0, -1)
                 if float64_decoder_sum(a, np.arange(p), float64_decoder(a, np.arange(p)), eps) < 0.9)
        lower = [core.LowerCertificate("frobenius", lf),
                 core.LowerCertificate("decoder", p, {"rows": np.arange(p, dtype=np.int64),
                                                      "W": float64_decoder(a, np.arange(p))})]
        rec = rec.with_tolerance(dataclasses.replace(rec.tolerances[0], lower=lower), keep_lower=False)
        Store(store).write(rec)
        info[rid] = (eps, rank, max(lf, p), rec.support.form)
    return info


def test_masked_records_replay_end_to_end(tmp_path):
    info = _masked_records(tmp_path)
    assert [v[3] for v in info.values()] == ["causal", "window", "packed"]
    replay_store(tmp_path, tmp_path / "replay")
    rows = {r["record_id"]: r for r in pq.read_table(tmp_path / "replay" / "replay.parquet").to_pylist()}
    for rid, (eps, rank, lower, form) in info.items():
        r = rows[rid]
        assert r["validated_upper"] == rank, (rid, r)  # the witness, charged over every entry
        assert r["upper_route"] == "binary64-bound"  # the binary64 enclosure (Step Z) is available
        assert r["validated_lower"] == lower >= 2, (rid, r)
        assert all(o["outcome"] == "proved" for o in r["lower_outcomes"]), r["lower_outcomes"]
        assert any(f"over the {form} support" in a for a in r["assumptions"])
        assert r["chi_upper"] is not None and float(r["chi_upper"]) < 1e-12
