"""Baselines of ``softrank regress`` (``softrank.findings.regress_baseline``): written, read back,
and compared one line per change."""

from __future__ import annotations

import json

import pytest

from softrank.findings.regress_baseline import BASELINE_SCHEMA, baseline, changes, load_baseline, write_baseline
from softrank.errors import InputError

ROWS = [{"record_id": "a", "status": "ok", "eps": "0.25", "validated_lower": 2, "validated_upper": 3,
         "upper_outcome": "proved"},
        {"record_id": "b", "status": "malformed", "eps": None}]
VERDICTS = [{"record_id": "a", "eps": "0.25", "k": 2, "validated_verdict": "unresolved"},
            {"record_id": "a", "eps": "0.25", "k": 10, "validated_verdict": "feasible"}]


def test_a_baseline_round_trips_and_changes_are_listed(tmp_path):
    current = baseline(ROWS, VERDICTS)
    assert current["schema"] == BASELINE_SCHEMA and sorted(current["records"]) == ["a", "b"]
    write_baseline(current, tmp_path / "base.json")
    assert load_baseline(tmp_path / "base.json") == json.loads(json.dumps(current))
    assert changes(current, current) == []
    moved = json.loads(json.dumps(current))
    moved["records"]["a"]["eps"]["0.25"]["validated_upper"] = 4
    moved["records"]["a"]["eps"]["0.25"]["verdicts"]["10"] = "unresolved"
    del moved["records"]["b"]
    assert changes(current, moved) == ["b: missing from the replay",
                                       "a eps 0.25: validated_upper 3 -> 4; verdict k=10 feasible -> unresolved"]


def test_a_file_that_is_not_a_baseline_is_one_line(tmp_path):
    (tmp_path / "x.json").write_text('{"schema": "something else", "records": {}}')
    with pytest.raises(InputError, match="not a replay baseline"):
        load_baseline(tmp_path / "x.json")
