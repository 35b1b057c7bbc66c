"""Fast-path bracketing on operators extracted from the real models (real path, small panels):
extract -> bracket -> validated replay confirms every stored witness and certificate."""

from __future__ import annotations

import pytest

from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
from softrank.fastpath.bracket.store import bracket_store
from softrank.fastpath.upper import minimax
from softrank.findings.replay_job import replay_store
from softrank.replay.reader import list_records, read_record

pytest.importorskip("transformers")


def _extract(model, store, **opts):
    from softrank.fastpath.capture.extract import extract_to_store

    return extract_to_store(model, store, device="cpu", progress=False, **opts)


def _check_store(store, tmp_path, n_records, eps_list):
    rows = bracket_store(store, eps_list=eps_list, jobs=1)
    assert len(rows) == n_records * len(eps_list)
    for r in rows:
        assert 1 <= r["lower"] <= r["upper"] <= min(r["m"], r["N"])
        assert r["upper"] <= r["baseline_upper"] and r["lower"] >= r["baseline_lower"]
    summary = replay_store(store, tmp_path / "replay")
    assert summary.malformed == 0
    assert summary.upper_proved == summary.tolerances == n_records * len(eps_list)
    assert summary.lower_rejected == 0
    assert summary.upper_agree == summary.lower_agree == summary.tolerances
    return rows


def test_minilm_operators_bracketed_and_confirmed(tmp_path):
    store = tmp_path / "store"
    ids = _extract("minilm", store, sources=1, tokens=64, layers=[3], heads=[0, 5], max_operators=2)
    assert len(ids) == 2
    rows = _check_store(store, tmp_path, 2, (0.25,))
    rec = read_record(list_records(store)[0])
    assert rec.tolerances[0].upper.construction in (*ALL_CONSTRUCTIONS, minimax.CONSTRUCTION)
    assert rows[0]["N"] == 64


@pytest.mark.slow
def test_smollm2_blocks_bracketed_and_confirmed(tmp_path):
    store = tmp_path / "store"
    ids = _extract("smollm2", store, sources=1, widths=[128], max_operators=6)
    assert len(ids) == 6
    rows = _check_store(store, tmp_path, 6, (0.15, 0.25, 0.35))
    assert all(r["N"] == 128 for r in rows)
