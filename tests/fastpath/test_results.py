"""``softrank.results`` and ``softrank.report`` (docs/python.md): the validated results of many
records as one table holding what ``replay.parquet`` holds, ``to_arrow`` / ``to_pandas``, the page
of ``softrank report`` from Python, and a Python float eps meaning the decimal it prints as."""

from __future__ import annotations

import json
import re
import shutil
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import softrank
from softrank.fastpath.demo import DEMO_STYLE, build_demo_store
from softrank.errors import InputError

CORPUS = Path(__file__).resolve().parent.parent / "soundness" / "certificates"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """A demo store of 4 heads (24 x 24) with one malformed record, and its replay by the CLI code."""
    from softrank.findings.replay_job import replay_store
    from softrank.fastpath.store.writer import write_index

    root = tmp_path_factory.mktemp("results")
    build_demo_store(root / "store", 4, 24, seed=3, style=DEMO_STYLE)
    shutil.copytree(CORPUS / "malformed" / "records" / "bad-hash-mismatch",
                    root / "store" / "records" / "bad-hash-mismatch")
    write_index(root / "store")
    replay_store(root / "store", root / "replay")
    return root


def _without_seconds(rows):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_results_of_a_store_hold_what_replay_parquet_holds(replayed):
    table = pq.read_table(replayed / "replay" / "replay.parquet")
    res = softrank.results(replayed / "store")
    assert isinstance(res, softrank.Results) and len(res) == table.num_rows == 13  # 4 x 3 + 1 malformed
    assert res.to_arrow().schema.remove_metadata() == table.schema.remove_metadata()
    assert _without_seconds(res.to_arrow().to_pylist()) == _without_seconds(table.to_pylist())
    verdicts = pq.read_table(replayed / "replay" / "verdicts.parquet")
    assert res.to_arrow(verdicts=True).to_pylist() == verdicts.to_pylist()
    for column in ("record_id", "model", "family", "layer", "head", "source_id", "block_width", "eps",
                   "validated_lower", "validated_upper", "upper_outcome", "lower_outcomes", "status"):
        assert column in res.columns
    bad = [r for r in res if r["status"] == "malformed"]
    assert [r["record_id"] for r in bad] == ["bad-hash-mismatch"] and "hash" in bad[0]["error"]
    assert {(r["layer"], r["head"]) for r in res if r["status"] == "ok"} == {(0, 0), (0, 1), (0, 2), (0, 3)}
    assert res.to_arrow().schema.metadata[b"store"] == str((replayed / "store").resolve()).encode()


def test_store_records_and_replay_folders_give_the_same_rows(replayed):
    want = _without_seconds(softrank.results(replayed / "store").rows)
    store = softrank.Store(replayed / "store")
    assert _without_seconds(softrank.results(store).rows) == want
    good = [store[i] for i in store.ids() if i != "bad-hash-mismatch"]
    assert _without_seconds(softrank.results(good).rows) == [r for r in want if r["status"] == "ok"]
    read = softrank.results(replayed / "replay")  # a replay folder is read, not replayed
    assert read.source == str(replayed / "replay")
    assert _without_seconds(read.rows) == _without_seconds(pq.read_table(replayed / "replay" / "replay.parquet")
                                                           .to_pylist())
    assert softrank.results(read) is read


def test_to_pandas_and_a_clear_error_without_pandas(replayed, monkeypatch):
    res = softrank.results(replayed / "replay")
    pandas = pytest.importorskip("pandas")
    frame = res.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == res.columns and len(frame) == len(res)
    assert len(res.to_pandas(verdicts=True)) == len(res.verdicts)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(ImportError, match=r"needs pandas.*pip install pandas"):
        res.to_pandas()
    assert res.to_arrow().num_rows == len(res)  # arrow needs no pandas


def test_summary_is_the_reports_table(replayed):
    res = softrank.results(replayed / "replay")
    summary = res.summary()
    assert [s["eps"] for s in summary] == ["0.15", "0.25", "0.35"]
    for s in summary:
        assert s["operators"] == 4 and s["resolved_share"] == s["resolved"] / 4


def test_write_then_report_from_the_command_line(replayed, tmp_path):
    from softrank.cli import main

    res = softrank.results(replayed / "store")
    out = res.write(tmp_path / "tables")
    assert _without_seconds(pq.read_table(out / "replay.parquet").to_pylist()) == _without_seconds(res.to_arrow()
                                                                                                   .to_pylist())
    assert main(["report", str(out), "--out", str(tmp_path / "page.html")]) == 0


def _data(page: str, name: str):
    m = re.search(rf'<script type="application/json" id="data-{re.escape(name)}">(.*?)</script>', page, re.S)
    assert m, name
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_report_from_python_is_the_command_lines_page(replayed, tmp_path):
    from softrank.cli import main

    assert main(["report", str(replayed / "replay"), "--out", str(tmp_path / "cli.html")]) == 0
    cli = (tmp_path / "cli.html").read_text(encoding="utf-8")
    from_folder = softrank.report(replayed / "replay", out=tmp_path / "folder.html")
    assert from_folder == tmp_path / "folder.html" and from_folder.read_text(encoding="utf-8") == cli
    res = softrank.results(replayed / "store")
    memory = softrank.report(res, out=tmp_path / "sub" / "memory.html", figures=tmp_path / "figs").read_text(
        encoding="utf-8")
    names = re.findall(r'id="data-([^"]+)"', cli)
    assert names == re.findall(r'id="data-([^"]+)"', memory) and "table-records" in names
    for name in names:
        assert _data(memory, name) == _data(cli, name), name
    assert "in memory (softrank.results)" in memory and sorted(p.name for p in (tmp_path / "figs").iterdir()) == \
        ["brackets-synthetic.png", "distributions.png"]


def test_a_python_float_eps_is_the_decimal_it_prints_as(tmp_path):
    rng = np.random.default_rng(0)
    rec = softrank.Record.from_logits(rng.normal(size=(12, 2)) @ rng.normal(size=(2, 12)), record_id="f")
    bracketed = softrank.bracket(rec, eps=[0.15, "1/4"])
    assert [(t.eps, t.eps_text) for t in bracketed.tolerances] == [(Fraction(3, 20), "0.15"),
                                                                    (Fraction(1, 4), "1/4")]
    checked = softrank.validate(bracketed)
    assert checked[0.15].eps == Fraction(3, 20) and checked["3/20"] is checked[0.15]
    mine = rec.with_upper(eps=0.1, X=rec.a_hat, Y=np.eye(12))
    assert mine.tolerances[0].eps == Fraction(1, 10) != Fraction(0.1)
    store = softrank.Store(tmp_path / "s")
    store.write(bracketed)
    doc = json.loads((tmp_path / "s" / "records" / "f" / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == ["0.15", 0.25]
    assert [r["eps"] for r in softrank.results(store)] == ["0.15", "0.25"]
    assert store["f"].tolerances[0].eps == Fraction(3, 20)


@pytest.mark.parametrize("source, field", [("nowhere", ""), (42, "source")])
def test_bad_sources_are_one_line_errors(tmp_path, source, field):
    with pytest.raises(InputError) as err:
        softrank.results(tmp_path / source if isinstance(source, str) else [source])
    assert err.value.field == field
    (tmp_path / "empty" / "records").mkdir(parents=True)
    with pytest.raises(InputError, match="no records"):
        softrank.results(tmp_path / "empty")
