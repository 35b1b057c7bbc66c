"""``softrank.pipeline.steps``: the extraction step of the default panel counts SmolLM2's native
causal operators beside its common-prefix blocks, and a ``--limit``ed run of the real SmolLM2
(one operator of each kind, one tolerance) writes a native record with a causal support whose
bracket is replayed and proved, summarised apart from the blocks (support "causal" and "full")."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from softrank.pipeline.steps import ExtractStep, Hooks, Settings
from softrank.replay.reader import read_record
from softrank.replay.tolerance import Tolerance


def test_the_default_extraction_counts_the_native_operators(tmp_path):
    step = ExtractStep(Settings(out=tmp_path, tolerances=[Tolerance.parse("0.25")]), Hooks())
    assert step.counts == {"minilm": 64, "smollm2": 54, "smollm2-native": 54}
    assert step.params()["counts"]["smollm2-native"] == 54
    limited = ExtractStep(Settings(out=tmp_path, tolerances=[], limit=1, given={"minilm": 0}), Hooks())
    assert limited.counts == {"smollm2": 1, "smollm2-native": 1}


def test_a_limited_run_replays_and_proves_a_native_causal_operator(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "softrank", "run", "--limit", "1", "--minilm", "0", "--eps", "0.25",
                           "--jobs", "1", "--no-progress", "--json", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    records = sorted(p.name for p in (out / "store" / "records").iterdir())
    assert len(records) == 2 and records[1] == records[0].replace("-blk128", "-native")  # the same head, source
    native = read_record(out / "store" / "records" / records[1])
    assert native.support is not None and native.support.form == "causal" and native.mask.shape == (128, 128)
    block = read_record(out / "store" / "records" / records[0])
    assert block.support is None and block.provenance["positions"] == [128, 256]
    assert np.array_equal(native.keys, block.keys)  # the first 128 tokens of the same pass and head
    replay = result["replay_summary"]
    assert replay["upper_proved"] == replay["upper_agree"] == replay["lower_agree"] == replay["tolerances"] == 2
    assert replay["lower_rejected"] == replay["lower_refuted"] == replay["lower_unresolved"] == 0
    with open(out / "replay" / "replay.csv", newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["record_id"] == records[1])
    assert row["attention"] == "decoder-self" and row["upper_outcome"] == "proved"
    assert {o["outcome"] for o in json.loads(row["lower_outcomes"])} == {"proved"}
    assert row["validated_lower"] == row["float64_lower"] and row["validated_upper"] == row["float64_upper"]
    table = {r["family"]: r for r in result["table"]}
    assert set(table) == {"SmolLM2-135M (decoder-self)", "SmolLM2-135M (decoder-self-block)"}
    assert table["SmolLM2-135M (decoder-self)"]["support"] == "causal"
    assert table["SmolLM2-135M (decoder-self-block)"]["support"] == "full"
    assert all(r["replayed"] == 1 and r["validated_agreement"] == 1.0 for r in result["table"])
    assert any("not applications of the rank theorem" in note for note in result["notes"])
    page = Path(result["report"]).read_text(encoding="utf-8")
    assert "support: causal" in page and "common-prefix blocks" in page
