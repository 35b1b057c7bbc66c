"""Damaged replay tables read by ``softrank regress``, ``softrank report`` and ``softrank study
kappa`` (one check shared by the three: ``softrank.findings.replay_table.read_replay_table``): each is
one line on stderr naming the file and the column, exit code 2, no traceback, nothing already
written changed.  Also: special files in place of a table, a corrupt ``study kappa --resume``
cache entry (recomputed, said on one line) and the bound on ``--bootstrap``."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import demo_store_and_replay
from softrank.cli import main


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return demo_store_and_replay(tmp_path_factory.mktemp("replay-input"), operators=3, seed=1, replay="replay")


def _first_ok(rows: list[dict]) -> dict:
    return next(r for r in rows if r.get("status", "ok") == "ok")


def _write_with(path, rows: list[dict], schema: pa.Schema, column: str, value) -> None:
    """Write ROWS, whose first ok row holds VALUE in COLUMN; when VALUE does not fit the column's
    type the column becomes float64 (a number) or text (the others as their JSON text), as a table
    rewritten by pandas or from CSV would."""
    _first_ok(rows)[column] = value
    try:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        return
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass
    if isinstance(value, float):
        typ, cells = pa.float64(), [None if r[column] is None else float(r[column]) for r in rows]
    else:
        typ = pa.string()
        cells = [r[column] if r[column] is None or isinstance(r[column], str) else json.dumps(r[column]) for r in rows]
    schema = schema.set(schema.get_field_index(column), pa.field(column, typ))
    pq.write_table(pa.table({f.name: (cells if f.name == column else [r[f.name] for r in rows]) for f in schema},
                            schema=schema), path)


def _damaged(work, tmp_path, table: str, column: str, value):
    folder = tmp_path / "replay"
    shutil.copytree(work / "replay", folder)
    path = folder / table
    t = pq.read_table(path)
    rows = t.to_pylist()
    if column == "validated_lower" and value == "above upper":
        value = _first_ok(rows)["validated_upper"] + 1
    _write_with(path, rows, t.schema, column, value)
    return folder


REPLAY_DAMAGE = [  # (column, value written into the first ok row of replay.parquet)
    ("validated_upper", math.nan),
    ("validated_upper", math.inf),
    ("validated_upper", "x"),
    ("validated_lower", "above upper"),
    ("validated_lower", -1),
    ("status", "weird"),
    ("lower_outcomes", "{not json"),
    ("lower_outcomes", '[{"kind": 3}]'),
    ("block_width", -3),
    ("chi_upper", math.nan),
    ("m", 0),
    ("eps_value", 0.5),  # disagrees with the row's eps text
]
VERDICT_DAMAGE = [("validated_verdict", "maybe"), ("k", -1), ("block_width", 0)]


def _snapshot(folder) -> dict:
    return {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}


def _one_line(capsys, code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, (code, err[-1500:])
    assert len(lines) == 1 and all(n in lines[0] for n in needles), (needles, lines)
    return lines[0]


def _commands(folder, tmp_path, study: bool, store):
    """The commands that read FOLDER's tables; each writes only where nothing exists yet (or, for
    the study, into a folder holding a file that must stay as it is)."""
    cmds = [("regress", ["regress", str(folder)], [folder / "regress"]),
            ("report", ["report", str(folder), "--out", str(tmp_path / "page.html")], [tmp_path / "page.html"])]
    if study:
        out = tmp_path / "study"
        out.mkdir(exist_ok=True)
        (out / "keep.txt").write_text("keep me")
        cmds.append(("study kappa", ["study", "kappa", str(store), "--replay", str(folder), "--out", str(out),
                                     "--ranks", "2", "--bootstrap", "10", "--no-progress", "--json"],
                     [out / "rows.csv", out / "study.json"]))
    return cmds


@pytest.mark.parametrize("column, value", REPLAY_DAMAGE, ids=[f"{c}={v}" for c, v in REPLAY_DAMAGE])
def test_a_damaged_replay_table_is_one_line(work, tmp_path, capsys, column, value):
    folder = _damaged(work, tmp_path, "replay.parquet", column, value)
    before = _snapshot(folder)
    for name, argv, absent in _commands(folder, tmp_path, True, work / "store"):
        line = _one_line(capsys, main(argv), "replay.parquet", f"{column}'")
        assert "row " in line and "demo-0" in line, (name, line)  # the row and its record
        assert not any(p.exists() for p in absent), name
    assert _snapshot(folder) == before  # the tables are read, never changed
    assert (tmp_path / "study" / "keep.txt").read_text() == "keep me"


@pytest.mark.parametrize("column, value", VERDICT_DAMAGE, ids=[f"{c}={v}" for c, v in VERDICT_DAMAGE])
def test_a_damaged_verdict_table_is_one_line(work, tmp_path, capsys, column, value):
    folder = _damaged(work, tmp_path, "verdicts.parquet", column, value)
    for name, argv, absent in _commands(folder, tmp_path, False, None):
        _one_line(capsys, main(argv), "verdicts.parquet", f"{column}'")
        assert not any(p.exists() for p in absent), name


def _special(path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    else:  # a link to itself
        os.symlink(path.name, path)


SPECIAL = [("fifo", "FIFO"), ("folder", "a folder"), ("dev-zero", "character device"), ("loop", "link loop")]


@pytest.mark.parametrize("kind, needle", SPECIAL, ids=[k for k, _ in SPECIAL])
def test_a_special_file_in_place_of_a_table_is_named_not_missing(work, tmp_path, capsys, kind, needle):
    """A FIFO (never opened: it would block), a folder, a link to /dev/zero or a link loop at
    verdicts.parquet (regress, report) or replay.parquet (study kappa) is said to be what it is."""
    folder = tmp_path / "replay"
    shutil.copytree(work / "replay", folder)
    _special(folder / "verdicts.parquet", kind)
    for name, argv, absent in _commands(folder, tmp_path, False, None):
        line = _one_line(capsys, main(argv), "verdicts.parquet", needle)
        assert "missing" not in line and not any(p.exists() for p in absent), (name, line)
    folder = tmp_path / "replay2"
    shutil.copytree(work / "replay", folder)
    _special(folder / "replay.parquet", kind)
    (_, argv, absent), = [c for c in _commands(folder, tmp_path, True, work / "store") if c[0] == "study kappa"]
    line = _one_line(capsys, main(argv), "replay.parquet", needle)
    assert "missing" not in line and not any(p.exists() for p in absent)


def test_tables_in_their_csv_and_pandas_forms_are_read(work, tmp_path, capsys):
    """Not over-strict: lists as JSON text (the CSV form), integers as integral floats (a column
    rewritten through NaN), a contradiction row (no validated ends) and its verdict ``error``."""
    folder = tmp_path / "replay"
    shutil.copytree(work / "replay", folder)
    t = pq.read_table(folder / "replay.parquet")
    rows, schema = t.to_pylist(), t.schema
    for column in ("lower_outcomes", "assumptions", "positions"):
        schema = schema.set(schema.get_field_index(column), pa.field(column, pa.string()))
    schema = schema.set(schema.get_field_index("validated_upper"), pa.field("validated_upper", pa.float64()))
    for r in rows:
        for column in ("lower_outcomes", "assumptions", "positions"):
            r[column] = None if r[column] is None else json.dumps(r[column])
        r["validated_upper"] = None if r["validated_upper"] is None else float(r["validated_upper"])
    rows[1].update(status="contradiction", error="contradiction at eps 0.25", validated_lower=None,
                   validated_upper=None)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), folder / "replay.parquet")
    v = pq.read_table(folder / "verdicts.parquet")
    verdicts = v.to_pylist()
    for x in verdicts:
        if (x["record_id"], x["eps"]) == (rows[1]["record_id"], rows[1]["eps"]):
            x["validated_verdict"] = "error"
    pq.write_table(pa.Table.from_pylist(verdicts, schema=v.schema), folder / "verdicts.parquet")
    assert main(["regress", str(folder), "--out", str(tmp_path / "g")]) == 0
    assert main(["report", str(folder), "--out", str(tmp_path / "page.html")]) == 0
    err = capsys.readouterr().err
    assert "error" not in err and (tmp_path / "page.html").stat().st_size > 10_000

    from softrank.findings.regress import read_rows

    row = next(r for r in read_rows(folder, "replay.parquet") if r["status"] == "ok")
    assert isinstance(row["validated_upper"], int) and isinstance(row["lower_outcomes"], list)


def test_a_corrupt_resume_cache_entry_is_recomputed(work, tmp_path, capsys):
    out = tmp_path / "sk"
    argv = ["study", "kappa", str(work / "store"), "--replay", str(work / "replay"), "--out", str(out),
            "--ranks", "2", "--bootstrap", "10", "--no-progress", "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    ops = out / "operators"
    (ops / "demo-00.json").write_text("junk\n")
    entry = json.loads((ops / "demo-01.json").read_text())
    del entry["ranks"]  # valid JSON, not an entry the statistics can use
    (ops / "demo-01.json").write_text(json.dumps(entry))
    (ops / "demo-02.json").write_bytes(b"\xff\xfe{")
    assert main(argv + ["--resume"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err and len(lines) == 3, captured.err
    for name, line in zip(("demo-00.json", "demo-01.json", "demo-02.json"), sorted(lines)):
        assert name in line and "corrupt cache entry" in line and "recomputed" in line, line
        assert json.loads((ops / name).read_text())["record_id"] == name[:-5]  # whole again
    again = json.loads(captured.out)["summary"]
    assert again["operators_done"] == first["summary"]["operators_done"] == 3 and again["rows"] == first["summary"]["rows"]
    assert main(argv + ["--resume"]) == 0 and capsys.readouterr().err == ""  # now every entry is reused


@pytest.mark.parametrize("value", ["10000000000000000000000000000000", "100001", "0", "-3", "x"])
def test_bootstrap_has_a_documented_bound(tmp_path, value):
    proc = subprocess.run([sys.executable, "-m", "softrank", "study", "kappa", "store", "--replay", "replay",
                           "--out", str(tmp_path / "w"), "--bootstrap", value], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-1500:]
    assert len(lines) == 1 and "--bootstrap" in lines[0] and len(lines[0]) < 300, lines
    assert not (tmp_path / "w").exists()


def test_bootstrap_bound_value():
    from softrank.cli.study import MAX_BOOTSTRAP, _bootstrap

    assert MAX_BOOTSTRAP == 100_000 and _bootstrap("100000") == 100_000 and _bootstrap(" 10 ") == 10


def test_the_check_knows_the_written_lower_outcome_fields():
    from softrank.findings.replay_rows import REPLAY_COLUMNS as WRITTEN
    from softrank.findings.replay_table import LOWER_OUTCOME, LOWER_OUTCOME_FIELDS, REPLAY_COLUMNS

    assert tuple(LOWER_OUTCOME.names) == LOWER_OUTCOME_FIELDS and WRITTEN is REPLAY_COLUMNS
