"""Bad input on the command line: each case ends in one line on stderr naming the file or field,
exit code 2, no traceback, and nothing already written is lost."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from softrank.fastpath.demo import build_demo_store


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    build_demo_store(root / "store", operators=1, size=8, seed=0)
    from softrank.cli.replay import replay_store

    replay_store(root / "store", root / "replayed")
    (root / "afile").write_text("keep me")
    (root / "bad.json").write_bytes(b"\xff\xfe[[1]]")
    (root / "ok.json").write_text("[[1, 2], [3, 4]]")
    (root / "wide.json").write_text("[[1, 2, 3]]")
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    os.mkfifo(root / "fifo.json")
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


def test_cuda_on_a_torch_without_cuda_is_one_line(work):
    import torch

    proc = subprocess.run([sys.executable, "-m", "softrank", "extract", "--model", "minilm", "--device", "cuda",
                           "--out", "e3"], cwd=work, capture_output=True, text=True, timeout=300)
    if torch.cuda.is_available():  # on a machine with a GPU the request is valid: it must extract
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr
