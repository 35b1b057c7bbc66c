"""``softrank study kappa``: a tiny replayed store end to end; the correlation, bootstrap and
resolved-bracket logic on hand-made data with known answers; the full-rank kappa bracket
(first-order dual ascent, validated dual and primal bounds) against exact values and the
interior-point SDP."""

from __future__ import annotations

import json
import math
import numpy as np
import pytest

from softrank.studies.kappa import kappa_corr as kcorr
from softrank.studies.kappa.kappa_full import bracket_kappa_eg, kappa_c_record, solve_kappa_eg


def make_replayed_store(root, count=4, n=12, d=3, eps=(0.25, 0.35), families=("fam",)):
    from softrank.findings.replay_job import replay_store
    from softrank.fastpath.bracket.store import bracket_store
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.store.writer import RecordWriter

    rng = np.random.default_rng(7)
    for f, fam in enumerate(families):
        for i in range(count):
            q, k, scale = rng.normal(size=(n, d)), rng.normal(size=(n, d)), 0.5 + 0.5 * i
            prov = {"model": "synthetic", "family": fam, "layer": 0, "head": i, "source_id": f"src{i % 2}"}
            with RecordWriter(root / "store", f"syn-{fam}-{i}", provenance=prov) as w:
                w.set_qk(q, k, scale)
                w.set_a_hat(rowsoftmax64(scale * q @ k.T))
    bracket_store(root / "store", jobs=1, eps_list=eps)
    replay_store(root / "store", root / "replay")
    return root / "store", root / "replay"


def test_tiny_store_end_to_end(tmp_path, capsys):
    from softrank.cli import main

    store, replay = make_replayed_store(tmp_path)
    out = tmp_path / "out"
    code = main(["study", "kappa", str(store), "--replay", str(replay), "--ranks", "2", "--out", str(out),
                 "--bootstrap", "100", "--json", "--no-progress"])
    res = json.loads(capsys.readouterr().out)
    s = res["summary"]
    assert code == 0 and s["operators_done"] == 4 and s["rows"] == 8 and not s["operators_failed"]
    assert s["kappa_lower_validated"] == s["kappa_brackets"] and s["tau_proved"] == s["tau_checks"]
    assert s["kappa_C"]["12"]["max_rel_gap"] <= 1e-3
    ops = [json.loads(p.read_text()) for p in sorted((out / "operators").glob("*.json"))]
    for op in ops:
        assert op["gamma"] is not None and op["kappa_C"]["lower"] <= op["gamma_upper"]  # kappa(C) <= Gamma
        for e in op["ranks"]:
            assert 0 < e["kappa_lower"] <= e["kappa_upper"] and e["kappa_lower"] <= e["kappa_bal_upper"]
            assert e["tau_lower"] <= e["tau_upper"]
        for eps, r in op["r_star"].items():
            assert next(e for e in op["ranks"] if e["r"] == r)["tau_upper"] < float(eps)
    cells = {(c["eps_value"], c["score"], c["target"], c["subset"]) for c in res["correlations"]}
    assert (0.25, "kappa(T_r*)", "mid", "all") in cells and (0.35, "Gamma", "upper", "resolved") in cells
    for name in ("rows.csv", "correlations.csv", "correlations.md", "study.json", "kappa-study.png"):
        assert (out / name).is_file()
    # a second run reuses every operator
    assert main(["study", "kappa", str(store), "--replay", str(replay), "--ranks", "2", "--out", str(out),
                 "--bootstrap", "10", "--resume", "--no-progress"]) == 0
    assert "operators_done: 4" in capsys.readouterr().out


def test_entries_of_records_that_are_not_folders_are_malformed_records(tmp_path):
    """A file, a FIFO and a dangling link in records/ have no bracket and were skipped without a
    word: each is now one stderr line (never opened), the operators are studied, exit code 2."""
    import subprocess
    import sys

    from helpers import add_stray_entries, assert_strays_reported

    store, replay = make_replayed_store(tmp_path, count=2, eps=(0.25,))
    strays = add_stray_entries(store)
    proc = subprocess.run([sys.executable, "-m", "softrank", "study", "kappa", str(store), "--replay", str(replay),
                           "--ranks", "2", "--out", str(tmp_path / "out"), "--bootstrap", "10", "--json",
                           "--no-progress"], capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    s = json.loads(proc.stdout)["summary"]
    assert s["operators_done"] == 2 and len(s["operators_failed"]) == 3
    assert sorted(p.name for p in (tmp_path / "out" / "operators").iterdir()) == ["syn-fam-0.json", "syn-fam-1.json"]


def test_a_malformed_record_is_one_line_naming_its_file(tmp_path, capsys):
    """A truncated record.json: one stderr line naming the file and field (no exception type, no
    matplotlib warning), the other operator is studied, exit code 2."""
    from softrank.cli import main

    store, replay = make_replayed_store(tmp_path, count=2, eps=(0.25,))
    bad = sorted((store / "records").iterdir())[0] / "record.json"
    bad.write_text(bad.read_text()[:150])
    code = main(["study", "kappa", str(store), "--replay", str(replay), "--ranks", "2", "--out",
                 str(tmp_path / "out"), "--bootstrap", "10", "--json", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"softrank study kappa: error: {bad.parent}: field 'record.json'") and "Error:" not in err[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    from softrank.cli import main

    (tmp_path / "store").mkdir()
    assert main(["study", "kappa", str(tmp_path / "store"), "--replay", str(tmp_path), "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "replay.parquet" in err[0]
    assert main(["study", "kappa", str(tmp_path / "store"), "--replay", str(tmp_path), "--out", str(tmp_path / "o"),
                 "--jobs", "0"]) == 2


def test_spearman_known_values():
    # ties get average ranks: x ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4) give 3/sqrt(10)
    res = kcorr.spearman_boot([1, 1, 2, 3], [1, 2, 3, 4], ["a", "b", "c", "d"], n_boot=50)
    assert res["rho"] == pytest.approx(3 / math.sqrt(10), abs=1e-12) and res["n"] == 4
    res = kcorr.spearman_boot([3, 1, 2, None, 5], [30, 10, 20, 99, 50], list("aabbc"), n_boot=50)
    assert res["rho"] == pytest.approx(1.0) and res["n"] == 4 and res["lo"] == res["hi"] == pytest.approx(1.0)
    assert math.isnan(kcorr.spearman_boot([1, 1, 1], [1, 2, 3], list("abc"))["rho"])


def test_bootstrap_resamples_whole_sources():
    # source a is concordant, source b discordant: drawing {a, a} gives +1, {b, b} gives -1 (each with
    # probability 1/4), so the percentile interval reaches both ends; a resample of single rows would not
    x = [1, 2, 3, 4, 5, 6]
    y = [1, 2, 3, 6, 5, 4]
    res = kcorr.spearman_boot(x, y, list("aaabbb"), n_boot=400, seed=1)
    assert res["lo"] == pytest.approx(-1.0) and res["hi"] == pytest.approx(1.0) and res["sources"] == 2


def test_resolved_and_theorem_form_and_table():
    assert kcorr.resolved(5, 10, 128) and kcorr.resolved(1, 3, 16) and kcorr.resolved(20, 45, 256)
    assert not kcorr.resolved(5, 11, 16)
    e = {"r": 2, "kappa_upper": 3.0, "tau_upper": 0.25}
    assert kcorr.theorem_form(e, 0.5) == pytest.approx(math.log(49))
    assert kcorr.theorem_form(e, 0.25) is None
    rows = [{"family": "f", "eps": "0.25", "eps_value": 0.25, "source_id": f"s{i % 3}", "lower": lo, "upper": up,
             "mid": (lo + up) / 2, "resolved": kcorr.resolved(lo, up, 64), "scores": {"kappa(T_r*)": float(i)}}
            for i, (lo, up) in enumerate([(1, 2), (2, 3), (3, 20), (5, 6), (8, 9), (9, 40)])]
    table = kcorr.correlation_table(rows, n_boot=50, scores=["kappa(T_r*)"])
    cell = {(c["target"], c["subset"]): c for c in table}
    assert cell["lower", "all"]["rho"] == pytest.approx(1.0) and cell["lower", "all"]["n"] == 6
    assert cell["mid", "resolved"]["n"] == 4 and cell["mid", "resolved"]["rho"] == pytest.approx(1.0)
    assert len(kcorr.markdown_table(table, scores=["kappa(T_r*)"])) == 3


def test_rank_one_kappa_is_the_product_of_half_ranges():
    # T = x y^T: every factorization is (s x, y / s), so kappa = rad(x) rad(y) = (range x / 2)(range y / 2)
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(9, 1)), rng.normal(size=(11, 1))
    exact = float(np.ptp(x)) / 2 * float(np.ptp(y)) / 2
    row = bracket_kappa_eg(x, y)
    assert row["lower"] <= exact * (1 + 1e-12) and exact <= row["upper"] * (1 + 1e-12)
    assert row["rel_gap"] < 2e-5


def test_full_rank_bracket_validated_and_inside_the_sdp():
    from softrank.studies.theorem.kappa_sdp import dual_lower_best, solve_kappa_sdp
    from softrank.validated import kappa_certificates as kc

    rng = np.random.default_rng(5)
    x, y = rng.normal(size=(24, 5)), rng.normal(size=(20, 5))
    row = bracket_kappa_eg(x, y, tol=1e-5)
    assert row["lower_validated"] and 0 < row["lower"] <= row["upper"] and row["rel_gap"] <= 1e-3
    sol = solve_kappa_eg(x, y, tol=1e-5)
    direct = dual_lower_best(x, y, sol.p, sol.q)  # the validated dual bound, recomputed
    assert direct is not None and float(direct) >= row["lower"]
    primal = kc.kappa_upper_primal(x, y, sol.s, sol.cx, sol.cy)
    assert primal is not None and float(primal) >= row["upper"] * (1 - 1e-12)
    sdp = solve_kappa_sdp(x, y)  # interior point (Clarabel), float
    assert row["lower"] * (1 - 1e-7) <= sdp.value <= row["upper"] * (1 + 1e-7)


def test_kappa_c_record_scales_by_beta():
    from types import SimpleNamespace

    rng = np.random.default_rng(11)
    q, k = rng.normal(size=(16, 4)), rng.normal(size=(14, 4))
    rec = SimpleNamespace(form="qk", bias=None, queries=q, keys=k, scale=0.125, record_id="r")
    row = kappa_c_record(rec)
    base = bracket_kappa_eg(q, k)
    assert row["exact_c"] and row["lower"] <= row["upper"]
    assert row["lower"] == pytest.approx(0.125 * base["lower"], rel=1e-12)
    assert row["upper"] == pytest.approx(0.125 * base["upper"], rel=1e-12)


@pytest.mark.slow
def test_larger_run_two_families_two_jobs(tmp_path, capsys):
    from softrank.cli import main

    store, replay = make_replayed_store(tmp_path, count=6, n=40, d=8, eps=(0.15, 0.25, 0.35), families=("a", "b"))
    out = tmp_path / "out"
    code = main(["study", "kappa", str(store), "--replay", str(replay), "--out", str(out), "--jobs", "2",
                 "--bootstrap", "300", "--json", "--no-progress"])
    res = json.loads(capsys.readouterr().out)
    s = res["summary"]
    assert code == 0 and s["operators_done"] == 12 and s["rows"] == 36
    assert s["kappa_lower_validated"] == s["kappa_brackets"] and s["kappa_C"]["40"]["max_rel_gap"] <= 1e-3
    assert {c["family"] for c in res["correlations"]} == {"a", "b"}


def test_malformed_rows_and_records_are_reported_not_crashed_on(tmp_path):
    """read_brackets skips a malformed record's row (no bracket; float(None) was a traceback) and
    refuses a foreign table; select_operators names unknown --records (the study exited 1 in
    silence) and never opens a FIFO as record.json."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from softrank.studies.kappa.kappa_study import read_brackets, select_operators
    from softrank.fastpath.store.writer import RecordWriter
    from softrank.errors import InputError

    rows = [{"record_id": "a", "eps": "0.25", "eps_value": 0.25, "validated_lower": 1, "validated_upper": 2},
            {"record_id": "b", "eps": None, "eps_value": None, "validated_lower": None, "validated_upper": None}]
    (tmp_path / "r").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "r" / "replay.parquet")
    assert read_brackets(tmp_path / "r") == {"a": {0.25: ("0.25", 1, 2)}}
    (tmp_path / "r" / "replay.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(InputError, match="not a readable parquet table"):
        read_brackets(tmp_path / "r")
    with RecordWriter(tmp_path / "store", "a", {"family": "f"}) as w:
        w.set_logits(np.zeros((2, 2)))
        w.set_a_hat(np.full((2, 2), 0.5))
    (tmp_path / "store" / "records" / "b").mkdir()
    os.mkfifo(tmp_path / "store" / "records" / "b" / "record.json")
    brackets = {"a": {0.25: ("0.25", 1, 2)}, "b": {0.25: ("0.25", 1, 2)}}
    assert sorted(it["record_id"] for it in select_operators(tmp_path / "store", brackets)) == ["a", "b"]
    with pytest.raises(InputError, match="nope"):
        select_operators(tmp_path / "store", brackets, records="a,nope")


def test_zero_kappa_converges_instead_of_dividing_by_zero():
    # a constant factor (x or y constant in every column): kappa = 0, the relative gap is 0/0
    x, y = np.ones((6, 1)), np.linspace(-1.0, 2.0, 7)[:, None]
    sol = solve_kappa_eg(x, y)
    assert sol.status == "converged"
    row = bracket_kappa_eg(x, y)
    assert row["upper"] == 0.0 and row["lower"] <= row["upper"]
