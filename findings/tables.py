"""Typed tables of the results room (replay, verdicts, regress): parquet and CSV side by side (and
JSON on request), each file atomic.  Parquet keeps the types (lists and structs included) and the file metadata;
CSV writes a list or struct cell as its JSON text, since CSV has no nested values."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from softrank.fastpath.store.files import atomic_write, write_json


def write_table(stem: str | os.PathLike, rows: list[dict[str, Any]], columns: list[tuple[str, pa.DataType]],
                formats: tuple[str, ...] = ("parquet", "csv"), metadata: dict[str, str] | None = None) -> pa.Table:
    """``STEM.parquet`` and ``STEM.csv`` from rows with the typed ``columns`` (missing keys: null);
    ``"json"`` in ``formats`` adds ``STEM.json``, a list of one object per row with the columns in order.
    ``metadata`` (text keys and values) goes into the parquet schema."""
    stem = Path(stem)
    schema = pa.schema(columns, metadata={k: str(v) for k, v in (metadata or {}).items()} or None)
    table = pa.table({name: [row.get(name) for row in rows] for name, _ in columns}, schema=schema)
    for fmt in formats:
        path = stem.with_suffix("." + fmt)
        if fmt == "json":
            write_json(path, table.to_pylist())
        elif fmt == "csv":
            flat = _flat_for_csv(table)
            atomic_write(path, lambda tmp: pacsv.write_csv(flat, tmp))
        else:
            atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    return table


def _flat_for_csv(table: pa.Table) -> pa.Table:
    """Nested columns (lists, structs) as JSON text; the others unchanged."""
    cols, fields = [], []
    for field, col in zip(table.schema, table.columns):
        if pa.types.is_nested(field.type):
            col = pa.array([None if v is None else json.dumps(v) for v in col.to_pylist()], pa.string())
            field = pa.field(field.name, pa.string())
        cols.append(col)
        fields.append(field)
    return pa.table(cols, schema=pa.schema(fields))


def table_metadata(path: str | os.PathLike) -> dict[str, str]:
    """The text metadata of a parquet table written by ``write_table``."""
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"ARROW:")}
