"""The block-width study: aggregation of validated verdicts per (width, budget), the paired sign
test and the class rule on hand-made rows (no model); and, marked slow, a tiny study end to end on
a config-built Llama (extract the same pairs at two widths, bracket, replay, aggregate)."""

from __future__ import annotations

import json
import math

import pytest
from softrank.studies.widths.widths import (
    ALPHA,
    DECLINES,
    UNRESOLVED,
    aggregate,
    classify,
    sign_test,
    verdict,
)


def _row(n, pair, lower, upper, f_lower=None, f_upper=None):
    return {"N": n, "source_id": f"s{pair // 10}", "layer": pair % 10, "head": 0, "validated_lower": lower,
            "validated_upper": upper, "float64_lower": lower if f_lower is None else f_lower,
            "float64_upper": upper if f_upper is None else f_upper}


def test_verdict_uses_both_ends():
    assert verdict(8, 3, 8) == "feasible" and verdict(8, 9, None) == "impossible"
    assert verdict(8, 3, 20) == "unresolved" and verdict(8, None, None) == "unresolved"


def test_aggregate_shares_per_width_and_budget():
    rows = [_row(64, 0, 1, 4), _row(64, 1, 2, 12), _row(64, 2, 20, 30, f_upper=6), _row(64, 3, 1, None),
            _row(128, 0, 5, 9), _row(128, 1, 17, 40)]
    cells = {(c["N"], c["k"]): c for c in aggregate(rows, [8, 16])}
    assert set(cells) == {(64, 8), (64, 16), (128, 8), (128, 16)}
    c = cells[(64, 8)]
    assert (c["operators"], c["feasible"], c["impossible"], c["unresolved"]) == (4, 0.25, 0.25, 0.5)
    assert c["float64_feasible"] == 0.5  # the float64 ends of row 2 claim rank 6
    assert (cells[(64, 16)]["feasible"], cells[(64, 16)]["impossible"]) == (0.5, 0.25)
    assert (cells[(128, 16)]["feasible"], cells[(128, 16)]["impossible"], cells[(128, 16)]["unresolved"]) == \
           (0.5, 0.5, 0.0)
    for cell in cells.values():
        assert math.isclose(cell["feasible"] + cell["impossible"] + cell["unresolved"], 1.0)
    json.dumps({"cells": list(cells.values())})  # the --json shape is plain JSON


def test_sign_test():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == 1 / 32
    assert sign_test(3, 1) == (4 + 1) / 16
    assert sign_test(0, 4) == 1.0


def test_class_rule():
    # 10 pairs: feasible at N = 64 everywhere; at N = 512 feasible for `keep` of them
    def rows(keep, n_pairs=10):
        return ([_row(64, p, 1, 4) for p in range(n_pairs)]
                + [_row(512, p, 1, 4 if p < keep else 40) for p in range(n_pairs)])

    declines = classify(rows(keep=4), [8])[0]  # 60 points, 6 discordant pairs all one way: p = 1/64
    assert declines["class"] == DECLINES and declines["p_value"] < ALPHA and declines["drop_points"] == 60.0
    small = classify(rows(keep=9), [8])[0]  # 10 points but p = 1/2
    assert small["class"] == UNRESOLVED and small["drop_points"] == 10.0
    flat = classify(rows(keep=10), [8])[0]
    assert flat["class"] == UNRESOLVED and flat["p_value"] == 1.0
    big_n = classify(rows(keep=90, n_pairs=100), [8])[0]  # 10 points, p = 2^-10: both conditions hold
    assert big_n["class"] == DECLINES
    rises = classify([_row(64, p, 1, 40) for p in range(8)] + [_row(512, p, 1, 4) for p in range(8)], [8])[0]
    assert rises["class"] == UNRESOLVED and rises["drop_points"] == -100.0
    assert classify([_row(64, 0, 1, 4)], [8])[0]["class"] == UNRESOLVED  # one width: no trend


@pytest.mark.slow
def test_tiny_study_end_to_end(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from softrank.studies.widths.widths import run_study
    from softrank.replay.reader import list_records, read_record

    torch.manual_seed(0)
    folder = tmp_path / "tiny-llama"
    transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=37, max_position_embeddings=128)).save_pretrained(folder)
    with pytest.warns(UserWarning, match="byte"):
        result = run_study(str(folder), tmp_path / "out", widths=[8, 16], budgets=[2, 4], operators=4, jobs=1,
                           sources=2)
    records = [read_record(f) for f in list_records(tmp_path / "out" / "store")]
    assert len(records) == 8 and {r.shape for r in records} == {(8, 8), (16, 16)}
    pairs = {w: {(r.provenance["source_id"], r.provenance["layer"], r.provenance["head"]) for r in records
                 if r.provenance["block_width"] == w} for w in (8, 16)}
    assert pairs[8] == pairs[16] and len(pairs[8]) == 4  # the same operators at every width
    assert all(r.provenance["positions"] == [32 - w, 32] for r in records for w in [r.provenance["block_width"]])
    assert [(c["N"], c["k"]) for c in result["cells"]] == [(8, 2), (8, 4), (16, 2), (16, 4)]
    assert all(c["operators"] == 4 for c in result["cells"]) and len(result["classes"]) == 2
    saved = json.loads((tmp_path / "out" / "study.json").read_text())
    assert saved["cells"] == result["cells"] and (tmp_path / "out" / "study.csv").is_file()
