"""Output paths that would change an input: refused before anything is written.

Each case ends in one line on stderr naming the option or the file, exit code 2, no traceback,
and every file of the input store and replay folder is byte-identical afterwards:

- an output folder that is the input store, its ``records/`` or a folder in it (``replay``,
  ``bracket``, ``attack``, ``study kappa``), or whose outputs would be the store (``bracket``);
- an output file inside the input store (``kappa``, ``theorem``);
- an output file over a replay table (``report``, ``regress --write-baseline``, also over the
  ``--against`` file);
- an input store with no records (``bracket``, ``tighten``), named as the input;
- an empty path or value (never replaced by the default).

The documented modes stay: ``bracket STORE --out STORE`` (in place), ``replay STORE`` into
``STORE/replay``, ``report`` into ``REPLAY_DIR/report.html``."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import demo_store_and_replay


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A bracketed store of two small records and its replay, copied afresh for each test."""
    return demo_store_and_replay(tmp_path_factory.mktemp("outputs"), operators=2, seed=0)


@pytest.fixture
def work(pristine, tmp_path):
    for name in ("store", "replayed"):
        shutil.copytree(pristine / name, tmp_path / name, symlinks=True)
    (tmp_path / "empty" / "records").mkdir(parents=True)
    (tmp_path / "m.json").write_text("[[1, 2], [3, 4]]")
    return tmp_path


def _snapshot(root: Path) -> dict[str, str]:
    """Every entry under ROOT (relative path) -> SHA-256 of a file's bytes, or 'dir'."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _softrank(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "softrank", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _refused(work: Path, args: list[str], needles: tuple[str, ...]) -> str:
    """Run ``softrank ARGS`` in WORK; it must exit 2 with one line holding every needle, and leave
    every file under WORK (the inputs, the other outputs) as it was, adding nothing."""
    before = _snapshot(work)
    proc = _softrank(work, *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (args, proc.stderr[-800:])
    assert "Traceback" not in proc.stderr, (args, proc.stderr)
    assert len(lines) == 1, (args, proc.stderr)
    for needle in needles:
        assert needle in lines[0], (args, needle, lines[0])
    assert _snapshot(work) == before, (args, "an input changed or an output was written")
    return lines[0]


# 1. an output folder that is the input store, its records/ or a folder in it
FOLDERS = [
    (["replay", "store", "--out", "store/records"], ("store/records", "'out'", "records folder")),
    (["replay", "store", "--out", "store/records/demo-00"], ("store/records/demo-00", "'out'", "inside")),
    (["replay", "store", "--out", "store"], ("store", "'out'", "input store")),
    (["bracket", "store", "--out", "store/records", "--no-progress"], ("store/records", "'out'", "records folder")),
    (["bracket", "store", "--out", "store/records/zz", "--no-progress"], ("store/records/zz", "'out'", "inside")),
    (["attack", "store", "--out", "store/records", "--no-progress"], ("store/records", "'out'", "records folder")),
    (["attack", "store", "--out", "store", "--no-progress"], ("store", "'out'", "input store")),
    (["study", "kappa", "store", "--replay", "replayed", "--out", "store/records", "--no-progress"],
     ("store/records", "'out'", "records folder")),
    (["study", "kappa", "store", "--replay", "replayed", "--out", "store", "--no-progress"],
     ("store", "'out'", "input store")),
]


@pytest.mark.parametrize("args, needles", FOLDERS, ids=[" ".join(a) for a, _ in FOLDERS])
def test_an_output_folder_in_the_input_store_is_refused(work, args, needles):
    _refused(work, args, needles)


def test_a_bracket_output_whose_records_would_be_the_input_store_is_refused(work):
    """``bracket P/records --out P`` would write P/records/ID into the input store's own folder."""
    (work / "outer").mkdir()
    shutil.move(work / "store", work / "outer" / "records")
    _refused(work, ["bracket", "outer/records", "--out", "outer", "--no-progress"], ("outer", "'out'", "would write"))


# 2. an output file inside the input store (a CSV over a record.json or index.csv)
FILES = [
    (["kappa", "store", "--rank", "2", "--out", "store/records/demo-00/record.json"],
     ("store/records/demo-00/record.json", "'out'", "input store")),
    (["kappa", "store", "--rank", "2", "--out", "store/index.csv"], ("store/index.csv", "'out'", "input store")),
    (["theorem", "tau", "store", "--rank", "2", "--out", "store/records/demo-00/record.json"],
     ("store/records/demo-00/record.json", "'out'", "input store")),
    (["theorem", "gauge-audit", "store", "--rank", "2", "--out", "store/index.csv"],
     ("store/index.csv", "'out'", "input store")),
    (["theorem", "kappa-gamma", "store", "--rank", "2", "--out", "store/records/demo-01/record.json"],
     ("store/records/demo-01/record.json", "'out'", "input store")),
]


@pytest.mark.parametrize("args, needles", FILES, ids=[" ".join(a) for a, _ in FILES])
def test_an_output_file_in_the_input_store_is_refused(work, args, needles):
    _refused(work, args, needles)


# 3. and 4. an output file over a table of the input replay (or over the --against baseline)
TABLES = [
    (["report", "replayed", "--out", "replayed/replay.parquet"], ("replayed/replay.parquet", "'out'", "input table")),
    (["report", "replayed", "--out", "replayed/manifest.json"], ("replayed/manifest.json", "'out'", "input table")),
    (["report", "replayed", "--out", "page.html", "--figures", "replayed/verdicts.parquet"],
     ("replayed/verdicts.parquet", "'figures'", "input table")),
    (["regress", "replayed", "--out", "g", "--write-baseline", "replayed/verdicts.parquet"],
     ("replayed/verdicts.parquet", "'write-baseline'", "input table")),
    (["regress", "replayed", "--out", "g", "--write-baseline", "replayed/replay.parquet"],
     ("replayed/replay.parquet", "'write-baseline'", "input table")),
]


@pytest.mark.parametrize("args, needles", TABLES, ids=[" ".join(a) for a, _ in TABLES])
def test_an_output_file_over_a_replay_table_is_refused(work, args, needles):
    _refused(work, args, needles)


def test_write_baseline_over_the_against_baseline_is_refused(work):
    """The baseline is written before ``--against`` is read: the same file would always agree."""
    assert _softrank(work, "regress", "replayed", "--out", "g", "--write-baseline", "base.json").returncode == 0
    shutil.rmtree(work / "g")
    _refused(work, ["regress", "replayed", "--out", "g", "--write-baseline", "base.json", "--against", "base.json"],
             ("base.json", "'write-baseline'", "--against"))


# 5. an input store with no records: named as the input, before any output is created
EMPTY = [
    (["bracket", "empty", "--out", "store", "--no-progress"], ("empty", "'records'", "no records")),
    (["bracket", "empty", "--out", "new", "--no-progress"], ("empty", "'records'", "no records")),
    (["bracket", "empty", "--no-progress"], ("empty", "'records'", "no records")),
    (["tighten", "empty", "--out", "new"], ("empty", "'records'", "no records")),
    (["replay", "empty", "--out", "new", "--no-progress"], ("empty", "'records'", "no records")),
    (["attack", "empty", "--out", "new", "--no-progress"], ("empty", "'records'", "no records")),
]


@pytest.mark.parametrize("args, needles", EMPTY, ids=[" ".join(a) for a, _ in EMPTY])
def test_an_input_store_without_records_is_refused(work, args, needles):
    line = _refused(work, args, needles)
    assert "new" not in line and not (work / "new").exists()  # no output folder, no .partial journal


# 6. an empty path or value: refused, never replaced by the default
BLANK = [
    ["replay", "store", "--out", ""],
    ["bracket", "store", "--out", ""],
    ["attack", "store", "--out", ""],
    ["regress", "replayed", "--out", ""],
    ["report", "replayed", "--out", ""],
    ["kappa", "store", "--out", ""],
    ["theorem", "tau", "store", "--out", ""],
    ["theorem", "gauge-audit", "store", "--out", ""],
    ["theorem", "kappa-gamma", "store", "--out", ""],
    ["oracle", "m.json", "--eps", "1/4", "--rank", "1", "--witness", ""],
    ["regress", "replayed", "--against", ""],
    ["regress", "replayed", "--write-baseline", ""],
    ["report", "replayed", "--figures", ""],
    ["run", "--device", ""],
    ["run", "--out", ""],
    ["demo", "--out", ""],
    ["tighten", "store", "--out", ""],
    ["extract", "--model", "minilm", "--out", ""],
    ["study", "kappa", "store", "--replay", "", "--out", "k"],
    ["replay", ""],
    ["replay", "store", "--out", "  "],
]


@pytest.mark.parametrize("args", BLANK, ids=[" ".join(a or "''" for a in args) for args in BLANK])
def test_an_empty_path_is_refused_not_replaced_by_the_default(work, args):
    option = next((a for a, b in zip(args, args[1:]) if a.startswith("--") and not b.strip()), None)
    line = _refused(work, args, ("empty",))
    assert (option or "argument store") in line, line


def test_the_documented_output_places_still_work(work):
    """In place (``--out STORE``), ``STORE/replay``, ``REPLAY_DIR/report.html`` and a baseline
    beside the tables are not inputs: they are written as before."""
    for args in (["bracket", "store", "--out", "store", "--jobs", "1", "--no-progress"],
                 ["replay", "store", "--quiet"],
                 ["report", "store/replay"],
                 ["regress", "store/replay", "--write-baseline", "store/replay/base.json"]):
        proc = _softrank(work, *args)
        assert proc.returncode == 0, (args, proc.stderr[-800:])
    for name in ("bracket-manifest.json", "replay/replay.parquet", "replay/report.html", "replay/base.json"):
        assert (work / "store" / name).is_file(), name
