"""``softrank study widths`` on the command line: ``--json`` cells from a store of blocks built in
Python and reused (no model, no torch), one-line errors with exit code 2, and a producer command
on an install without the producer's dependencies gives one line naming the extra to install."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import softrank
from softrank.cli import main

NO_PRODUCER = "import sys\nfor _m in ('torch', 'transformers'):\n    sys.modules[_m] = None\n"


def _block(width: int, pair: int, rank: int, seed: int) -> softrank.Record:
    """A synthetic operator of about the given rank, with a width-study provenance."""
    rng = np.random.default_rng(seed)
    h = 4 * rng.normal(size=(width, rank)) @ rng.normal(size=(rank, width))
    prov = {"model": "synthetic", "family": "synthetic", "block_width": width, "source_id": f"src{pair // 2}",
            "layer": pair % 2, "head": 0}
    return softrank.Record.from_logits(h, record_id=f"blk{width}-p{pair}", provenance=prov)


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    store = softrank.Store(out / "store")
    store.write_all(softrank.bracket(_block(w, p, 1 if w == 8 else 3, 10 * w + p), eps=0.25)
                    for w in (8, 16) for p in range(3))
    return out


def test_json_cells_from_a_reused_store(study_dir, capsys):
    argv = ["study", "widths", "--out", str(study_dir), "--reuse", "--json", "--widths", "8,16", "--budgets",
            "1,2,8", "--no-progress"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    cells = result["cells"]
    assert [(c["N"], c["k"]) for c in cells] == [(8, 1), (8, 2), (8, 8), (16, 1), (16, 2), (16, 8)]
    for c in cells:
        assert set(c) >= {"N", "k", "feasible", "impossible", "unresolved"}
        assert abs(c["feasible"] + c["impossible"] + c["unresolved"] - 1) < 1e-12 and c["operators"] == 3
    by = {(c["N"], c["k"]): c for c in cells}
    assert by[(16, 8)]["feasible"] == 1.0 and by[(16, 1)]["feasible"] == 0.0
    assert [c["k"] for c in result["classes"]] == [1, 2, 8]
    assert (study_dir / "cells.csv").is_file() and (study_dir / "study.csv").is_file()


def test_table_output(study_dir, capsys):
    assert main(["study", "widths", "--out", str(study_dir), "--reuse", "--widths", "8,16", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "k = 8" in out and "N = 8 to N = 16" in out and "time:" in out


def test_entries_of_records_that_are_not_folders_are_malformed_records(study_dir, tmp_path):
    """A file, a FIFO and a dangling link in the reused store's records/ were skipped without a
    word: each is now one stderr line (never opened), the cells hold every record, exit code 2."""
    import shutil

    from helpers import add_stray_entries, assert_strays_reported

    shutil.copytree(study_dir / "store", tmp_path / "out" / "store")
    strays = add_stray_entries(tmp_path / "out" / "store")
    proc = subprocess.run([sys.executable, "-m", "softrank", "study", "widths", "--out", str(tmp_path / "out"),
                           "--reuse", "--json", "--widths", "8,16", "--budgets", "8", "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    assert [c["operators"] for c in json.loads(proc.stdout)["cells"]] == [3, 3]
    assert (tmp_path / "out" / "study.csv").read_text().count("blk") == 6


@pytest.mark.parametrize("args, field", [
    (["--widths", "64"], "widths"),
    (["--eps", "0.1,0.2"], "eps"),
    (["--operators", "0"], "operators"),
    (["--budgets", "-1"], "budgets"),
    (["--jobs", "0"], "jobs"),
])
def test_bad_arguments_are_one_line(tmp_path, capsys, args, field):
    assert main(["study", "widths", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("softrank study: error:") and "\n" not in err and field in err


def test_existing_store_needs_reuse(study_dir, capsys):
    assert main(["study", "widths", "--out", str(study_dir), "--no-progress"]) == 2
    assert "--reuse" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["extract", "--model", "minilm", "--out", "OUT"],
                                  ["study", "widths", "--out", "OUT", "--no-progress"]])
def test_producer_command_without_the_producer(tmp_path, argv):
    code = NO_PRODUCER + f"from softrank.cli import main\nsys.exit(main({[a.replace('OUT', str(tmp_path / 'o')) for a in argv]!r}))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "pip install 'softrank[producer]'" in lines[0] and "not installed" in lines[0]
