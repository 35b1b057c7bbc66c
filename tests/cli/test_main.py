"""The console command: help and version, one-line errors with exit code 2, the demo pipeline,
``replay --json`` and ``--jobs``, ``regress`` tables, and that a plain (non-editable) install of
the checkout gives working softrank.* imports.  Nothing is written into the checkout: every
command runs in, and writes to, ``tmp_path``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import softrank

ROOT = Path(__file__).resolve().parents[2]


def softrank_cmd(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "softrank", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=900)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A replayed demo store (3 operators of 40 x 40, 9 tolerances) and the demo's output."""
    out = tmp_path_factory.mktemp("demo")
    proc = softrank_cmd("demo", "--out", out, "--operators", "3", "--size", "40", cwd=out)
    return out, proc


def test_help_lists_every_subcommand(tmp_path):
    proc = softrank_cmd("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for name in ("run", "extract", "bracket", "replay", "regress", "oracle", "families", "theorem", "kappa", "bench"):
        assert name in proc.stdout


def test_version(tmp_path):
    proc = softrank_cmd("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"softrank {softrank.__version__}"


def test_missing_store_is_a_one_line_error(tmp_path):
    proc = softrank_cmd("replay", tmp_path / "nope", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "records" in lines[0] and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [["replay", "STORE", "--jobs", "0"], ["replay", "STORE", "--jobs", "-3"],
                                  ["bench", "oracle", "--repeats", "0"], ["regress", "STORE", "--max-list", "-1"]])
def test_bad_counts_are_one_line_errors(tmp_path, args):
    proc = softrank_cmd(*[str(tmp_path) if a == "STORE" else a for a in args], cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "must be an integer >=" in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_demo_builds_and_replays_a_store(demo):
    out, proc = demo
    assert proc.returncode == 0, proc.stderr
    assert "replayed 3 records (0 malformed), 9 tolerances: upper witnesses proved 9," in proc.stdout
    rows = pq.read_table(out / "replay" / "replay.parquet").to_pylist()
    assert len(rows) == 9 and all(r["validated_upper"] == r["float64_upper"] for r in rows)
    assert all(r["chi_upper"] is not None and 0 <= r["chi_upper"] < 1e-12 for r in rows)
    assert (out / "replay" / "replay.csv").read_text().startswith("\"record_id\"")


def _rows(folder: Path) -> list[dict]:
    rows = pq.read_table(folder / "replay.parquet").to_pylist()
    return sorted(({k: v for k, v in r.items() if k != "seconds"} for r in rows),
                  key=lambda r: (r["record_id"], r["eps"]))


def test_parallel_replay_gives_the_same_table(demo, tmp_path):
    out, _ = demo
    proc = softrank_cmd("replay", out / "store", "--out", tmp_path / "par", "--jobs", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _rows(out / "replay") == _rows(tmp_path / "par")


def test_replay_json_summary(demo, tmp_path):
    out, proc = demo
    js_proc = softrank_cmd("replay", out / "store", "--out", tmp_path / "r", "--json", cwd=tmp_path)
    assert js_proc.returncode == 0, js_proc.stderr
    summary = json.loads(js_proc.stdout)  # nothing but the JSON object on stdout
    assert summary["records"] == 3 and summary["tolerances"] == 9 and summary["upper_proved"] == 9
    assert summary["malformed"] == 0 and summary["errors"] == [] and summary["exit_code"] == 0
    assert summary["out"] == str(tmp_path / "r" / "replay.parquet")
    assert _rows(tmp_path / "r") == _rows(out / "replay")


def test_regress_writes_each_table_three_ways(demo, tmp_path):
    out, _ = demo
    proc = softrank_cmd("regress", out / "replay", "--out", tmp_path / "g", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "regress: 27 verdicts, 27 agree; 0 float64 verdicts fail validation" in proc.stdout
    for name in ("transitions", "ends", "failures", "end_differences"):
        table = pq.read_table(tmp_path / "g" / f"{name}.parquet")
        assert json.loads((tmp_path / "g" / f"{name}.json").read_text()) == table.to_pylist()
        assert (tmp_path / "g" / f"{name}.csv").read_text().splitlines()[0].split(",") == \
            [f'"{c}"' for c in table.column_names]
    assert sorted(p.name for p in (tmp_path / "g").iterdir() if p.name.startswith(".")) == []  # no temporaries


def _copy_checkout(dest: Path) -> None:
    """The files git lists for the checkout (tracked, and new ones not ignored), copied to DEST."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def _build_outputs() -> set[str]:
    return {p.name for p in ROOT.iterdir() if p.name in ("build", "dist") or p.name.endswith(".egg-info")}


def test_plain_install_gives_working_imports(tmp_path):
    before = _build_outputs()
    src, target = tmp_path / "src", tmp_path / "site"
    _copy_checkout(src)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-cache-dir",
                           "-q", "--target", str(target), str(src)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _build_outputs() <= before, "the install wrote build outputs into the checkout"
    assert (target / "softrank" / "validated" / "upper_witness.py").exists()
    assert not (target / "validated").exists() and not (target / "replay").exists()  # no bare top-level packages
    env = dict(os.environ, PYTHONPATH=str(target))
    modules = ["softrank", "softrank.validated.upper_witness", "softrank.replay.engine", "softrank.exact",
               "softrank.oracle", "softrank.fastpath", "softrank.fastpath.store.files", "softrank.advisors",
               "softrank.cli", "softrank.cli.replay", "softrank.cli.regress", "softrank.bench.command",
               "softrank.findings.report", "softrank.findings.replay_job"]
    code = f"import importlib\nfor m in {modules!r}:\n    print(importlib.import_module(m).__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    files = out.stdout.split()
    assert len(files) == len(modules) and all(f.startswith(str(target)) for f in files), files
    version = softrank_cmd("--version", cwd=tmp_path, env=env)
    assert version.returncode == 0 and version.stdout.strip() == f"softrank {softrank.__version__}"


@pytest.mark.parametrize("module, extra", [("torch", "producer"), ("transformers.models", "producer"),
                                           ("cvxpy", "kappa"), ("clarabel", "kappa")])
def test_a_missing_dependency_names_its_extra(capsys, module, extra):
    from softrank.cli import _missing

    assert _missing("kappa", ModuleNotFoundError(f"No module named {module!r}", name=module)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"pip install 'softrank[{extra}]'" in err and module in err


def test_a_missing_unrelated_module_is_not_hidden():
    from softrank.cli import _missing

    with pytest.raises(ModuleNotFoundError):
        _missing("kappa", ModuleNotFoundError("No module named 'nonexistent_xyz'", name="nonexistent_xyz"))


def test_the_console_entry_returns_mains_code_after_the_exit_handlers(tmp_path):
    """``console_main`` ends the process with ``main``'s exit code (bypassing native libraries'
    static destructors) after Python's exit handlers have run and the streams are flushed."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('exit handler ran'))\n"
            f"sys.argv = ['softrank', 'replay', {str(tmp_path / 'missing')!r}]\n"
            "print('before', end='')\n"
            "from softrank.cli import console_main\n"
            "console_main()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("before") and "exit handler ran" in proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1 and "missing" in proc.stderr
