"""The replay of a store (``softrank.findings.replay_job``): tables, manifest and summary; a record
that cannot be read is one malformed row and exit code 2; an empty store writes nothing."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from softrank.fastpath.demo import build_demo_store
from softrank.findings.replay_job import FAIL_ON, ReplayJob, ReplaySummary, replay_store
from softrank.errors import InputError


def test_a_store_with_a_stray_entry_is_replayed_and_the_entry_is_one_malformed_row(tmp_path):
    build_demo_store(tmp_path / "store", operators=2, size=24)
    (tmp_path / "store" / "records" / "stray").write_text("not a record folder")
    job = ReplayJob(tmp_path / "store", tmp_path / "out")
    summary = job.execute()
    assert (summary.records, summary.malformed, summary.tolerances) == (3, 1, 6)
    assert summary.exit_code() == 2 and summary.exit_code(FAIL_ON) == 2 and len(summary.errors) == 1
    rows = pq.read_table(tmp_path / "out" / "replay.parquet").to_pylist()
    assert rows == job.rows and len(rows) == 7
    stray = [r for r in rows if r["record_id"] == "stray"]
    assert len(stray) == 1 and stray[0]["status"] == "malformed" and "stray" in stray[0]["error"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["records"] == 3 and manifest["summary"]["malformed"] == 1
    assert manifest["summary"] == summary.as_json() and not (tmp_path / "out" / ".partial").exists()


def test_an_empty_store_writes_nothing(tmp_path):
    (tmp_path / "store" / "records").mkdir(parents=True)
    with pytest.raises(InputError, match="no records"):
        replay_store(tmp_path / "store", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_exit_codes_by_outcome():
    assert ReplaySummary().exit_code(FAIL_ON) == 0
    assert ReplaySummary(upper_unresolved=1).exit_code() == 0
    assert ReplaySummary(upper_unresolved=1).exit_code(("unresolved",)) == 1
    assert ReplaySummary(lower_refuted=1).exit_code(("refuted",)) == 1
    assert ReplaySummary(malformed=1, upper_refuted=1).exit_code(("refuted",)) == 2
    assert ReplaySummary(contradictions=1, malformed=1).exit_code() == 3
