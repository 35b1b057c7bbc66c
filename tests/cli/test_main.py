"""The console command: help, one-line errors with exit code 2, the demo pipeline, and that a
plain (non-editable) install gives working softrank.* imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]


def softrank(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "softrank", *args], capture_output=True, text=True, cwd=cwd, timeout=900)


def test_help_lists_every_subcommand():
    proc = softrank("--help")
    assert proc.returncode == 0
    for name in ("run", "extract", "bracket", "replay", "regress", "oracle", "families", "theorem", "kappa", "bench"):
        assert name in proc.stdout


def test_missing_store_is_a_one_line_error(tmp_path):
    proc = softrank("replay", str(tmp_path / "nope"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "records" in lines[0] and "Traceback" not in proc.stderr


def test_demo_builds_and_replays_a_store(tmp_path):
    proc = softrank("demo", "--out", str(tmp_path), "--operators", "3", "--size", "40")
    assert proc.returncode == 0, proc.stderr
    assert "replayed 3 records (0 malformed), 9 tolerances: upper witnesses proved 9," in proc.stdout
    rows = pq.read_table(tmp_path / "replay" / "replay.parquet").to_pylist()
    assert len(rows) == 9 and all(r["validated_upper"] == r["float64_upper"] for r in rows)
    assert all(r["chi"] is not None and 0 <= r["chi"] < 1e-12 for r in rows)
    assert (tmp_path / "replay" / "replay.csv").read_text().startswith("\"record_id\"")


def test_parallel_replay_gives_the_same_table(tmp_path):
    softrank("demo", "--out", str(tmp_path), "--operators", "4", "--size", "32")
    proc = softrank("replay", str(tmp_path / "store"), "--out", str(tmp_path / "par"), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    seq = pq.read_table(tmp_path / "replay" / "replay.parquet").to_pylist()
    par = pq.read_table(tmp_path / "par" / "replay.parquet").to_pylist()
    key = lambda r: (r["record_id"], r["eps"])  # noqa: E731
    strip = lambda r: {k: v for k, v in r.items() if k != "seconds"}  # noqa: E731
    assert [strip(r) for r in sorted(seq, key=key)] == [strip(r) for r in sorted(par, key=key)]


def test_plain_install_gives_working_imports(tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
                           "--target", str(target), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (target / "softrank" / "validated" / "upper_witness.py").exists()
    assert not (target / "validated").exists() and not (target / "replay").exists()  # no bare top-level packages
    env = dict(os.environ, PYTHONPATH=str(target))
    code = ("import softrank, softrank.validated.upper_witness, softrank.replay.engine, softrank.exact, softrank.oracle, "
            "softrank.fastpath; print(softrank.__file__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(target))
