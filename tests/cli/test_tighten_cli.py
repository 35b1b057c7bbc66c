"""``softrank tighten``: bad input is one line on stderr with exit code 2 and nothing written; a
good run writes a complete store and ``tighten.csv`` without touching STORE."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from softrank.cli import main
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter

N = 20


def loose_record(store, rid: str, seed: int = 5) -> None:
    """A record with the full-rank truncated SVD as witness and a one-row decoder."""
    rng = np.random.default_rng(seed)
    Q, K = rng.normal(size=(N, 3)), rng.normal(size=(N, 3))
    A = rowsoftmax64(2.0 * Q @ K.T)
    U, s, Vt = np.linalg.svd(A)
    with RecordWriter(store, rid, provenance={"model": "synthetic"}) as w:
        w.set_qk(Q, K, 2.0)
        w.set_a_hat(A)
        cert = {"kind": "decoder", "lower": 1, "rows": np.array([0], dtype=np.int64), "W": np.ones((N, 1))}
        w.add_tolerance(0.25, upper=(U * s, Vt.T, "tsvd"), lower=[cert], float64={"lower": 1, "upper": N})


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("tighten")
    loose_record(root / "store", "syn-0")
    (root / "afile").write_text("keep me")
    (root / "full").mkdir()
    (root / "full" / "x").write_text("x")
    return root


CASES = [
    ("store --out store", "input store"),
    ("store --out afile", "afile"),
    ("store --out full", "not empty"),
    ("store --out o1 --budget 0", "budget"),
    ("store --out o2 --budget soon", "budget"),
    ("store --out o3 --eps 0.3", "no record stores"),
    ("store --out o4 --eps 1.5", "eps"),
    ("store --out o5 --records syn-0,nope", "nope"),
    ("nostore --out o6", "records"),
    ("store --out o8 --jobs 0", "jobs"),
    ("store --out o9 --jobs two", "jobs"),
    ("store --out o10 --jobs 100000000", "jobs"),
    ("store --out store/o11", "inside"),  # a new folder inside STORE would change it
]


@pytest.mark.parametrize("command, needle", CASES, ids=[c for c, _ in CASES])
def test_bad_input_is_one_line_exit_2(work, command, needle, capsys, monkeypatch):
    monkeypatch.chdir(work)
    before = sorted(p.name for p in work.iterdir())
    code = main(["tighten", *command.split(), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], (command, err)
    assert sorted(p.name for p in work.iterdir()) == before  # no output folder was made
    assert sorted(p.name for p in (work / "store").iterdir()) == ["records"]  # STORE unchanged
    assert (work / "afile").read_text() == "keep me"


def test_bad_input_exit_code_from_the_console(work):
    proc = subprocess.run([sys.executable, "-m", "softrank", "tighten", "store", "--out", "o7", "--budget", "-1"],
                          cwd=work, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr and not (work / "o7").exists()


def test_tighten_writes_a_store_and_table(work, capsys):
    src = (work / "store" / "records" / "syn-0" / "record.json").read_bytes()
    code = main(["tighten", str(work / "store"), "--out", str(work / "good"), "--budget", "3", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "softrank tighten: 1 records" in out and "eps 0.25" in out
    assert (work / "store" / "records" / "syn-0" / "record.json").read_bytes() == src  # STORE untouched
    lines = (work / "good" / "tighten.csv").read_text().splitlines()
    assert len(lines) == 2 and lines[1].startswith("syn-0,synthetic,0.25,0.25,1,20,")
    assert (work / "good" / "records" / "syn-0" / "record.json").exists()


def test_parallel_tighten_reports_a_malformed_record_and_tightens_the_others(work, capsys):
    """With --jobs 2 (a local Dask cluster): the two good records are tightened as with one job,
    the truncated one is named on one stderr line and not written, and the exit code is 2."""
    store = work / "mixed"
    for seed, name in enumerate(("syn-0", "syn-1", "syn-2")):
        loose_record(store, name, seed)
    bad = store / "records" / "syn-1" / "record.json"
    bad.write_bytes(bad.read_bytes()[:40])
    code = main(["tighten", str(store), "--out", str(work / "par"), "--budget", "2", "--jobs", "2", "--no-progress"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "syn-1" in err[0] and "record.json" in err[0], err
    assert "1 malformed" in captured.out
    lines = (work / "par" / "tighten.csv").read_text().splitlines()
    assert sorted(line.split(",")[0] for line in lines[1:]) == ["syn-0", "syn-2"]
    assert not (work / "par" / "records" / "syn-1").exists()
    for line in lines[1:]:
        lower_before, upper_before, lower_after, upper_after = (int(x) for x in line.split(",")[4:8])
        assert lower_after >= lower_before and upper_after < upper_before  # the loose witness came down


@pytest.mark.parametrize("selected", [True, False], ids=["tightened", "copied"])
def test_a_fifo_in_a_record_folder_is_reported_not_waited_on(tmp_path, capsys, selected):
    """A FIFO in place of a record's array (the record tightened or only copied) is one stderr
    line naming it, without a traceback and without blocking; the other record is written."""
    import os

    store = tmp_path / "store"
    loose_record(store, "syn-a", 1)
    loose_record(store, "syn-b", 2)
    target = store / "records" / "syn-b" / "arrays" / "a_hat.npy"
    target.unlink()
    os.mkfifo(target)  # a stored array replaced by a FIFO: reading or copying it would block
    extra = [] if selected else ["--records", "syn-a"]
    code = main(["tighten", str(store), "--out", str(tmp_path / "out"), "--budget", "1", "--no-progress", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "syn-b" in err[0] and "a_hat" in err[0], err
    assert (tmp_path / "out" / "records" / "syn-a" / "record.json").exists()
    assert not (tmp_path / "out" / "records" / "syn-b").exists()


@pytest.mark.parametrize("extra", [[], ["--records", "syn-a,syn-b"]], ids=["all", "records"])
def test_a_fifo_record_json_with_eps_is_reported_not_waited_on(tmp_path, capsys, extra):
    """With --eps the stored tolerances are read from every chosen manifest: a FIFO record.json
    made that read wait forever.  Now it is one line and the other record is tightened."""
    import os

    store = tmp_path / "store"
    loose_record(store, "syn-a", 1)
    loose_record(store, "syn-b", 2)
    manifest = store / "records" / "syn-b" / "record.json"
    manifest.unlink()
    os.mkfifo(manifest)
    code = main(["tighten", str(store), "--out", str(tmp_path / "out"), "--budget", "1", "--no-progress",
                 "--eps", "0.25", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "syn-b" in err[0] and "record.json" in err[0], err
    assert (tmp_path / "out" / "records" / "syn-a" / "record.json").exists()
    assert "syn-a" in (tmp_path / "out" / "tighten.csv").read_text()


@pytest.mark.parametrize("extra", [[], ["--eps", "0.25", "--records", "syn-a"]], ids=["all", "eps-records"])
def test_entries_of_records_that_are_not_folders_are_malformed_records(tmp_path, extra):
    """A file, a FIFO and a dangling link in records/ (tightened, or only copied when --records
    leaves them out) were skipped without a word: each is now one stderr line, never opened; the
    records are written."""
    from helpers import add_stray_entries, assert_strays_reported

    store = tmp_path / "store"
    loose_record(store, "syn-a", 1)
    loose_record(store, "syn-b", 2)
    strays = add_stray_entries(store)
    proc = subprocess.run([sys.executable, "-m", "softrank", "tighten", str(store), "--out", str(tmp_path / "out"),
                           "--budget", "1", "--no-progress", *extra], capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    assert "3 malformed" in proc.stdout and "syn-a" in (tmp_path / "out" / "tighten.csv").read_text()
    assert sorted(p.name for p in (tmp_path / "out" / "records").iterdir()) == ["syn-a", "syn-b"]
