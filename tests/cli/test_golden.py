"""The golden baseline: a small store kept in tests/golden/store (SmolLM2 and MiniLM records of the
default panel, synthetic demo operators, accepted, rejected and one malformed soundness record) and
its expected validated results in tests/golden/expected.json.  A replay that changes any status,
validated bracket, witness outcome or verdict fails here; ``softrank regress --against`` names it."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
CHANGED = "smollm2-argparse.0-L05-H01-blk128"


def _softrank(*args, cwd):
    return subprocess.run([sys.executable, "-m", "softrank", *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def golden_replay(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    proc = _softrank("replay", GOLDEN / "store", "--out", root / "replay", "--quiet", cwd=root)
    assert proc.returncode == 2, proc.stderr  # the one malformed record, the others replayed
    assert "bad-hash-mismatch" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    return root / "replay"


def test_store_is_small_and_whole():
    files = [p for p in (GOLDEN / "store").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 8 * 2**20
    expected = json.loads((GOLDEN / "expected.json").read_text())
    records = sorted(p.name for p in (GOLDEN / "store" / "records").iterdir())
    assert sorted(expected["records"]) == records and len(records) >= 24
    assert any(r.startswith("smollm2-") for r in records) and any(r.startswith("minilm-") for r in records)


def test_replay_matches_the_golden_verdicts(golden_replay, tmp_path):
    from softrank.findings.regress_baseline import replay_baseline

    current = replay_baseline(golden_replay)
    expected = json.loads((GOLDEN / "expected.json").read_text())
    assert current == expected
    proc = _softrank("regress", golden_replay, "--out", tmp_path / "reg", "--against", GOLDEN / "expected.json",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 changes (26 records compared)" in proc.stdout and "CHANGED" not in proc.stdout


def _break_witness(store: Path, record_id: str, eps: float) -> None:
    """Scale one upper witness factor by 1.5 (its error then exceeds eps) and re-hash it."""
    manifest = store / "records" / record_id / "record.json"
    doc = json.loads(manifest.read_text())
    tol = next(t for t in doc["tolerances"] if float(t["eps"]) == eps)
    ref = tol["upper"]["X"]
    path = manifest.parent / ref["path"]
    np.save(path, np.load(path) * 1.5)
    ref["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(doc, indent=1))


def test_a_changed_witness_fails_the_regress_and_is_named(golden_replay, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", store)
    _break_witness(store, CHANGED, 0.25)
    proc = _softrank("replay", store, "--out", tmp_path / "replay", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2 and "bad-hash-mismatch" in proc.stderr  # still well-formed apart from that one
    for baseline in (GOLDEN / "expected.json", golden_replay):  # a baseline JSON or a replay folder
        proc = _softrank("regress", tmp_path / "replay", "--out", tmp_path / "reg", "--against", baseline,
                         cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        changed = [line for line in proc.stdout.splitlines() if line.startswith("CHANGED")]
        assert len(changed) == 1 and CHANGED in changed[0] and "eps 0.25" in changed[0]
        assert "upper_outcome proved -> refuted" in changed[0] and "validated_upper 12 -> None" in changed[0]
        assert "verdict k=16 feasible -> unresolved" in changed[0]
        assert "1 change (26 records compared)" in proc.stdout


def test_against_refuses_a_file_that_is_not_a_baseline(golden_replay, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"records": 3}')
    proc = _softrank("regress", golden_replay, "--out", tmp_path / "reg", "--against", bad, cwd=tmp_path)
    assert proc.returncode == 2 and "not a replay baseline" in proc.stderr and "Traceback" not in proc.stderr
