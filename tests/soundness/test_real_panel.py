"""The lower certificates on operators extracted from a real model (slow: loads MiniLM): float64 lower
certificates written by the small producer of tests/soundness/real_panel.py, replayed and regressed; the
validated lower end equals the float64 one on >= 95% of (record, eps)."""

from __future__ import annotations

import json

import pytest

import real_panel


@pytest.mark.slow
def test_minilm_panel_lower_ends_agree(tmp_path):
    rc = real_panel.main([str(tmp_path), "--minilm", "4", "--smollm2", "0", "--eps", "0.1,0.25"])
    assert rc == 0
    summary = json.loads((tmp_path / "panel_summary.json").read_text())
    assert summary["record_eps"] == 8
    assert summary["lower_equal_pct"] >= 95.0
    failures = json.loads((tmp_path / "regress" / "failures.json").read_text())
    assert not any(f["contradiction"] for f in failures)
