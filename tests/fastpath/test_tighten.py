"""``softrank tighten`` (fastpath/tighten/records*.py): the minimax optimiser lowers a loose upper end and
never keeps a witness that fails its float64 check; decoder growth never keeps a certificate whose
float64 value exceeds 1 - MARGIN; tightening never makes a bracket worse (float64 and validated)
and passes every stored tolerance's ``eps`` field through unchanged."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from softrank.findings.replay_job import replay_store
from softrank.fastpath.tighten import lower as tighten_lower
from softrank.fastpath.tighten import upper as tighten_upper
from softrank.fastpath.float64 import decoder_value, max_row_l1, rowsoftmax64
from softrank.fastpath.lower.certificates import MARGIN, Certificate
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.rank_search import Witness
from softrank.fastpath.tighten.records import tighten_record
from softrank.fastpath.tighten.store import tighten_store
from softrank.exact.tolerance import Tolerance
from softrank.fastpath.store.writer import RecordWriter
from softrank.replay.reader import read_record

N = 28
EPS = (0.25, "7/20")  # a binary64 tolerance and an exact one written as text


def operator(seed: int = 0, n: int = N) -> tuple[np.ndarray, np.ndarray, float]:
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
    return Q, K, 2.0


def loose_record(store, rid: str = "syn-loose", seed: int = 0):
    """A record whose witnesses are the full-rank truncated SVD (rank N) and whose decoders have
    one row (W = ones): valid, and as loose as a bracket can be."""
    Q, K, scale = operator(seed)
    A = rowsoftmax64(scale * Q @ K.T)
    U, s, Vt = np.linalg.svd(A)
    X, Y = U * s, Vt.T
    with RecordWriter(store, rid, provenance={"model": "synthetic", "family": "syn", "layer": 0, "head": 0}) as w:
        w.set_qk(Q, K, scale)
        w.set_a_hat(A)
        for eps in EPS:
            cert = {"kind": "decoder", "lower": 1, "rows": np.array([0], dtype=np.int64), "W": np.ones((N, 1))}
            w.add_tolerance(eps, upper=(X, Y, "tsvd"), lower=[cert],
                            float64={"lower": 1, "upper": N, "verdicts": {"8": "unresolved"}})
    return A


def test_minimax_lowers_the_rank_of_a_loose_witness():
    Q, K, scale = operator(1)
    op = OperatorCache(rowsoftmax64(scale * Q @ K.T))
    U, s, Vt = op.svd
    w = Witness(N, U * s, Vt.T, "tsvd", max_row_l1(op.A, U * s, Vt.T))
    log = []
    best = tighten_upper.descend_minimax(op, w, 0.25, 1, time.perf_counter() + 10, log=log)
    assert best.rank < N // 2
    assert max_row_l1(op.A, best.X, best.Y) <= 0.25 - MARGIN
    assert best.X.shape == (N, best.rank) and best.Y.shape == (N, best.rank)
    assert any(ok for _, ok, _ in log)


def test_minimax_never_keeps_a_witness_that_fails_its_check(monkeypatch):
    Q, K, scale = operator(2)
    op = OperatorCache(rowsoftmax64(scale * Q @ K.T))
    U, s, Vt = op.svd
    w = Witness(N, U * s, Vt.T, "tsvd", 0.0)

    def lying_adam(A, X, Y, target, deadline, settings):  # claims error 0 for a wrong witness
        return 0.0, X + 1.0, Y

    monkeypatch.setattr(tighten_upper, "minimax_adam", lying_adam)
    assert tighten_upper.fit_rank(op, w, N - 2, 0.25 - MARGIN, time.perf_counter() + 5) is None
    assert tighten_upper.descend_minimax(op, w, 0.25, 1, time.perf_counter() + 5) is w


def test_a_failing_one_rank_step_is_retried_once_with_a_larger_step(monkeypatch):
    """The descent's control flow: rank 9 -> 8 fails with the default step and passes on the
    retry (larger lr); 8 -> 7 fails both times and ends the descent."""
    Q, K, scale = operator(2)
    op = OperatorCache(rowsoftmax64(scale * Q @ K.T))
    U, s, Vt = op.svd
    w = Witness(9, U[:, :9] * s[:9], Vt[:9].T, "tsvd", 0.0)
    calls = []

    def scripted(op_, best, k, target, deadline, settings):
        calls.append((k, settings.lr))
        if k == 8 and settings.lr > tighten_upper.TIGHTEN_SETTINGS.lr:
            return Witness(8, best.X[:, :8], best.Y[:, :8], "minimax", 0.0)
        return None

    monkeypatch.setattr(tighten_upper, "fit_rank", scripted)
    settings = replace(tighten_upper.TIGHTEN_SETTINGS, step_fraction=0.01)  # one-rank steps from the start
    log = []
    best = tighten_upper.descend_minimax(op, w, 0.25, 1, time.perf_counter() + 5, settings, log=log)
    lr, big = settings.lr, settings.lr * tighten_upper.RETRY_STEP_FACTOR
    assert calls == [(8, lr), (8, big), (7, lr), (7, big)]
    assert best.rank == 8 and [ok for _, ok, _ in log] == [False, True, False, False]


def test_decoder_growth_keeps_float64_values_below_one():
    Q, K, _ = operator(3)
    A = rowsoftmax64(3.0 * Q @ K.T)
    start = Certificate("decoder", 1, rows=np.array([0]), W=np.ones((N, 1)))
    log = []
    grown = tighten_lower.grow_decoder(A, start, 0.25, N, time.perf_counter() + 10, log=log)
    assert grown.lower > 1 and grown.lower == len(grown.rows) == grown.W.shape[1]
    assert len(set(np.asarray(grown.rows).tolist())) == grown.lower
    assert decoder_value(A, np.asarray(grown.rows), grown.W, 0.25) <= 1 - MARGIN


def test_decoder_growth_rejects_a_w_that_misses(monkeypatch):
    Q, K, _ = operator(3)
    A = rowsoftmax64(3.0 * Q @ K.T)
    start = Certificate("decoder", 1, rows=np.array([0]), W=np.ones((N, 1)))

    def lying_decoder(A, rows, D, eps):  # a W whose true value is far above 1, claimed 0
        return 0.0, 100.0 * np.ones((A.shape[1], len(rows)))

    from softrank.fastpath.lower import decoder_oracle

    monkeypatch.setattr(tighten_lower, "decoder_from", lying_decoder)
    monkeypatch.setattr(decoder_oracle, "decoder_from", lying_decoder)  # the scan's oracle too
    grown = tighten_lower.grow_decoder(A, start, 0.25, N, time.perf_counter() + 5)
    assert grown is start


def _peaks_with_copies(n_peaks: int, copies: int, c: float = 6.0) -> np.ndarray:
    """Rows 0..n_peaks-1 peaked on distinct columns; then ``copies`` exact copies of row 0."""
    n = n_peaks + copies
    h = np.zeros((n, n))
    h[np.arange(n_peaks), np.arange(n_peaks)] = c
    h[n_peaks:] = h[0]
    return rowsoftmax64(h)


def test_the_scan_finds_every_extending_row_and_skips_rows_close_to_the_set():
    A = _peaks_with_copies(4, 4)
    rows = np.array([0], dtype=np.int64)
    W = np.linalg.pinv(A[rows])
    v0 = decoder_value(A, rows, W, 0.25)
    assert v0 <= 1 - MARGIN
    log = []
    rows2, W2, v2 = tighten_lower.scan_extensions(A, rows, W, v0, 0.25, 8, time.perf_counter() + 20, log=log)
    assert sorted(rows2.tolist()) == [0, 1, 2, 3]  # the copies of row 0 (l1 distance 0) are never tried
    assert decoder_value(A, rows2, W2, 0.25) == v2 <= 1 - MARGIN
    # three LPs, each a success: after row 3 only the copies are left, and they are never tried
    assert [ok for _, ok, _ in log] == [True, True, True]


def _peaks_and_a_spread_row() -> np.ndarray:
    """Rows 0-3 peaked on columns 0-3; rows 4 and 5 spread over columns 0-2.  The largest decoder
    set is {0, 1, 2, 3}; a set holding row 4 has at most 3 rows (e.g. {2, 3, 4})."""
    h = np.zeros((6, 6))
    h[np.arange(4), np.arange(4)] = 6.0
    h[4, [0, 1, 2]] = 6.0
    h[5] = h[4]
    return rowsoftmax64(h)


def test_the_pool_search_swaps_a_row_the_scan_cannot_extend():
    A, eps = _peaks_and_a_spread_row(), 0.25
    rows = np.array([2, 3, 4], dtype=np.int64)
    v0, W, _ = tighten_lower.set_decoder(A, rows, eps)
    assert W is not None and v0 <= 1 - MARGIN
    deadline = time.perf_counter() + 30
    same = tighten_lower.scan_extensions(A, rows, W, v0, eps, 4, deadline)
    assert same[0].tolist() == rows.tolist()  # no single row extends {2, 3, 4}
    assert tighten_lower.far_pool(A, rows, eps, 5) == [0, 1, 2, 3, 4]  # row 5 (= row 4) left out
    rows2, W2, v2 = tighten_lower.pool_search(A, rows, W, v0, eps, deadline)
    assert sorted(rows2.tolist()) == [0, 1, 2, 3]
    assert decoder_value(A, rows2, W2, eps) == v2 <= 1 - MARGIN
    grown = tighten_lower.grow_decoder(A, Certificate("decoder", 3, rows=rows, W=W), eps, 4, deadline)
    assert grown.lower == 4 and decoder_value(A, np.asarray(grown.rows), grown.W, eps) <= 1 - MARGIN
    again = tighten_lower.pool_search(A, rows2, W2, v2, eps, deadline)  # no 5-row set exists
    assert again[0] is rows2


def test_stored_eps_skips_a_record_json_that_is_a_fifo(tmp_path):
    """Reading the stored tolerances never opens a pipe for reading (it would wait for a writer)."""
    import os
    import signal

    from softrank.fastpath.tighten.store import stored_eps

    store = tmp_path / "store"
    loose_record(store, "a", seed=0)
    loose_record(store, "b", seed=1)
    good, bad = store / "records" / "a", store / "records" / "b"
    (bad / "record.json").unlink()
    os.mkfifo(bad / "record.json")
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("stored_eps blocked on a FIFO"))
    signal.alarm(10)
    try:
        assert stored_eps([good, bad]) == stored_eps([good]) == {0.25, 0.35}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_tighten_never_makes_a_bracket_worse_and_the_replay_confirms(tmp_path):
    A = loose_record(tmp_path / "src")
    rows = tighten_record(tmp_path / "src" / "records" / "syn-loose", tmp_path / "out", None, 6.0)
    assert [r["eps"] for r in rows] == ["0.25", "7/20"]
    for r in rows:
        assert r["lower_after"] >= r["lower_before"] and r["upper_after"] <= r["upper_before"]
    assert any(r["upper_after"] < N for r in rows) and any(r["lower_after"] > 1 for r in rows)
    rec = read_record(tmp_path / "out" / "records" / "syn-loose")
    doc = json.loads((tmp_path / "out" / "records" / "syn-loose" / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == [0.25, "7/20"]  # the stored fields, unchanged
    for t in rec.tolerances:
        e = float(t.eps)
        assert max_row_l1(A, t.upper.X, t.upper.Y) <= e - MARGIN
        for c in t.lower:  # the new certificate first, the stored one kept
            assert decoder_value(A, c.data["rows"], c.data["W"], e) <= 1 - MARGIN
        assert t.lower[-1].lower == 1 and t.float64_lower == max(c.lower for c in t.lower)
    before = replay_store(tmp_path / "src", tmp_path / "r0")
    after = replay_store(tmp_path / "out", tmp_path / "r1")
    assert after.upper_proved == 2 and after.lower_rejected == 0 and after.upper_agree == after.lower_agree == 2
    assert before.upper_proved == 2


def test_tighten_store_copies_untouched_records_and_writes_the_table(tmp_path):
    loose_record(tmp_path / "src", "syn-a", seed=0)
    loose_record(tmp_path / "src", "syn-b", seed=1)
    rows = tighten_store(tmp_path / "src", tmp_path / "out", eps_list=[0.25], budget_seconds=0.0,
                         records=["syn-a"])
    src_b = (tmp_path / "src" / "records" / "syn-b" / "record.json").read_bytes()
    assert (tmp_path / "out" / "records" / "syn-b" / "record.json").read_bytes() == src_b
    table = (tmp_path / "out" / "tighten.csv").read_text().splitlines()
    assert table[0].startswith("record_id,model,eps,eps_value,lower_before,upper_before,lower_after,upper_after")
    assert len(table) == 1 + len(rows) and all(r["record_id"] == "syn-a" for r in rows)
    for r in rows:  # no time: nothing worse (the budget ends every search at once)
        assert r["lower_after"] >= r["lower_before"] and r["upper_after"] <= r["upper_before"]
    assert (tmp_path / "out" / "index.csv").exists()


@pytest.mark.parametrize("eps_list", [[0.3], [Fraction(1, 3)]])
def test_tighten_store_refuses_a_tolerance_no_record_stores(tmp_path, eps_list):
    from softrank.errors import InputError

    loose_record(tmp_path / "src")
    with pytest.raises(InputError, match="no record stores"):
        tighten_store(tmp_path / "src", tmp_path / "out", eps_list=eps_list)


def test_a_malformed_stored_decoder_is_not_a_start(tmp_path):
    Q, K, scale = operator(4)
    A = rowsoftmax64(scale * Q @ K.T)
    U, s, Vt = np.linalg.svd(A)
    bad = {"kind": "decoder", "lower": 1, "rows": np.array([N + 5], dtype=np.int64), "W": np.ones((N, 1))}
    with RecordWriter(tmp_path / "src", "syn-bad", provenance={"model": "synthetic"}) as w:
        w.set_qk(Q, K, scale)
        w.set_a_hat(A)
        w.add_tolerance(0.25, upper=(U * s, Vt.T, "tsvd"), lower=[bad], float64={"lower": 1, "upper": N})
    rows = tighten_record(tmp_path / "src" / "records" / "syn-bad", tmp_path / "out", None, 2.0)
    assert rows[0]["lower_after"] == 1 and rows[0]["upper_after"] < N
    rec = read_record(tmp_path / "out" / "records" / "syn-bad")
    assert rec.tolerances[0].lower[-1].data["rows"].tolist() == [N + 5]  # kept as stored, for the replay to judge


def test_write_keeps_the_strongest_certificates_up_to_the_readers_limit(tmp_path, monkeypatch):
    """A pass that adds a certificate to a tolerance already at the reader's limit keeps the
    strongest ones, so the written record stays readable (the limit lowered to 2 here)."""
    from softrank.fastpath.tighten import records as tg

    src = tmp_path / "src"
    h = np.random.default_rng(2).normal(size=(6, 6))
    with RecordWriter(src, "r1", {"model": "synthetic", "family": "synthetic"}) as w:
        w.set_logits(h)
        w.set_a_hat(rowsoftmax64(h))
        w.add_tolerance(Fraction(1, 4), upper=None, lower=[{"kind": "frobenius", "lower": 1},
                                                            {"kind": "frobenius", "lower": 2}],
                        float64={"lower": 2, "upper": None, "verdicts": {}})
    record = read_record(src / "records" / "r1")
    monkeypatch.setattr(tg, "MAX_LOWER", 2)
    state = tg.EpsState(index=0, tol=Tolerance.parse("1/4"), raw=record.tolerances[0].eps_text, text="1/4",
                        stored_witness=None,
                        stored_lower=2, witness=None, lower=3,
                        new_cert=Certificate("frobenius", 3))
    tg._write(tmp_path / "out", record, [state])
    kept = read_record(tmp_path / "out" / "records" / "r1").tolerances[0].lower
    assert sorted(c.lower for c in kept) == [2, 3]
