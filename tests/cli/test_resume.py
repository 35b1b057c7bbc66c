"""A replay killed with SIGKILL at any point and started again with ``--resume`` finishes with the
table of an uninterrupted run: no finished record redone, no duplicate row, and no partial output
that looks complete (no manifest, no tables) while the journal is incomplete."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from helpers import sigkill_when

from softrank.fastpath.demo import build_demo_store

RECORDS = 30
# --strict (Arb balls throughout) makes each small record take a measurable time (~0.1 s), so the
# journal can be watched and the run killed between records.
REPLAY = [sys.executable, "-m", "softrank", "replay", "--quiet", "--strict"]


@pytest.fixture(scope="module")
def store_and_reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    build_demo_store(root / "store", RECORDS, 40, seed=3)
    proc = subprocess.run([*REPLAY, str(root / "store"), "--out", str(root / "reference")], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return root / "store", root / "reference"


def _journal(out) -> dict[str, dict]:
    folder = out / ".partial"
    entries = {}
    for path in folder.glob("*.json"):
        if path.name != "params.json":
            entry = json.loads(path.read_text())
            entries[entry["key"]] = entry["payload"]
    return entries


def _done(out) -> int:
    folder = out / ".partial"
    try:
        return sum(1 for p in folder.iterdir() if p.suffix == ".json" and p.name != "params.json")
    except FileNotFoundError:
        return 0


def _kill_after(store, out, at: int, extra=()) -> None:
    """Start a replay, wait until ``at`` records are journaled, SIGKILL it (never a finished run)."""
    proc = subprocess.Popen([*REPLAY, str(store), "--out", str(out), *extra], cwd=out.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    sigkill_when(proc, lambda: _done(out) >= at, 300, "replay")


def _table(folder, name):
    table = pq.read_table(folder / f"{name}.parquet")
    return table.drop(["seconds"]) if "seconds" in table.column_names else table


@pytest.mark.parametrize("at, extra", [(1, ()), (10, ()), (25, ()), (10, ("--jobs", "2"))],
                         ids=["after-1", "after-10", "after-25", "dask-after-10"])
def test_killed_replay_resumes_to_the_same_table(store_and_reference, tmp_path, at, extra):
    store, reference = store_and_reference
    out = tmp_path / "out"
    _kill_after(store, out, at, extra)
    # partial output never looks complete
    assert not (out / "manifest.json").exists()
    assert not any((out / f"{n}.{s}").exists() for n in ("replay", "verdicts") for s in ("parquet", "csv"))
    journaled = _journal(out)
    assert at <= len(journaled) < RECORDS
    proc = subprocess.run([*REPLAY, str(store), "--out", str(out), "--resume", "--json", *extra], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["resumed"] == len(journaled) and summary["records"] == RECORDS
    for name in ("replay", "verdicts"):
        assert _table(out, name).equals(_table(reference, name)), name
    rows = pq.read_table(out / "replay.parquet").to_pylist()
    keys = [(r["record_id"], r["eps"]) for r in rows]
    assert len(keys) == len(set(keys)) == 3 * RECORDS  # no duplicate rows
    seconds = {(r["record_id"], r["eps"]): r["seconds"] for r in rows}
    for rid, payload in journaled.items():  # finished records were taken from the journal, not redone
        for row in payload["rows"]:
            assert seconds[(rid, row["eps"])] == row["seconds"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["resumed"] == len(journaled)
    assert not (out / ".partial").exists()


def test_resume_refuses_a_journal_of_other_parameters(store_and_reference, tmp_path):
    store, _ = store_and_reference
    out = tmp_path / "out"
    _kill_after(store, out, 2)
    proc = subprocess.run([sys.executable, "-m", "softrank", "replay", str(store), "--out", str(out), "--resume",
                           "--quiet", "--budgets", "4"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "other parameters" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
