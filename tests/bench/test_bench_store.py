"""``softrank bench store STORE [--json]``: a small store with both operator forms and every
certificate kind is replayed twice (plain float64 and validated); the JSON has the four fields,
the table the four components; a missing store is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from softrank.cli import main
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter


@pytest.fixture
def store(tmp_path):
    rng = np.random.default_rng(0)
    n = 24
    for rid, form in (("logits", "logits"), ("qk", "qk")):
        with RecordWriter(tmp_path, rid, {"family": "synthetic"}) as w:
            if form == "logits":
                h = rng.normal(size=(n, n)) * 3
                w.set_logits(h)
            else:
                q, k, bias = rng.normal(size=(n, 8)), rng.normal(size=(n, 8)), rng.normal(size=(n, n))
                w.set_qk(q, k, 0.5, bias)
                h = 0.5 * (q @ k.T) + bias
            a = rowsoftmax64(h)
            w.set_a_hat(a)
            rows = np.arange(2, dtype=np.int64)
            u, s, vt = np.linalg.svd(a[::2])
            lower = [{"kind": "frobenius", "lower": 1},
                     {"kind": "decoder", "lower": 2, "rows": rows, "W": np.linalg.pinv(a[rows])},
                     {"kind": "projected", "lower": 1, "rows": np.arange(0, n, 2, dtype=np.int64),
                      "W": np.ascontiguousarray(vt[:4].T / s[:4])}]
            w.add_tolerance(0.25, upper=(a, np.eye(n), "identity"), lower=lower, float64={"lower": 2, "upper": n})
    return tmp_path


def test_json_has_the_four_fields(store, capsys):
    assert main(["bench", "store", str(store), "--json", "--repeats", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"records", "float64_seconds", "validated_seconds", "ratio"}
    assert out["records"] == 2 and out["float64_seconds"] > 0 and out["validated_seconds"] > 0
    assert out["ratio"] == pytest.approx(out["validated_seconds"] / out["float64_seconds"])


def test_the_table_has_every_component(store, capsys):
    assert main(["bench", "store", str(store), "--repeats", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:6]] == ["read", "enclosure", "upper", "lower"]
    assert lines[-1].startswith("replay_record per record")


def test_a_missing_store_is_refused(capsys):
    assert main(["bench", "store", "--json"]) == 2
    assert "give the store folder" in capsys.readouterr().err


def test_a_malformed_record_is_reported_and_not_timed(store, capsys):
    """The plain pass trusts the manifest: a record.json cut short was a JSONDecodeError traceback."""
    manifest = store / "records" / "qk" / "record.json"
    manifest.write_text(manifest.read_text()[:100])
    assert main(["bench", "store", str(store), "--json", "--repeats", "1"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "qk" in lines[0] and "record.json" in lines[0] and "not timed" in lines[0]
    assert json.loads(captured.out)["records"] == 1
