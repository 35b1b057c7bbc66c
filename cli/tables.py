"""Typed tables written by the front ends: parquet and CSV side by side (and JSON on request),
each file atomic."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from softrank.fastpath.files import atomic_write, write_json


def write_table(stem: str | os.PathLike, rows: list[dict[str, Any]], columns: list[tuple[str, pa.DataType]],
                formats: tuple[str, ...] = ("parquet", "csv")) -> pa.Table:
    """``STEM.parquet`` and ``STEM.csv`` from rows with the typed ``columns`` (missing keys: null);
    ``"json"`` in ``formats`` adds ``STEM.json``, a list of one object per row with the columns in order."""
    stem = Path(stem)
    table = pa.table({name: [row.get(name) for row in rows] for name, _ in columns}, schema=pa.schema(columns))
    writers = {"parquet": pq.write_table, "csv": pacsv.write_csv}
    for fmt in formats:
        path = stem.with_suffix("." + fmt)
        if fmt == "json":
            write_json(path, table.to_pylist())
        else:
            atomic_write(path, lambda tmp, w=writers[fmt]: w(table, tmp))
    return table
