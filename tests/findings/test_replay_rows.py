"""The replay's typed tables: exact eps text (a JSON number and a string never print alike),
bounds rounded outward, list and struct columns, file metadata, --budgets and --fail-on; the
schema derived from the typed row dataclasses."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from softrank.findings import replay_rows as rr
from softrank.findings.tables import table_metadata
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter
from softrank.replay.tolerance import Tolerance


def _store(tmp_path):
    """A = J/2 and a witness whose exact error is binary64(0.1), which exceeds 1/10 by 5.6e-18:
    proved at the JSON number 0.1, refuted at the string "0.1"."""
    h = np.array([[0.0, 0.0], [0.0, 0.0]])
    a = rowsoftmax64(h)  # exactly 1/2 everywhere
    t = 0.1
    x = np.array([[1.0, t], [1.0, t]])
    y = np.array([[0.5, 1.0], [0.5, 0.0]])  # each row of X Y^T is (1/2 + t, 1/2)
    err = Fraction(t)
    with RecordWriter(tmp_path / "store", "r", {"family": "t", "block_width": 2, "positions": [0, 1],
                                                 "attention": "self", "source_id": "s"}) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        w.add_tolerance(0.1, upper=(x, y, "given"), float64={"lower": 1, "upper": 1})
        w.add_tolerance("0.1", upper=(x, y, "given"), float64={"lower": 1, "upper": 1})
    return tmp_path / "store", err


def _replay(store, out, *extra):
    return subprocess.run([sys.executable, "-m", "softrank", "replay", str(store), "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, timeout=300, cwd=out.parent)


def test_eps_prints_exactly_and_two_tolerances_never_print_alike(tmp_path):
    store, err = _store(tmp_path)
    assert Fraction(1, 10) < err == Fraction(0.1)  # the two meanings of "0.1" differ
    proc = _replay(store, tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "replay.parquet").to_pylist()
    by_eps = {r["eps"]: r for r in rows}
    assert set(by_eps) == {"binary64(0.1)", "0.1"}
    for text, r in by_eps.items():
        exact = Tolerance.from_table(text).value  # the table file's eps cell, read back
        assert exact == (Fraction(0.1) if text.startswith("binary64") else Fraction(1, 10))
        want = "proved" if err <= exact else "refuted"
        assert r["upper_outcome"] == want, (text, r["upper_outcome"], float(err - exact))
        if r["upper_bound"] is not None and r["upper_outcome"] == "proved":
            assert Fraction(Decimal(r["upper_bound"])) >= err  # rounded up, never below the bound
    assert by_eps["binary64(0.1)"]["upper_outcome"] == "proved" and by_eps["0.1"]["upper_outcome"] == "refuted"
    assert proc.returncode == 0  # a refuted witness alone does not fail the run unless --fail-on says so
    assert Tolerance.stored(Fraction(1, 4), "0.25").text == "0.25"
    assert Tolerance.stored(Fraction(3, 20), "3/20").text == "3/20"


def test_columns_are_typed_and_carry_metadata(tmp_path):
    store, _ = _store(tmp_path)
    _replay(store, tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "replay.parquet")
    schema = table.schema
    assert schema.field("lower_outcomes").type == pa.list_(schema.field("lower_outcomes").type.value_type)
    assert pa.types.is_struct(schema.field("lower_outcomes").type.value_type)
    assert schema.field("assumptions").type == pa.list_(pa.string())
    assert schema.field("positions").type == pa.list_(pa.int64())
    assert schema.field("block_width").type == pa.int64() and schema.field("chi_upper").type == pa.float64()
    row = table.to_pylist()[0]
    assert row["block_width"] == 2 and row["positions"] == [0, 1] and row["attention"] == "self"
    meta = table_metadata(tmp_path / "out" / "replay.parquet")
    assert meta["strict"] == "false" and meta["softrank_version"] and meta["store"].endswith("store")
    csv_text = (tmp_path / "out" / "replay.csv").read_text()
    assert '"[""IEEE 754' in csv_text or "[\"\"" in csv_text  # nested cells as JSON text in CSV


def test_budgets_and_fail_on(tmp_path):
    store, _ = _store(tmp_path)
    proc = _replay(store, tmp_path / "a", "--budgets", "0,1,5")
    verdicts = pq.read_table(tmp_path / "a" / "verdicts.parquet").to_pylist()
    assert sorted({v["k"] for v in verdicts}) == [0, 1, 5] and proc.returncode == 0
    # one of the two tolerances is refuted: exit 1 only when asked
    assert _replay(store, tmp_path / "b", "--fail-on", "refuted").returncode == 1
    assert _replay(store, tmp_path / "c", "--fail-on", "malformed,contradiction").returncode == 0
    bad = _replay(store, tmp_path / "d", "--fail-on", "oops")
    assert bad.returncode == 2 and "fail-on" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    out = subprocess.run([sys.executable, "-m", "softrank", "replay", str(store), "--out", str(tmp_path / "e"),
                          "--json", "--fail-on", "refuted"], capture_output=True, text=True, timeout=300)
    assert json.loads(out.stdout)["exit_code"] == 1 == out.returncode


_LOWER = pa.struct([("kind", pa.string()), ("claimed", pa.int64()), ("outcome", pa.string()), ("route", pa.string()),
                    ("value", pa.string()), ("lemma", pa.string()), ("reason", pa.string())])
_WRITTEN = [  # the schema of replay.parquet as SoftRank has always written it, spelled out
    ("record_id", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("model", pa.string()), ("family", pa.string()), ("attention", pa.string()), ("source_id", pa.string()),
    ("layer", pa.int64()), ("head", pa.int64()), ("block_width", pa.int64()), ("positions", pa.list_(pa.int64())),
    ("m", pa.int64()), ("N", pa.int64()), ("eps", pa.string()), ("eps_value", pa.float64()),
    ("float64_lower", pa.int64()), ("float64_upper", pa.int64()),
    ("validated_lower", pa.int64()), ("validated_upper", pa.int64()), ("chi_upper", pa.float64()),
    ("upper_rank", pa.int64()), ("upper_construction", pa.string()), ("upper_outcome", pa.string()),
    ("upper_route", pa.string()), ("upper_bound", pa.string()), ("upper_lemma", pa.string()),
    ("upper_reason", pa.string()), ("lower_kind", pa.string()), ("lower_outcomes", pa.list_(_LOWER)),
    ("assumptions", pa.list_(pa.string())), ("seconds", pa.float64())]


@dataclasses.dataclass
class _Extra:
    a: int | None = None
    b: list[rr.LowerOutcome] | None = None
    c: bool = False
    d: float | None = None


@dataclasses.dataclass
class _Unsupported:
    x: dict | None = None


def test_the_schema_is_derived_from_the_row_dataclasses():
    assert pa.schema(rr.REPLAY_COLUMNS).equals(pa.schema(_WRITTEN))
    assert rr.LOWER_OUTCOME.equals(_LOWER) and rr.LOWER_OUTCOME_FIELDS == tuple(_LOWER.names)
    assert [name for name, _ in rr.REPLAY_COLUMNS] == [f.name for f in dataclasses.fields(rr.ReplayRow)]
    assert rr.VERDICT_COLUMNS == [("record_id", pa.string()), ("family", pa.string()), ("block_width", pa.int64()),
                                  ("eps", pa.string()), ("k", pa.int64()), ("float64_verdict", pa.string()),
                                  ("validated_verdict", pa.string())]
    assert rr.columns(_Extra) == [("a", pa.int64()), ("b", pa.list_(_LOWER)), ("c", pa.bool_()), ("d", pa.float64())]
    with pytest.raises(TypeError, match="no arrow type"):
        rr.columns(_Unsupported)


def test_a_malformed_record_is_one_row_of_every_column():
    row = rr.malformed_row("bad", "records/bad: field 'x': missing")
    assert list(row) == [name for name, _ in rr.REPLAY_COLUMNS]
    assert {k: v for k, v in row.items() if v is not None} == {"record_id": "bad", "status": "malformed",
                                                               "error": "records/bad: field 'x': missing"}
