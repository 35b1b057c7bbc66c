"""``softrank bracket`` killed with SIGKILL at any point (after one record, after several, while
writing the final tables) and started again with ``--resume`` finishes with the table and the
records of an uninterrupted run: no finished record redone, no duplicate row, every record still
in the store and readable, and no partial output that looks complete (no manifest) meanwhile.
Serial and Dask runs give the same table and the same records."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers import sigkill_when

from softrank.fastpath.demo import build_demo_store
from softrank.replay.reader import list_records, read_record

RECORDS = 16
BRACKET = [sys.executable, "-m", "softrank", "bracket", "--eps", "0.25", "--no-progress"]
# The same command, held (SIGKILL expected) just before the manifest is written: index.csv and
# bracket.csv are already there, the journal is whole.
HOLD = ("import pathlib, sys, time\n"
        "import softrank.fastpath.bracket.store as b\n"
        "def hold(path, obj):\n"
        "    pathlib.Path(sys.argv[1]).write_text('held')\n"
        "    time.sleep(600)\n"
        "b.write_json = hold\n"
        "from softrank.cli import main\n"
        "sys.exit(main(sys.argv[2:]))\n")


@pytest.fixture(scope="module")
def pristine_and_reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("bracket-resume")
    build_demo_store(root / "pristine", RECORDS, 24, seed=3)
    shutil.copytree(root / "pristine", root / "reference")
    proc = subprocess.run([*BRACKET, "--jobs", "1", str(root / "reference")], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return root / "pristine", root / "reference"


def _table(store) -> list[dict]:
    with open(store / "bracket.csv", newline="", encoding="utf-8") as fh:
        return [{k: v for k, v in row.items() if k != "seconds" and not k.startswith("time_")}
                for row in csv.DictReader(fh)]


def _records(store) -> dict[str, bytes]:
    return {f.name: (f / "record.json").read_bytes() for f in list_records(store)}


def _journal(store) -> dict[str, dict]:
    entries = {}
    for path in (store / ".partial").glob("*.json"):
        if path.name != "params.json":
            entry = json.loads(path.read_text())
            entries[entry["key"]] = entry["payload"]
    return entries


def _done(store) -> int:
    try:
        return sum(1 for p in (store / ".partial").iterdir() if p.suffix == ".json" and p.name != "params.json")
    except FileNotFoundError:
        return 0


def _kill(proc, ready) -> None:
    sigkill_when(proc, ready, 120)


def _start(store, at, cwd):
    """Bracket ``store`` in place and SIGKILL the run after ``at`` journaled records, or while it
    writes the final tables (``at == "tables"``)."""
    if at == "tables":
        marker = cwd / "held"
        argv = [sys.executable, "-c", HOLD, str(marker), "bracket", "--eps", "0.25", "--no-progress", "--jobs", "1"]
        ready = marker.exists
    else:
        argv = [*BRACKET, "--jobs", "1"]
        ready = lambda: _done(store) >= at  # noqa: E731
    proc = subprocess.Popen([*argv, str(store)], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _kill(proc, ready)


@pytest.mark.parametrize("at", [1, 8, "tables"], ids=["after-1", "after-8", "during-final-tables"])
def test_killed_bracket_resumes_to_the_same_table_and_records(pristine_and_reference, tmp_path, at):
    pristine, reference = pristine_and_reference
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    _start(store, at, tmp_path)
    assert not (store / "bracket-manifest.json").exists()  # partial output never looks complete
    journaled = _journal(store)
    assert (len(journaled) == RECORDS) if at == "tables" else (at <= len(journaled) < RECORDS)
    assert (store / "bracket.csv").exists() == (at == "tables")

    proc = subprocess.run([*BRACKET, "--jobs", "1", "--resume", str(store)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"{RECORDS} records \({len(journaled)} from the journal\)", proc.stdout), proc.stdout
    table = _table(store)
    assert table == _table(reference)
    keys = [(r["record_id"], r["eps"]) for r in table]
    assert len(keys) == len(set(keys)) == RECORDS and {r["eps"] for r in table} == {"0.25"}
    with open(store / "bracket.csv", newline="", encoding="utf-8") as fh:
        seconds = {r["record_id"]: float(r["seconds"]) for r in csv.DictReader(fh)}
    for rid, payload in journaled.items():  # journaled records were taken from the journal, not redone
        assert [seconds[rid]] == [row["seconds"] for row in payload["rows"]]
    assert _records(store) == _records(reference)  # every record present, bit for bit the uninterrupted one
    assert all(read_record(f).tolerances for f in list_records(store))
    assert not [p.name for p in (store / "records").iterdir() if p.name.startswith(".")]
    manifest = json.loads((store / "bracket-manifest.json").read_text())
    assert manifest["complete"] is True and manifest["resumed"] == len(journaled) and manifest["records"] == RECORDS
    assert manifest["eps"] == ["0.25"] and manifest["mode"] == "fast"
    assert not (store / ".partial").exists()


def test_resume_refuses_a_journal_of_other_parameters(pristine_and_reference, tmp_path):
    pristine, _ = pristine_and_reference
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    _start(store, 1, tmp_path)
    proc = subprocess.run([*BRACKET[:4], "--eps", "1/4,0.35", "--no-progress", "--jobs", "1", "--resume", str(store)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "other parameters" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_dask_gives_the_serial_table_and_records(pristine_and_reference, tmp_path):
    pristine, reference = pristine_and_reference
    out = tmp_path / "out"
    proc = subprocess.run([*BRACKET, "--jobs", "2", str(pristine), "--out", str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert _table(out) == _table(reference)
    assert _records(out) == _records(reference)
    assert json.loads((out / "bracket-manifest.json").read_text())["complete"] is True
    assert not (pristine / "bracket.csv").exists()  # --out leaves the source store alone


def test_a_run_first_puts_back_a_record_a_killed_writer_left_half_replaced(pristine_and_reference, tmp_path):
    """SIGKILL between the writer's two renames leaves ``records/ID`` only in ``.old-ID-*/old``;
    the next bracket run moves it back (and brackets it) before listing the store."""
    import tempfile
    from pathlib import Path

    from softrank.cli import main

    pristine, reference = pristine_and_reference
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    records = store / "records"
    trash = Path(tempfile.mkdtemp(prefix=".old-demo-03-", dir=records))
    os.rename(records / "demo-03", trash / "old")
    Path(tempfile.mkdtemp(prefix=".tmp-demo-03-", dir=records))
    assert len(list_records(store)) == RECORDS - 1
    assert main(["bracket", str(store), "--eps", "1/4", "--jobs", "1", "--no-progress"]) == 0
    assert _table(store) == _table(reference) and _records(store) == _records(reference)
    assert not [p.name for p in records.iterdir() if p.name.startswith(".")]


def test_a_malformed_record_is_reported_and_the_others_are_bracketed(pristine_and_reference, tmp_path):
    pristine, reference = pristine_and_reference
    store = tmp_path / "store"
    shutil.copytree(pristine, store)
    (store / "records" / "demo-05" / "record.json").write_text("{ truncated")
    proc = subprocess.run([*BRACKET, "--jobs", "1", str(store), "--out", str(tmp_path / "out")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "demo-05" in errors[0] and "record.json" in errors[0]
    expected = [row for row in _table(reference) if row["record_id"] != "demo-05"]
    assert _table(tmp_path / "out") == expected and len(expected) == RECORDS - 1
    manifest = json.loads((tmp_path / "out" / "bracket-manifest.json").read_text())
    assert len(manifest["malformed"]) == 1


def test_entries_of_records_that_are_not_folders_are_malformed_records(tmp_path):
    """A file, a FIFO and a dangling link in records/ were skipped without a word: each is now one
    stderr line (a malformed record, never opened) and the good records are still bracketed."""
    from helpers import add_stray_entries, assert_strays_reported

    build_demo_store(tmp_path / "store", 2, 8, seed=0)
    strays = add_stray_entries(tmp_path / "store")
    proc = subprocess.run([*BRACKET, "--jobs", "1", str(tmp_path / "store"), "--out", str(tmp_path / "out")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    assert {row["record_id"] for row in _table(tmp_path / "out")} == {"demo-00", "demo-01"}
    manifest = json.loads((tmp_path / "out" / "bracket-manifest.json").read_text())
    assert manifest["records"] == 5 and len(manifest["malformed"]) == 3
