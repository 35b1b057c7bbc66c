"""``softrank run --panel full``: ``--plan --json`` (what would run, computing nothing), ``--limit``
(exact record counts), a run killed with SIGKILL mid-run then ``--resume`` (the tables of an
uninterrupted run), and ``--scheduler`` against a separately started Dask cluster (the tables of
``--jobs 1``).  The runs are tiny (``--limit 2``, one tolerance, the shipped DINOv2 and FLAN-T5
left out with ``--dinov2 0 --flan-t5 0``): six operators (SmolLM2's blocks and native ones)."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

RUN = [sys.executable, "-m", "softrank", "run", "--panel", "full", "--limit", "2", "--eps", "0.25",
       "--dinov2", "0", "--flan-t5", "0", "--no-progress", "--json"]
FAMILIES = {"all-MiniLM-L6-v2": [256, 256], "SmolLM2-135M (decoder-self-block)": [128, 128],
            "SmolLM2-135M (decoder-self)": [128, 128]}
NO_TORCH = ("import sys\nfrom softrank.cli import main\ncode = main(sys.argv[1:])\n"
            "assert 'torch' not in sys.modules, 'the plan loaded torch'\nsys.exit(code)\n")


def _run(argv, cwd, timeout=600):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _rows(path: Path, drop=("seconds",)) -> list[dict]:
    """A table's rows, sorted, without its timing columns."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [{k: v for k, v in r.items() if k not in drop and not k.startswith("time_")} for r in csv.DictReader(fh)]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def _tables(out: Path) -> dict:
    return {"bracket": _rows(out / "store" / "bracket.csv"), "replay": _rows(out / "replay" / "replay.csv"),
            "summary": _rows(out / "summary.csv")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted run with ``--jobs 1``."""
    root = tmp_path_factory.mktemp("run-full")
    _run([*RUN, "--jobs", "1", "--out", str(root / "ref")], root)
    return root / "ref"


def test_plan_json_counts_the_full_panel_without_computing(tmp_path):
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", NO_TORCH, "run", "--panel", "full", "--plan", "--json",
                           "--out", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert set(plan) >= {"operators", "tolerances", "families"}
    assert plan["operators"] == 576 + 2160 + 2160 + 576 + 3 * 384 >= 2302
    assert plan["tolerances"] == ["0.15", "0.25", "0.35"]
    assert plan["families"] == {"all-MiniLM-L6-v2": {"operators": 576, "shape": [256, 256]},
                                "SmolLM2-135M (decoder-self-block)": {"operators": 2160, "shape": [128, 128]},
                                "SmolLM2-135M (decoder-self)": {"operators": 2160, "shape": [128, 128]},
                                "DINOv2-small": {"operators": 576, "shape": [257, 257]},
                                "FLAN-T5-small cross": {"operators": 384, "shape": [64, 256]},
                                "FLAN-T5-small decoder blocks": {"operators": 384, "shape": [32, 32]},
                                "FLAN-T5-small encoder": {"operators": 384, "shape": [256, 256]}}
    assert not (tmp_path / "out").exists()  # nothing computed, nothing written
    assert time.perf_counter() - start < 60


def test_plan_of_the_default_panel_and_with_a_limit(tmp_path):
    plan = _run([sys.executable, "-m", "softrank", "run", "--plan", "--json"], tmp_path)
    assert plan["operators"] == 172 and plan["families"]["SmolLM2-135M (decoder-self-block)"]["operators"] == 54
    assert plan["families"]["SmolLM2-135M (decoder-self)"] == {"operators": 54, "shape": [128, 128]}
    plan = _run([*RUN[:-2], "--plan", "--json", "--smollm2", "0"], tmp_path)
    assert plan == {"panel": "full", "operators": 2, "tolerances": ["0.25"],
                    "families": {"all-MiniLM-L6-v2": {"operators": 2, "shape": [256, 256]}}}
    plan = _run([*RUN[:-6], "--plan", "--json", "--minilm", "0", "--smollm2", "0", "--flan-t5", "4"], tmp_path)
    assert plan["operators"] == 2 + 2 and plan["families"] == {
        "DINOv2-small": {"operators": 2, "shape": [257, 257]}, "FLAN-T5-small cross": {"operators": 1, "shape": [64, 256]},
        "FLAN-T5-small decoder blocks": {"operators": 1, "shape": [32, 32]}}


def test_limit_gives_exact_record_counts(reference):
    records = sorted(p.name for p in (reference / "store" / "records").iterdir())
    assert len(records) == 6
    assert sum(r.startswith("minilm-") for r in records) == sum(r.endswith("-native") for r in records) == 2
    assert sum(r.startswith("smollm2-") for r in records) == 4
    summary = {r["family"]: r for r in _rows(reference / "summary.csv")}
    assert set(summary) == set(FAMILIES)
    for fam, shape in FAMILIES.items():
        assert summary[fam]["operators"] == summary[fam]["replayed"] == "2"
        assert summary[fam]["shape"] == f"{shape[0]}x{shape[1]}"
    assert len(_rows(reference / "store" / "bracket.csv")) == len(_rows(reference / "replay" / "replay.csv")) == 6
    page = (reference / "report.html").read_text(encoding="utf-8")
    assert "Beside the research page" in page and "BERT-base" in page  # the full panel's comparison


def _entries(folder: Path) -> int:
    return len([p for p in folder.glob("*.json") if p.name != "params.json"]) if folder.is_dir() else 0


@pytest.mark.parametrize("journal", [".partial/bracket", ".partial/extract"], ids=["bracket", "extraction"])
def test_killed_run_resumes_to_the_tables_of_an_uninterrupted_run(reference, tmp_path, journal):
    out = tmp_path / "out"
    proc = subprocess.Popen([*RUN, "--jobs", "1", "--out", str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while _entries(out / journal) < 1 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _entries(out / journal) >= 1
    assert not (out / "summary.csv").exists()  # killed mid-run
    result = _run([*RUN, "--jobs", "1", "--resume", "--out", str(out)], tmp_path)
    assert result["exit_code"] == 0
    assert _tables(out) == _tables(reference)


def test_resume_after_the_bracket_does_not_bracket_again(reference, tmp_path):
    """Killed in the replay (simulated: the replay and the summary removed after a whole run):
    ``--resume`` replays and summarises again from the bracket step's journal entry."""
    out = tmp_path / "out"
    shutil.copytree(reference, out)
    shutil.rmtree(out / "replay")
    (out / "summary.csv").unlink()
    before = (out / "store" / "bracket.csv").stat().st_mtime_ns
    _run([*RUN, "--jobs", "1", "--resume", "--out", str(out)], tmp_path)
    assert (out / "store" / "bracket.csv").stat().st_mtime_ns == before
    assert _tables(out) == _tables(reference)


def test_scheduler_gives_the_tables_of_jobs_1(reference, tmp_path):
    """A scheduler and two workers started apart from the run (the run reuses the reference's
    extracted store; bracket and replay run on the cluster)."""
    from dask.distributed import LocalCluster

    out = tmp_path / "out"
    shutil.copytree(reference / "store" / "records", out / "store" / "records")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        result = _run([*RUN, "--reuse", "--scheduler", cluster.scheduler_address, "--out", str(out)], tmp_path)
        assert len(cluster.scheduler.workers) == 2
    assert result["exit_code"] == 0
    assert _tables(out) == _tables(reference)
