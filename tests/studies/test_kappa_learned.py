"""Learned heads end to end (slow: loads MiniLM and SmolLM2): extract a tiny store with
``softrank extract``, then tau check, gauge audit, kappa-gamma and kappa brackets on it."""

import json

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("model,extra", [("minilm", ["--tokens", "64"]), ("smollm2", ["--tokens", "128", "--widths", "64"])])
def test_learned_heads_end_to_end(tmp_path, capsys, model, extra):
    from softrank.cli import main

    store = tmp_path / model
    assert main(["extract", "--model", model, "--out", str(store), "--sources", "1", "--max-operators", "3",
                 "--no-progress", *extra]) == 0
    capsys.readouterr()
    assert main(["theorem", "tau", str(store), "--rank", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["proved"] == out["summary"]["operators"] == 3
    assert main(["theorem", "gauge-audit", str(store), "--rank", "4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert all(r["A_change_validated_upper"] < 1e-9 and r["kappa_lower_rel_change"] < 1e-6 for r in rows)
    assert main(["kappa", str(store), "--rank", "2,8", "--json"]) == 0
    summ = json.loads(capsys.readouterr().out)["summary"]
    assert summ["lower_validated"] == 3 and summ["max_rel_gap"] <= 0.01
