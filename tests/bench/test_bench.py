"""``softrank bench``: a quick smoke run of the oracle benchmark here (the full run is timed in
docs/oracle.md), and ``--repeats`` must be a count >= 1."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from softrank.cli import main
from softrank.bench import oracle as bench


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a benchmark writes nothing into the checkout


def test_bench_oracle_quick(capsys):
    assert bench.main(SimpleNamespace(repeats=2, quick=True)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["profile_3x3"]["median_s"] < 2.0
    r = out["rank1_4x4"]
    assert r["all_patterns"]["recheck"] and r["pruned"]["recheck"]
    assert r["all_patterns"]["patterns_in_certificate"] in (0, 8)
    p = out["profile_12x12"]
    assert p["recheck"] and 1 <= p["lower"] <= p["upper"] <= 12 and p["closed"] == (p["lower"] == p["upper"])
    assert sum(p["ranks_by_route"].values()) == p["upper"] + 1  # one decision per k = 0..upper


def test_zero_repeats_is_refused(capsys):
    assert main(["bench", "oracle", "--repeats", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().splitlines() == [
        "softrank bench: error: arguments: field 'repeats' must be an integer >= 1, got 0"]


@pytest.mark.parametrize("name", ["replay", "lower"])
def test_float64_benchmarks_quick(capsys, name):
    from softrank.bench import lower, upper

    module, last = {"replay": (upper, "binary64-bound / float64: median ratio"),
                    "lower": (lower, "worst binary64-bound / float64 ratio")}[name]
    assert module.main(SimpleNamespace(repeats=1, quick=True)) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(last)
