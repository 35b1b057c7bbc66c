"""``softrank bench oracle`` (acceptance 4): a quick smoke run here; the full run is measured in the note."""

from __future__ import annotations

import json
from types import SimpleNamespace

from softrank.cli.bench import oracle as bench


def test_bench_oracle_quick(capsys):
    assert bench.main(SimpleNamespace(repeats=2, quick=True)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["profile_3x3"]["median_s"] < 2.0
    r = out["rank1_4x4"]
    assert r["all_patterns"]["recheck"] and r["pruned"]["recheck"]
    assert r["all_patterns"]["patterns_in_certificate"] in (0, 8)
