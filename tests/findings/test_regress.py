"""Float64 versus validated verdicts (``softrank.findings.regress``): transitions, ends, failures
with their reasons, the summary counts, and the saved tables."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from softrank.findings.regress import analyse, save, totals

ROWS = [
    {"record_id": "a", "status": "ok", "family": "f", "eps": "0.25", "float64_lower": 2, "float64_upper": 4,
     "validated_lower": 2, "validated_upper": 5, "upper_rank": 4, "upper_outcome": "refuted", "upper_bound": "0.3",
     "upper_reason": "bound above eps", "lower_kind": "frobenius", "lower_outcomes": []},
    {"record_id": "b", "status": "ok", "family": "f", "eps": "0.25", "float64_lower": 3, "float64_upper": 3,
     "validated_lower": 1, "validated_upper": 3, "upper_rank": 3, "upper_outcome": "proved", "upper_bound": "0.2",
     "lower_kind": "trivial",
     "lower_outcomes": [{"kind": "frobenius", "claimed": 3, "outcome": "unresolved", "reason": "ball too wide"}]},
    {"record_id": "c", "status": "malformed", "error": "records/c: field 'x': missing"},
]
VERDICTS = [
    {"record_id": "a", "family": "f", "eps": "0.25", "k": 4, "float64_verdict": "feasible",
     "validated_verdict": "unresolved"},
    {"record_id": "a", "family": "f", "eps": "0.25", "k": 1, "float64_verdict": "impossible",
     "validated_verdict": "impossible"},
    {"record_id": "b", "family": "f", "eps": "0.25", "k": 2, "float64_verdict": "impossible",
     "validated_verdict": "unresolved"},
]


def test_transitions_ends_and_failures_with_their_reasons():
    tables = analyse(ROWS, VERDICTS)
    assert {(t["float64_verdict"], t["validated_verdict"]): t["count"] for t in tables["transitions"]} == {
        ("feasible", "unresolved"): 1, ("impossible", "impossible"): 1, ("impossible", "unresolved"): 1}
    assert tables["ends"] == [{"family": "f", "eps": "0.25", "records": 2, "lower_equal": 1, "upper_equal": 1,
                               "lower_equal_pct": 50.0, "upper_equal_pct": 50.0}]
    upper, lower = tables["failures"]
    assert upper["end"] == "upper" and upper["validated_end"] == 5 and not upper["contradiction"]
    assert "Lemma U" in upper["reason"] and "excess bound - eps = +5.000e-02" in upper["reason"]
    assert lower["end"] == "lower" and "frobenius claims r >= 3: unresolved" in lower["reason"]
    assert "ball too wide" in lower["reason"]
    assert {(d["record_id"], d["end"]) for d in tables["end_differences"]} == {("a", "upper"), ("b", "lower")}
    assert totals(tables) == {"verdicts": 3, "agree": 1, "failures": 2, "contradicted": 0, "lower_equal": 1,
                              "records": 2}


def test_the_tables_are_saved_in_three_formats(tmp_path):
    tables = analyse(ROWS, VERDICTS)
    save(tables, tmp_path / "out")
    for name, rows in tables.items():
        assert pq.read_table(tmp_path / "out" / f"{name}.parquet").to_pylist() == rows
        assert json.loads((tmp_path / "out" / f"{name}.json").read_text()) == rows
        assert (tmp_path / "out" / f"{name}.csv").is_file()
