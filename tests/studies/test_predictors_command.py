"""``softrank study predictors --limit 2`` end to end (``studies/predictors/command.py`` and
``study.py``): a tiny main panel (``softrank run --panel full --limit 2``) and a tiny held-out panel
(``softrank study constructions --panel full --limit 2``) are made first; the study reads both,
writes the operators table, the fits, the gauge audit and the report, marks itself as not the run
of record, and a ``--resume`` refits nothing.  Refusals: a non-empty OUT without ``--resume``, the
same panel given twice, a folder that is not a panel's output."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest

from softrank.studies.predictors import protocol as P
from softrank.studies.predictors.features import BLOCKS

CLI = [sys.executable, "-m", "softrank"]
STUDY = [*CLI, "study", "predictors", "--limit", "2", "--bootstrap", "50", "--jobs", "2", "--no-progress", "--json"]


def _run(args, cwd, timeout=900):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def panels(tmp_path_factory):
    base = tmp_path_factory.mktemp("predictors")
    main, held = base / "main", base / "heldout"
    proc = _run([*CLI, "run", "--panel", "full", "--limit", "2", "--eps", "0.25", "--dinov2", "0", "--flan-t5", "0",
                 "--jobs", "1", "--no-progress", "--out", str(main)], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = _run([*CLI, "study", "constructions", "--panel", "full", "--limit", "2", "--jobs", "1", "--no-progress",
                 "--json", "--out", str(held)], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return base, main, held


@pytest.fixture(scope="module")
def study(panels):
    base, main, held = panels
    out = base / "study"
    proc = _run([*STUDY, "--main", str(main), "--heldout", str(held), "--out", str(out)], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads(proc.stdout)


def test_the_study_reads_both_panels_and_reports(study):
    out, result = study
    assert result["protocol"]["sha256"] == P.PROTOCOL_SHA256 and result["run_of_record"] is False
    assert result["operators"] == {"main": 4, "heldout": 4}
    assert result["families"] == ["SmolLM2-135M", "all-MiniLM-L6-v2"]
    rows = list(csv.DictReader((out / "operators.csv").open()))
    assert len(rows) == 8 and {r["panel"] for r in rows} == {"main", "heldout"}
    assert not {r["source_id"] for r in rows if r["panel"] == "main"} & {r["source_id"] for r in rows
                                                                        if r["panel"] == "heldout"}
    for r in rows:  # targets in cap units from the validated bracket
        p = min(int(r["m"]), int(r["N"]))
        assert 0 < float(r["L_p"]) <= float(r["U_p"]) <= 1 and float(r["U_p"]) * p == pytest.approx(round(float(r["U_p"]) * p))
        for col in BLOCKS["structural"] + BLOCKS["calibrated"] + BLOCKS["native"]:
            assert math.isfinite(float(r[col])), col
    # the intrinsic block on the fixed subset: one operator per family and panel at --limit 2
    with_kappa = [r for r in rows if r[BLOCKS["intrinsic"][0]] not in ("", "nan")]
    assert len(with_kappa) == 4 and {(r["panel"], r["family"]) for r in with_kappa} == {
        (p, f) for p in ("main", "heldout") for f in result["families"]}
    views = {r["view"] for r in result["results"]}
    assert views == {"held-out", "leave-one-source-out", "leave-one-head-out"}
    for r in result["results"]:
        assert r["verdict"] in ("helps", "hurts", "adds nothing detectable", "inconclusive at this size")
        if r["sources"] < 2:
            assert r["verdict"] == "inconclusive at this size"
    assert {r["family"] for r in result["results"]} == {*result["families"], "aggregate"}
    # the gauge audit covers every main-panel operator; exact gauges change A only by rounding
    g = result["gauges"]
    assert g["operators"] == 4 and g["kappa_le_gamma_validated"] == 4
    # the frames bracket one kappa(C): on the main subset (one per family), against its validated upper end
    assert g["kappa_frames"]["operators"] == 2 and g["kappa_frames"]["agree"] == 2
    assert 0 <= g["kappa_frames"]["shift_upper_max"] < 1e-9
    for name in ("diagonal", "dense"):
        assert g[name]["largest_factor"] >= 1 and g[name]["A_change_upper_max"] < 1e-10
    md = (out / "predictors.md").read_text()
    assert "Not the run of record: --limit 2, --bootstrap 50" in md and P.PROTOCOL_SHA256 in md
    assert "Gauge audit (main panel)" in md and "research page" in md
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Gauge audit" in page and "data:image/png;base64," in page
    assert json.loads((out / "study.json").read_text())["operators"] == result["operators"]


def test_resume_refits_nothing_and_gives_the_same_results(study, panels):
    out, result = study
    base, main, held = panels
    fits = sorted(p.name for p in (out / "journal-fits").glob("fit-*.json"))
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "journal-fits").glob("fit-*.json")}
    assert fits
    proc = _run([*STUDY, "--main", str(main), "--heldout", str(held), "--out", str(out), "--resume"], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads(proc.stdout)
    assert again["results"] == result["results"] and again["gauges"] == result["gauges"]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "journal-fits").glob("fit-*.json")} == stamps


def test_refusals_are_one_line_and_write_nothing(study, panels, tmp_path):
    out, _ = study
    base, main, held = panels
    before = sorted(p.name for p in out.iterdir())
    cases = [([*STUDY, "--main", str(main), "--heldout", str(held), "--out", str(out)], str(out)),  # not empty
             ([*STUDY, "--main", str(main), "--heldout", str(main), "--out", str(tmp_path / "a")], "source_id"),
             ([*STUDY, "--main", str(tmp_path), "--heldout", str(held), "--out", str(tmp_path / "b")], "store/records"),
             ([*STUDY, "--main", str(tmp_path / "missing"), "--heldout", str(held), "--out", str(tmp_path / "c")],
              "missing")]
    for args, needle in cases:
        proc = _run(args, tmp_path, timeout=300)
        assert proc.returncode == 2, proc.stderr
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1 and needle in line and "Traceback" not in line, line
    assert sorted(p.name for p in out.iterdir()) == before


def test_resume_redoes_only_an_audit_of_an_older_version(study, panels, tmp_path):
    import shutil

    out, result = study
    base, main, held = panels
    copy = tmp_path / "study"
    shutil.copytree(out, copy)
    entry = sorted((copy / "journal-main").glob("*-self.json"))[0]
    doc = json.loads(entry.read_text())
    del doc["payload"]["gauges"]["audit_version"]  # as the audit before version 2 wrote it
    entry.write_text(json.dumps(doc))
    stamps = {p.name: p.stat().st_mtime_ns for p in (copy / "journal-fits").glob("fit-*.json")}
    proc = _run([*STUDY, "--main", str(main), "--heldout", str(held), "--out", str(copy), "--resume"], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads(proc.stdout)
    redone = [p.name for p in (copy / "journal-gauges").glob("*.json") if p.name != "params.json"]
    assert redone == [entry.name] and again["gauges"] == result["gauges"] and again["results"] == result["results"]
    assert {p.name: p.stat().st_mtime_ns for p in (copy / "journal-fits").glob("fit-*.json")} == stamps
    assert again["cost"]["features_main"]["gauge_refresh_cpu_seconds"] > 0
