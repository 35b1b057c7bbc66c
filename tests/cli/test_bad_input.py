"""Bad input on the command line: each case ends in one line on stderr naming the file or field,
exit code 2, no traceback, and nothing already written is lost."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

from helpers import demo_store_and_replay
from softrank.fastpath.demo import build_demo_store


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = demo_store_and_replay(tmp_path_factory.mktemp("bad"), operators=1, seed=0)
    (root / "afile").write_text("keep me")
    (root / "bad.json").write_bytes(b"\xff\xfe[[1]]")
    (root / "ok.json").write_text("[[1, 2], [3, 4]]")
    (root / "wide.json").write_text("[[1, 2, 3]]")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "uni.json").write_text(json.dumps([["\u0661", "0"], ["0", "1"]]))  # an Arabic-Indic digit one
    # every entry is within the reader's limits, but exact thresholds of the cell exceed 4,300 digits
    (root / "long.json").write_text(json.dumps([["7/" + "3" * 399, "1e999", "1e-999"], ["0", "1e-999", "1e-999"],
                                                ["1e-999", "0", "1"]]))
    os.mkfifo(root / "fifo.json")
    (root / "adir").mkdir()
    return root


CASES = [
    ("replay store --out afile", "afile"),
    ("replay store --jobs 0", "jobs"),
    ("replay store --budgets 8,x", "budgets"),
    ("replay store --fail-on nonsense", "fail-on"),
    ("replay nostore", "records"),
    ("demo --out afile", "afile"),
    ("demo --size 0 --out d0", "size"),
    ("demo --operators 0 --out d1", "operators"),
    ("demo --out .", "not empty"),
    ("regress replayed --out afile", "afile"),
    ("regress store", "replay.parquet"),
    ("attack store --out afile", "afile"),
    ("bench oracle --repeats 0", "repeats"),
    ("oracle bad.json --eps 1/4 --rank 1", "UTF-8"),
    ("oracle fifo.json --eps 1/4 --rank 1", "regular file"),
    ("oracle deep.json --eps 1/4 --rank 1", "nested"),
    ("oracle ok.json --eps 1e-5000 --rank 1", "400 digits"),
    ("oracle ok.json --eps 1e-10000000 --rank 1", "400 digits"),
    ("oracle ok.json --eps 1/4 --rank 1 --witness bad.json", "UTF-8"),
    ("oracle ok.json --eps 1/4 --rank 1 --witness wide.json", "witness"),
    ("oracle ok.json --eps 1 --rank 1", "eps"),
    ("bracket store --out afile", "afile"),
    ("extract --model minilm --out afile", "afile"),
    ("extract --model minilm --device tpu --out e1", "device"),
    ("run --device tpu --out r1", "device"),
    # argparse's own errors: one line (not the usage too)
    ("demo --size x --out d2", "--size"),
    ("oracle ok.json --eps 1/4", "--rank"),
    ("families cube", "cube"),
    ("study widths", "--out"),
    # counts: negative seeds, and huge values that would run for ages or exhaust memory
    ("demo --seed -1 --out d3", "seed"),
    ("demo --size 100000000 --out d4", "size"),
    ("demo --operators 10000000000 --out d5", "operators"),
    ("theorem perturbation --adversarial -1", "adversarial"),
    ("theorem perturbation --random 10000000000000", "random"),
    ("theorem perturbation --seed -1", "seed"),
    ("replay store --jobs 100000", "jobs"),
    ("bracket store --out b9 --jobs 100000", "jobs"),
    ("attack store --restarts 100000000000000", "restarts"),
    ("bench oracle --repeats 100000000", "repeats"),
    ("kappa store --max-n 0", "max-n"),
    ("theorem tau store --max-n -1", "max-n"),
    ("theorem tau store --records ,", "records"),
    ("families grid --r 1000000 --L 1000000", "L^r"),
    ("families gauge --beta 1e100000", "beta"),
    ("families gauge --t 1e390", "beta, t"),
    ("study widths --out sw --device tpu", "device"),
    # special files where an output file or an input text is expected: refused, never replaced or read
    ("regress replayed --out g1 --write-baseline fifo.json", "fifo.json"),
    ("regress replayed --out g2 --write-baseline adir", "adir"),
    ("report replayed --out fifo.json", "fifo.json"),
    ("theorem tau store --rank 2 --out adir", "adir"),
    ("kappa store --rank 2 --out fifo.json", "fifo.json"),
    ("extract --model minilm --text-file fifo.json --out e4", "fifo.json"),
    ("oracle uni.json --eps 1/4 --rank 1", "400 digits"),
    ("oracle long.json --eps 1/4 --rank 2", "entries"),
    ("oracle long.json --eps 1/4 --profile", "entries"),
    ("extract --model minilm --threads 10000000000000000000000000000000 --out e5", "threads"),
    ("extract --model minilm --tokens 10000000000000000000000000000000 --out e6", "tokens"),
    ("extract --model minilm --seed -1 --out e7", "seed"),
    ("extract --model minilm --widths 64 --max-operators 1 --out e8", "widths"),
    ("study widths --out sw2 --tokens 10000000000000000000000000000000", "tokens"),
    ("run --minilm 0 --smollm2 0 --out r2", "nothing to run"),
    # an output store inside the input store would change it
    ("bracket store --out store/records/zz", "inside"),
    ("tighten store --out store/zz", "inside"),
]


@pytest.mark.parametrize("command, needle", CASES, ids=[c for c, _ in CASES])
def test_one_line_exit_2(work, command, needle):
    before = {p.name: p.stat().st_mtime_ns for p in work.iterdir()}
    proc = subprocess.run([sys.executable, "-m", "softrank", *command.split()], cwd=work, capture_output=True,
                          text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (command, proc.stderr[-500:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr and needle in lines[0], (command, proc.stderr)
    assert (work / "afile").read_text() == "keep me"
    for name, mtime in before.items():  # nothing already there was rewritten
        assert (work / name).stat().st_mtime_ns == mtime, (command, name)
    assert stat.S_ISFIFO((work / "fifo.json").lstat().st_mode) and (work / "adir").is_dir()
    assert sorted(p.name for p in (work / "store" / "records").iterdir()) == ["demo-00"]  # the store is unchanged


def test_cuda_on_a_torch_without_cuda_is_one_line(work):
    import torch

    proc = subprocess.run([sys.executable, "-m", "softrank", "extract", "--model", "minilm", "--device", "cuda",
                           "--out", "e3"], cwd=work, capture_output=True, text=True, timeout=300)
    if torch.cuda.is_available():  # on a machine with a GPU the request is valid: it must extract
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr


def _softrank(*args, cwd):
    return subprocess.run([sys.executable, "-m", "softrank", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def one_bad(tmp_path_factory):
    """A store of three small records whose middle one has an empty record.json."""
    root = tmp_path_factory.mktemp("onebad")
    build_demo_store(root / "store", operators=3, size=8, seed=0)
    (root / "store" / "records" / "demo-01" / "record.json").write_text("")
    return root


@pytest.mark.parametrize("command", ["kappa store --rank 2 --json", "theorem tau store --rank 2 --json"])
def test_one_bad_record_does_not_stop_the_others(one_bad, command):
    """kappa and theorem report a malformed record on one line and still compute the others (exit 2)."""
    proc = _softrank(*command.split(), cwd=one_bad)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and "demo-01" in lines[0] and "record.json" in lines[0], lines
    rows = json.loads(proc.stdout)["rows"]
    assert {r["record"] if "record" in r else r["record_id"] for r in rows} == {"demo-00", "demo-02"}


def test_a_check_that_cannot_be_computed_is_one_line_per_record(one_bad):
    """kappa-gamma needs records with queries and keys: each logits record is one line, no traceback."""
    proc = _softrank("theorem", "kappa-gamma", "store", "--rank", "2", cwd=one_bad)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 3 and all(line.startswith("softrank theorem: error: ") for line in lines), lines
    assert sum("queries and keys" in line for line in lines) == 2 and sum("record.json" in line for line in lines) == 1


def test_run_prints_a_malformed_record_on_stderr(one_bad, tmp_path):
    shutil.copytree(one_bad / "store", tmp_path / "out" / "store")
    proc = _softrank("run", "--reuse", "--out", tmp_path / "out", "--jobs", "1", "--no-progress", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("softrank run: error: ") and "demo-01" in lines[0], lines
    assert "replay error" not in proc.stdout


MULTI = {  # command (after STORE) and the table that must list the good records
    "replay": (["--out", "OUT"], "replay.csv"),
    "bracket": (["--out", "OUT", "--jobs", "1", "--eps", "0.25", "--no-progress"], "bracket.csv"),
    "attack": (["--out", "OUT", "--restarts", "1", "--no-progress"], "attack.csv"),
    "tighten": (["--out", "OUT", "--budget", "1", "--no-progress"], "tighten.csv"),
}


@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("command", sorted(MULTI))
def test_a_special_record_json_is_reported_and_the_others_are_processed(tmp_path, command, kind):
    """record.json a FIFO (replay and bracket waited on it forever) or a folder (the whole run
    stopped on "3: Is a directory"): one line naming the record, the others in the table, exit 2."""
    build_demo_store(tmp_path / "store", operators=3, size=8, seed=0)
    manifest = tmp_path / "store" / "records" / "demo-01" / "record.json"
    manifest.unlink()
    os.mkfifo(manifest) if kind == "fifo" else manifest.mkdir()
    extra, table = MULTI[command]
    proc = _softrank(command, "store", *[str(tmp_path / "out") if a == "OUT" else a for a in extra], cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and "demo-01" in lines[0] and "not a regular file" in lines[0], lines
    text = (tmp_path / "out" / table).read_text()
    assert "demo-00" in text and "demo-02" in text


def test_a_record_folder_replaced_by_a_file_a_fifo_or_a_link_loop_is_one_malformed_row(tmp_path):
    """Entries of records/ that are not folders were left out of the replay without a word (a
    record replaced by a file vanished from the table): each is now one line and a malformed row."""
    build_demo_store(tmp_path / "store", operators=3, size=8, seed=0)
    records = tmp_path / "store" / "records"
    shutil.rmtree(records / "demo-01")
    (records / "demo-01").write_text("not a record")
    os.mkfifo(records / "zz-pipe")
    os.symlink("loop", records / "loop")
    proc = _softrank("replay", "store", "--out", str(tmp_path / "out"), cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 3 and all("record.json" in line for line in lines), lines
    assert {name for name in ("demo-01", "zz-pipe", "loop") if any(name in line for line in lines)} == {
        "demo-01", "zz-pipe", "loop"}
    text = (tmp_path / "out" / "replay.csv").read_text()
    assert "demo-00" in text and "demo-02" in text and "malformed" in text


@pytest.mark.parametrize("scale", [1e300, 1e-310])
@pytest.mark.parametrize("command", ["kappa store --rank 2 --json", "theorem tau store --rank 2 --json"])
def test_logits_outside_the_float64_range_of_the_theory_are_one_line(tmp_path, scale, command):
    """Logits of size 1e300 (or subnormal) made the SDP, LP and eigensolvers fail with their own
    messages (ScsWork allocation error, HiGHS model error, non-finite entry): now one line naming the
    record and field 'logits', the other records computed, exit 2."""
    import numpy as np

    from softrank.fastpath.store.writer import RecordWriter

    rng = np.random.default_rng(0)
    for i, s in enumerate((1.0, scale, 1.0)):
        h = rng.normal(size=(8, 8))
        with RecordWriter(tmp_path / "store", f"op-{i}", provenance={"model": "synthetic", "family": "synthetic"}) as w:
            w.set_logits(s * h)
            a = np.exp(h - h.max(1, keepdims=True))
            w.set_a_hat(a / a.sum(1, keepdims=True))  # a_hat is not what this test is about
    proc = _softrank(*command.split(), cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and "op-1" in lines[0] and "field 'logits'" in lines[0] and "range" in lines[0], lines
    rows = json.loads(proc.stdout)["rows"]
    assert {r["record"] if "record" in r else r["record_id"] for r in rows} == {"op-0", "op-2"}
