"""``softrank study constructions --panel full --limit 2``: the held-out benchmark end to end
(``studies/heldout/command.py``): records on held-out sources only, every construction at eps 0.25,
``heldout.json`` with a median and a 95% interval per family and construction; a run killed with
SIGKILL mid-bracket and continued with ``--resume`` gives the same results; a non-empty OUT
without ``--resume`` and a resume with other options are refused in one line."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import pytest

from softrank.fastpath.capture.panels import PANELS
from softrank.fastpath.capture.sources import stdlib_passages
from softrank.studies.heldout.heldout import ALL_CONSTRUCTIONS, _module


STUDY = [sys.executable, "-m", "softrank", "study", "constructions", "--panel", "full", "--limit", "2", "--jobs", "1",
         "--no-progress", "--json"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("heldout") / "out"
    proc = subprocess.run([*STUDY, "--out", str(out)], cwd=out.parent, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, json.loads(proc.stdout)


def test_held_out_benchmark_runs_on_disjoint_sources(reference):
    out, result = reference
    assert result == json.loads((out / "heldout.json").read_text())
    assert result["eps"] == "0.25" and len(result["sources"]) == 8
    main = {p.source_id for opts in PANELS["full"].values() for p in stdlib_passages(opts["sources"], opts["seed"])}
    assert not main & set(result["sources"])
    assert set(result["families"]) == {"all-MiniLM-L6-v2", "SmolLM2-135M"}
    for row in result["families"].values():
        assert row["operators"] == 2
        for c in ("best", *ALL_CONSTRUCTIONS):
            lo, hi = row[c]["ci95"]
            assert lo <= row[c]["median"] <= hi and row["best"]["median"] <= row[c]["median"]
        assert row["relative_to_altl1"]["altl1"] == {"median": 1.0, "ci95": [1.0, 1.0]}
    # every failed attempt bracket.csv lists is classified once, per construction and in all
    rows = list(csv.DictReader((out / "store" / "bracket.csv").open()))
    listed = {c: sum(len(r[f"failed_{c}"].split()) for r in rows) for c in ALL_CONSTRUCTIONS}
    counted = {c: sum(sum(row["failed_attempts"][c].values()) for row in result["families"].values())
               for c in ALL_CONSTRUCTIONS}
    assert counted == listed and listed["tsvd"] > 0
    assert sum(sum(row["failed_attempts"]["all"].values()) for row in result["families"].values()) == sum(listed.values())
    page = (out / "report.html").read_text()  # the held-out brackets' report with the construction section
    embedded = json.loads(page.split('id="data-fig-constructions">', 1)[1].split("</script>", 1)[0])
    assert {fam: row["operators"] for fam, row in embedded["families"].items()} == {fam: 2 for fam in result["families"]}
    assert 'id="table-research"' in page and 'id="table-attempts"' in page
    records = [p.name for p in (out / "store" / "records").iterdir()]
    modules = {_module(s) for s in main}
    assert len(records) == 4 and not any(f"-{m}." in r for r in records for m in modules)


def _bracket_table(out):
    rows = list(csv.DictReader((out / "store" / "bracket.csv").open()))
    return [{k: v for k, v in r.items() if k != "seconds" and not k.startswith("time_")} for r in rows]


def test_killed_run_resumes_to_the_results_of_an_uninterrupted_run(reference, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([*STUDY, "--out", str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    journal = out / "store" / ".partial"
    try:
        deadline = time.monotonic() + 600
        while (len(list(journal.glob("*-*.json"))) < 1 and proc.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert list(journal.glob("*-*.json")) and not (out / "heldout.json").exists()  # killed mid-bracket
    again = subprocess.run([*STUDY, "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "--resume" in again.stderr and "Traceback" not in again.stderr
    other = subprocess.run([*STUDY[:8], "1", *STUDY[9:], "--resume", "--out", str(out)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "same options" in other.stderr and "Traceback" not in other.stderr
    proc = subprocess.run([*STUDY, "--resume", "--out", str(out)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref_out, ref_result = reference
    assert json.loads(proc.stdout) == ref_result
    assert _bracket_table(out) == _bracket_table(ref_out)


def test_constructions_needs_a_table_or_a_panel(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "softrank", "study", "constructions"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "BRACKET_CSV" in proc.stderr and "Traceback" not in proc.stderr
