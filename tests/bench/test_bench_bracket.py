"""``softrank bench bracket``: quality read beside cost per family, and ``--compare`` (basic against
fast mode, record by record) on a small store of synthetic attention matrices."""

from __future__ import annotations

import json
import math

import pytest

from softrank.cli import main
from softrank.bench import bracket as bench


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a benchmark writes nothing into the checkout


def test_quality_reads_the_quarter_rows():
    rows = [{"eps_text": "0.25", "lower": 4, "upper": 6, "resolved": True},
            {"eps_text": "0.25", "lower": 5, "upper": 5, "resolved": True},
            {"eps_text": "0.25", "lower": 2, "upper": 9, "resolved": False},
            {"eps_text": "0.15", "lower": 1, "upper": 40, "resolved": False}]
    q = bench.quality(rows)
    assert q["resolved"] == pytest.approx(2 / 3)
    assert q["median_U_over_L"] == pytest.approx(1.5)
    assert q["closed"] == pytest.approx(1 / 3)
    assert math.isnan(bench.quality([])["median_U_over_L"])


def test_compare_brackets_each_record_in_both_modes(tmp_path):
    store = tmp_path / "store"
    bench.make_store(store, 24, 2, seed=5)
    out = bench.compare_modes(store)
    assert set(out) == {"basic", "fast", "cpu_ratio_fast_to_basic"}
    for mode in ("basic", "fast"):
        assert out[mode]["cpu_seconds"] > 0
        assert 0 <= out[mode]["resolved_eps_0.25"] <= 1
        assert out[mode]["median_U_over_L_eps_0.25"] >= 1
    assert out["cpu_ratio_fast_to_basic"] == pytest.approx(out["fast"]["cpu_seconds"] / out["basic"]["cpu_seconds"],
                                                           rel=0.01)


def test_bench_bracket_of_a_store_prints_families(tmp_path, capsys):
    store = tmp_path / "store"
    bench.make_store(store, 24, 2, seed=6)
    assert main(["bench", "bracket", str(store), "--repeats", "1", "--json"]) == 0
    fam = json.loads(capsys.readouterr().out)["families"]["synthetic"]
    assert fam["operators"] == 2
    for key in ("ops_per_minute", "svd_equivalents", "resolved_eps_0.25", "median_U_over_L_eps_0.25"):
        assert fam[key] > 0
    assert "compare" not in fam


def test_bench_bracket_of_a_missing_store_is_one_line(tmp_path, capsys):
    assert main(["bench", "bracket", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nowhere" in err[0] and "records" in err[0]
