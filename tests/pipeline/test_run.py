"""``softrank.pipeline.run``: the pipeline survives faults.  Each run is a real ``softrank run``
process (``--reuse`` of a three-record synthetic store at 24 x 24, one tolerance) on real Dask;
a fault is planted in that process by ``FAULTS`` (a nanny that fails to start, a disk that fills
up at the Nth fsync), never by mocking the run.  After a fault the run has stopped with one line
and exit code 4, everything already written is whole, and ``--resume`` ends with the tables and
records of an uninterrupted run; a cluster start that fails once is retried and the run ends
normally."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from softrank.fastpath.demo import build_demo_store
from softrank.replay.reader import read_record

RUN = ["run", "--reuse", "--eps", "0.25", "--no-progress"]
FAULTS = """
import errno, os, sys
fail = os.environ.get("FAIL_NANNY")  # "FIRST-LAST": the nanny starts so numbered (from 1) fail
if fail:
    import distributed.nanny as nanny
    first, last = map(int, fail.split("-"))
    start, seen = nanny.Nanny.start_unsafe, [0]
    async def start_unsafe(self):
        seen[0] += 1
        if first <= seen[0] <= last:
            raise RuntimeError("planted: this nanny does not start")
        return await start(self)
    nanny.Nanny.start_unsafe = start_unsafe
full = os.environ.get("FULL_DISK_AT")  # the Nth fsync and every later one find the disk full
if full:
    fsync, seen = os.fsync, [0]
    def full_disk(fd):
        seen[0] += 1
        if seen[0] >= int(full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return fsync(fd)
    os.fsync = full_disk
from softrank.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _softrank(out: Path, *args, faults: dict | None = None):
    import os

    environ = {**os.environ, **(faults or {})}
    return subprocess.run([sys.executable, "-c", FAULTS, *RUN, "--out", str(out), *args], cwd=out.parent,
                          capture_output=True, text=True, timeout=600, env=environ)


def _store(out: Path) -> Path:
    build_demo_store(out / "store", 3, 24, seed=5)
    return out


def _rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: v for k, v in r.items() if k != "seconds" and not k.startswith("time_")} for r in csv.DictReader(fh)]


def outputs(out: Path) -> dict:
    """What ``softrank run`` writes, timing columns aside: the tables' rows, the other files' bytes."""
    tables = {name: _rows(out / name) for name in ("store/bracket.csv", "replay/replay.csv", "replay/verdicts.csv")}
    files = [out / "summary.csv", out / "store" / "index.csv", *sorted((out / "store" / "records").rglob("*"))]
    return {**tables, **{str(f.relative_to(out)): hashlib.sha256(f.read_bytes()).hexdigest()
                         for f in files if f.is_file()}}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """An uninterrupted run with ``--jobs 1``: its outputs, and the records before the bracket."""
    out = _store(tmp_path_factory.mktemp("run") / "ref")
    extracted = {f"store/{p.relative_to(out / 'store')}": hashlib.sha256(p.read_bytes()).hexdigest()
                 for p in (out / "store" / "records").rglob("*") if p.is_file()}
    proc = _softrank(out, "--jobs", "1", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"outputs": outputs(out), "extracted": extracted, "json": json.loads(proc.stdout)}


def _stopped(proc, *words: str) -> str:
    """One line on stderr, exit code 4, no traceback, no table; returns the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("softrank run: error: ") and "--resume" in lines[0], lines
    assert all(w in lines[0] for w in words), lines
    assert "median U/L" not in proc.stdout
    return lines[0]


def _resumed(out: Path, reference: dict, *args) -> None:
    proc = _softrank(out, "--resume", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["table"] == reference["json"]["table"] and result["exit_code"] == 0
    assert outputs(out) == reference["outputs"]


def test_a_nanny_that_fails_to_start_once_is_retried(reference, tmp_path):
    out = _store(tmp_path / "out")
    proc = _softrank(out, "--jobs", "2", faults={"FAIL_NANNY": "1-1"})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert outputs(out) == reference["outputs"]


@pytest.mark.parametrize("failing, stage", [("1-999", "bracket"), ("3-999", "replay")])
def test_a_cluster_that_never_starts_stops_in_one_line_and_resume_finishes(reference, tmp_path, failing, stage):
    """Every start fails (in the bracket), or every start after the bracket's (in the replay)."""
    out = _store(tmp_path / "out")
    _stopped(_softrank(out, "--jobs", "2", faults={"FAIL_NANNY": failing}), "failed to start 3 times")
    assert not (out / "summary.csv").exists()
    assert (out / "store" / "bracket.csv").exists() == (stage == "replay")
    before = (out / "store" / "bracket.csv").stat().st_mtime_ns if stage == "replay" else None
    _resumed(out, reference, "--jobs", "2")
    if before is not None:  # the finished bracket is taken from the journal, not done again
        assert (out / "store" / "bracket.csv").stat().st_mtime_ns == before


# fsync 13: an array of the first bracketed record (its folder not yet in place); 16: the records
# folder after that record's rename (the record in place, its journal entry not written); 43: the
# replay's first journal entry (the bracket finished)
@pytest.mark.parametrize("at", [13, 16, 43])
def test_a_full_disk_stops_in_one_line_damages_nothing_and_resume_finishes(reference, tmp_path, at):
    out = _store(tmp_path / "out")
    _stopped(_softrank(out, "--jobs", "1", faults={"FULL_DISK_AT": str(at)}), "no space left on device")
    assert not (out / "summary.csv").exists()
    # every record is whole: as extracted, or as the uninterrupted run bracketed it
    final, first = reference["outputs"], reference["extracted"]
    for path in sorted((out / "store" / "records").rglob("*")):
        assert not path.name.startswith((".tmp-", ".old-")), path
        if path.is_file():
            key = f"{path.relative_to(out)}"
            assert hashlib.sha256(path.read_bytes()).hexdigest() in (final.get(key), first.get(key)), key
    for record in (out / "store" / "records").iterdir():
        read_record(record)  # every field and hash checked
    for entry in (out / ".partial").rglob("*"):  # every journal entry whole, no temporary file left
        assert not entry.name.startswith("."), entry
        if entry.is_file():
            json.loads(entry.read_text(encoding="utf-8"))
    _resumed(out, reference, "--jobs", "1")


def test_a_finished_run_resumes_without_redoing_a_step(reference, tmp_path):
    """The journal keeps one entry per finished step: ``--resume`` on a finished run rewrites no
    table of a step; without ``--resume`` the journal is discarded and the records are refused."""
    out = _store(tmp_path / "out")
    assert _softrank(out, "--jobs", "1").returncode == 0
    assert sorted(p.name for p in (out / ".partial").iterdir()) == ["bracket.json", "extract.json", "params.json",
                                                                    "replay.json"]
    seconds = json.loads((out / "summary.json").read_text())["seconds"]
    assert seconds["bracket"] > 0 and seconds["replay"] > 0
    stamps = {p: p.stat().st_mtime_ns for p in [out / "store" / "bracket.csv", out / "replay" / "replay.csv"]}
    _resumed(out, reference, "--jobs", "1")
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    # a step taken from the journal keeps the time it took when it ran
    assert json.loads((out / "summary.json").read_text())["seconds"] == seconds
    shutil.rmtree(out / "replay")  # a step whose output is gone is done again
    _resumed(out, reference, "--jobs", "1")
    proc = _softrank(out, "--jobs", "1", "--eps", "0.35", "--resume")  # other parameters: refused
    assert proc.returncode == 2 and "rerun without --resume" in proc.stderr and "Traceback" not in proc.stderr
