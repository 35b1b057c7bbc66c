"""The typed table writer of the results room (``softrank.findings.tables``): parquet, CSV and JSON
side by side, each file atomic."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from softrank.findings.tables import table_metadata, write_table


COLUMNS = [("name", pa.string()), ("k", pa.int64()), ("x", pa.float64()), ("ok", pa.bool_())]


def test_write_table_typed_and_atomic(tmp_path):
    rows = [{"name": "a", "k": 1, "x": 0.5, "ok": True, "ignored": 3}, {"name": "b"}]
    table = write_table(tmp_path / "t", rows, COLUMNS, formats=("parquet", "csv", "json"))
    assert table.schema == pa.schema(COLUMNS)
    assert pq.read_table(tmp_path / "t.parquet").to_pylist() == [
        {"name": "a", "k": 1, "x": 0.5, "ok": True}, {"name": "b", "k": None, "x": None, "ok": None}]
    assert json.loads((tmp_path / "t.json").read_text()) == table.to_pylist()
    assert (tmp_path / "t.csv").read_text().splitlines()[0] == '"name","k","x","ok"'
    with pytest.raises(pa.ArrowInvalid):  # a bad row leaves the old files and no temporary behind
        write_table(tmp_path / "t", [{"k": "not an int"}], COLUMNS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.json", "t.parquet"]
    assert pq.read_table(tmp_path / "t.parquet").num_rows == 2


def test_table_metadata_round_trips_text_metadata(tmp_path):
    write_table(tmp_path / "t", [{"name": "a"}], COLUMNS, formats=("parquet",), metadata={"store": "s", "n": 3})
    assert table_metadata(tmp_path / "t.parquet") == {"store": "s", "n": "3"}
    assert not (tmp_path / "t.csv").exists()
