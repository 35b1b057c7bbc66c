"""``softrank report``: the page is self-contained, and what its figures draw and its tables show
is what the replay tables hold (recomputed here independently from replay.parquet and
verdicts.parquet), with one "resolved" criterion everywhere (the results table's).  The slow
tests in test_report_browser.py render the page in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import shutil
import statistics
import struct
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from softrank.fastpath.bracket.matrix import resolved as results_criterion
from softrank.fastpath.demo import build_demo_store, frobenius_lower, tsvd_witness
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter, write_index

CORPUS = Path(__file__).resolve().parent.parent / "soundness" / "certificates"
WIDTHS = (8, 16, 32)


def _decoder_block(store, rid, width, seed, break_witness=False):
    rng = np.random.default_rng(seed)
    h = 3.0 * rng.normal(size=(width, 3)) @ rng.normal(size=(3, width)) + 0.3 * rng.normal(size=(width, width))
    a = rowsoftmax64(h)
    prov = {"model": "toy", "family": "toydec", "block_width": width, "attention": "decoder-self-block",
            "positions": [width, 2 * width], "layer": 0, "head": seed}
    with RecordWriter(store, rid, prov) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        for eps in (0.25, 0.35):
            x, y, s = tsvd_witness(a, eps)
            lower = frobenius_lower(s, width, eps)
            w.add_tolerance(eps, upper=(x * (1.5 if break_witness else 1.0), y, "tsvd"),
                            lower=[{"kind": "frobenius", "lower": lower}] if lower > 1 else [],
                            float64={"lower": lower, "upper": x.shape[1]})


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    from softrank.findings.replay_job import replay_store

    root = tmp_path_factory.mktemp("report")
    store = root / "store"
    build_demo_store(store, 3, 24, seed=2)
    for i, width in enumerate(WIDTHS * 2):
        _decoder_block(store, f"block-{width}-{i}", width, seed=i)
    _decoder_block(store, "block-broken", 16, seed=9, break_witness=True)
    shutil.copytree(CORPUS / "malformed" / "records" / "bad-hash-mismatch", store / "records" / "bad-hash-mismatch")
    write_index(store)
    summary = replay_store(store, root / "replay")
    assert summary.malformed == 1 and summary.upper_refuted == 2
    return root / "replay"


@pytest.fixture(scope="module")
def page(replayed):
    from softrank.findings.report import write_report

    path = write_report(replayed, replayed.parent / "page" / "report.html", figures=replayed.parent / "figs")
    return path.read_text(encoding="utf-8")


def _data(page: str, name: str):
    m = re.search(rf'<script type="application/json" id="data-{re.escape(name)}">(.*?)</script>', page, re.S)
    assert m, name
    return json.loads(m.group(1).replace("<\\/", "</"))


def _rows(replayed):
    return pq.read_table(replayed / "replay.parquet").to_pylist(), pq.read_table(replayed / "verdicts.parquet").to_pylist()


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_page_is_self_contained(page, replayed):
    srcs = re.findall(r'\ssrc="([^"]*)"', page)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r"https?://|<link|@import|url\(", page)
    for s in srcs:
        w, h = _png_size(base64.b64decode(s.split(",", 1)[1]))
        assert w > 100 and h > 100
    names = sorted(p.stem for p in (replayed.parent / "figs").glob("*.png"))
    assert names == sorted(["brackets-synthetic", "brackets-toydec", "distributions", "widths-toydec"])
    assert len(srcs) == len(names)


def test_bracket_figures_draw_the_replay_table(page, replayed):
    rows, _ = _rows(replayed)
    ok = [r for r in rows if r["status"] == "ok"]
    for family in ("synthetic", "toydec"):
        data = _data(page, f"fig-brackets-{family}")
        for panel in data["panels"]:
            mine = [r for r in ok if r["family"] == family and r["eps"] == panel["eps"]]
            want = {(r["record_id"], r["validated_lower"],
                     r["validated_upper"] if r["validated_upper"] is not None else min(r["m"], r["N"]))
                    for r in mine}
            got = {(o["record_id"], o["lower"], o["upper"]) for o in panel["operators"]}
            assert got == want and len(panel["operators"]) == len(mine)
            uppers = [o["upper"] for o in panel["operators"]]
            assert uppers == sorted(uppers)
            for o in panel["operators"]:
                assert o["resolved"] == _resolved(o["lower"], o["upper"] if o["witness_proved"] else None,
                                                  o["full_rank"])
                assert o["full_rank"] == next(min(r["m"], r["N"]) for r in mine if r["record_id"] == o["record_id"])
    broken = [o for p in _data(page, "fig-brackets-toydec")["panels"] for o in p["operators"]
              if o["record_id"] == "block-broken"]
    assert broken and all(not o["witness_proved"] and o["upper"] == 16 for o in broken)


def _resolved(lower, upper, full_rank) -> bool:
    """The results table's criterion, written out: a proved witness, and U <= 2L or U - L <= 2 or
    U - L <= min(m, N)/10."""
    ok = upper is not None and (upper <= 2 * lower or upper - lower <= 2 or 10 * (upper - lower) <= full_rank)
    assert ok == results_criterion(lower, upper, full_rank)
    return ok


def test_the_pages_criterion_is_the_producers():
    """The room restates the results table's criterion (it does not import the producer's bracket
    code): the two agree on every bracket up to full rank 40, and without an upper end."""
    from softrank.findings.report_figures import resolved

    for p in range(1, 41):
        for lower in range(p + 1):
            for upper in (None, *range(lower, p + 1)):
                assert resolved(lower, upper, p) == results_criterion(lower, upper, p), (lower, upper, p)


def test_summary_table_is_the_replay_table(page, replayed):
    rows, _ = _rows(replayed)
    groups = defaultdict(list)
    for r in rows:
        if r["status"] == "ok":
            groups[(r["family"], r["eps"])].append(r)
    got = {(s["family"], s["eps"]): s for s in _data(page, "table-summary")}
    assert set(got) == set(groups)
    for key, sel in groups.items():
        lo = [r["validated_lower"] for r in sel]
        up = [r["validated_upper"] if r["validated_upper"] is not None else min(r["m"], r["N"]) for r in sel]
        s = got[key]
        assert s["operators"] == len(sel)
        assert s["median_L"] == statistics.median(lo) and s["median_U"] == statistics.median(up)
        assert s["median_U_over_L"] == pytest.approx(statistics.median(u / max(l, 1) for l, u in zip(lo, up)))
        done = sum(_resolved(r["validated_lower"], r["validated_upper"], min(r["m"], r["N"])) for r in sel)
        assert s["resolved"] == done and s["resolved_share"] == done / len(sel)
        assert s["closed_share"] == sum(l == u for l, u in zip(lo, up)) / len(sel)
        assert s["support"] == "full"  # no native decoder operator here
        shown = f"<td>{key[0]}</td><td>full</td><td>{key[1]}</td><td class=\"n\">{len(sel)}</td><td>{statistics.median(lo):g}</td>"
        assert shown in page
        assert (f"<td>{done}/{len(sel)} ({100 * done / len(sel):.1f}%)</td><td>{100 * s['closed_share']:.1f}%</td>"
                in page)
        # the figure counts by the same criterion: its title and caption say the table's number
        panel = next(p for p in _data(page, f"fig-brackets-{key[0]}")["panels"] if p["eps"] == key[1])
        assert sum(o["resolved"] for o in panel["operators"]) == done
        assert (f'data-family="{key[0]}" data-eps="{key[1]}" data-resolved="{done}" data-operators="{len(sel)}"'
                in page)
    assert "U <= 2L)</th>" not in page and "results-table criterion)</th>" not in page  # one resolved column


def test_every_record_is_listed(page, replayed):
    rows, _ = _rows(replayed)
    listed = _data(page, "table-records")
    assert [(x["record_id"], x["eps"]) for x in listed] == [(r["record_id"], r["eps"]) for r in rows]
    for x, r in zip(listed, rows):
        assert (x["model"], x["layer"], x["head"], x["source"], x["block"]) == \
            (r["model"], r["layer"], r["head"], r["source_id"], r["block_width"])
        if r["status"] != "ok":
            assert x["status"] == r["status"] and x["L"] is None
            continue
        full = min(r["m"], r["N"])
        upper = r["validated_upper"] if r["validated_upper"] is not None else full
        assert (x["L"], x["U"]) == (r["validated_lower"], upper)
        want = "no_witness" if r["validated_upper"] is None else \
            "resolved" if _resolved(r["validated_lower"], upper, full) else "unresolved"
        assert x["status"] == want
    assert page.count('<td class="resolved">resolved</td>') == sum(x["status"] == "resolved" for x in listed)
    assert {x["status"] for x in listed} == {"resolved", "unresolved", "no_witness", "malformed"}


def test_layer_by_head_tables(page, replayed):
    rows, _ = _rows(replayed)
    ok = [r for r in rows if r["status"] == "ok"]
    tables = re.findall(r'<table id="table-(heads-[^"]+)" class="heads" data-family="([^"]*)" data-eps="([^"]*)"',
                        page)
    assert {(fam, eps) for _, fam, eps in tables} == {(r["family"], r["eps"]) for r in ok}
    for name, fam, eps in tables:
        cells = _data(page, f"table-{name}")
        groups = defaultdict(list)
        for r in ok:
            if r["family"] == fam and r["eps"] == eps:
                groups[(r["layer"], r["head"])].append(r)
        assert {(c["layer"], c["head"]) for c in cells} == set(groups)
        for c in cells:
            sel = groups[(c["layer"], c["head"])]
            done = sum(_resolved(r["validated_lower"], r["validated_upper"], min(r["m"], r["N"])) for r in sel)
            assert (c["operators"], c["resolved"]) == (len(sel), done)
            assert f'data-layer="{c["layer"]}" data-head="{c["head"]}" data-resolved="{done}"' in page


def test_transitions_are_the_verdict_table(page, replayed):
    _, verdicts = _rows(replayed)
    want = Counter((v["family"], v["eps"], v["float64_verdict"] or "none", v["validated_verdict"]) for v in verdicts)
    got = {(t["family"], t["eps"], t["float64_verdict"], t["validated_verdict"]): t["count"]
           for t in _data(page, "table-transitions")}
    assert got == dict(want)


def test_width_shares_are_the_verdict_table(page, replayed):
    _, verdicts = _rows(replayed)
    cells = _data(page, "fig-widths-toydec")
    assert sorted({c["block_width"] for c in cells}) == list(WIDTHS)
    for c in cells:
        sel = [v for v in verdicts if v["family"] == "toydec" and v["eps"] == c["eps"] and v["k"] == c["k"]
               and v["block_width"] == c["block_width"]]
        assert c["operators"] == len(sel) > 0
        for verdict in ("feasible", "impossible"):
            assert c[f"{verdict}_share"] == sum(v["validated_verdict"] == verdict for v in sel) / len(sel)


def test_distributions_and_problems_listed(page, replayed):
    rows, _ = _rows(replayed)
    chi = _data(page, "fig-distributions")["chi_upper"]
    per_record = {r["record_id"]: (r["family"], r["chi_upper"]) for r in rows if r["status"] == "ok"}
    assert sorted(v for vals in chi.values() for v in vals) == sorted(c for _, c in per_record.values())
    malformed = _data(page, "table-malformed")
    assert [m["record_id"] for m in malformed] == ["bad-hash-mismatch"]
    assert malformed[0]["error"] == next(r["error"] for r in rows if r["status"] == "malformed")
    assert "hash mismatch" in page
    witnesses = _data(page, "table-witnesses")
    assert {(w["record_id"], w["outcome"]) for w in witnesses} == {("block-broken", "refuted")}
    assert all(w["reason"] for w in witnesses)


def test_command_line(replayed, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "softrank", "report", str(replayed), "--out", str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"report: {tmp_path / 'r.html'}" and (tmp_path / "r.html").stat().st_size > 10_000
    proc = subprocess.run([sys.executable, "-m", "softrank", "report", str(replayed), "--out", str(tmp_path / "j.html"),
                           "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)  # one JSON object, nothing else
    assert info["report"] == str(tmp_path / "j.html") and info["records"] == len({r["record_id"] for r in _rows(replayed)[0]})
    assert info["figures"] == ["brackets-synthetic", "brackets-toydec", "distributions", "widths-toydec"]
    assert info["rows_by_status"]["malformed"] == 1 and {s["family"] for s in info["summary"]} == {"synthetic", "toydec"}
    proc = subprocess.run([sys.executable, "-m", "softrank", "report", str(tmp_path / "nowhere")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("tamper, needle", [
    ("foreign", "column missing"),  # a parquet of other columns: report's KeyError
    ("swapped", "column missing"),  # verdicts.parquet in place of replay.parquet
    ("nan_eps", "eps' expected a tolerance"),  # a tampered row: report's TypeError on None
])
def test_a_tampered_table_is_one_line_in_report_and_regress(replayed, tmp_path, tamper, needle):
    import pyarrow as pa

    folder = tmp_path / "replay"
    shutil.copytree(replayed, folder)
    table = folder / "replay.parquet"
    if tamper == "foreign":
        pq.write_table(pa.table({"a": [1, 2]}), table)
    elif tamper == "swapped":
        shutil.copy(folder / "verdicts.parquet", table)
    else:
        rows = pq.read_table(table).to_pylist()
        next(r for r in rows if r["status"] == "ok").update(eps="nan", m=None)
        pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(table)), table)
    for command in (["report", str(folder), "--out", str(tmp_path / "r.html")],
                    ["regress", str(folder), "--out", str(tmp_path / "g")]):
        proc = subprocess.run([sys.executable, "-m", "softrank", *command], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (command, proc.stderr[-1500:])
        assert len(lines) == 1 and "replay.parquet" in lines[0] and needle in lines[0], lines
    assert not (tmp_path / "r.html").exists()


def test_run_writes_the_report_by_default(tmp_path, capsys):
    from softrank.cli import main

    out = tmp_path / "out"
    build_demo_store(out / "store", 2, 16, seed=4)
    assert main(["run", "--out", str(out), "--reuse", "--jobs", "1", "--no-progress", "--eps", "0.25"]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<h1>SoftRank report</h1>" in page and 'id="img-brackets-synthetic"' in page


def _kind_record(store, rid, attention, layer, h):
    a = rowsoftmax64(h)
    prov = {"model": "/ckpt/path/toyt5", "family": "toyt5", "attention": attention, "layer": layer, "head": 0}
    with RecordWriter(store, rid, prov) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        x, y, s = tsvd_witness(a, 0.25)
        w.add_tolerance(0.25, upper=(x, y, "tsvd"), lower=[{"kind": "frobenius", "lower": frobenius_lower(s, len(h), 0.25)}],
                        float64={"lower": frobenius_lower(s, len(h), 0.25), "upper": x.shape[1]})


def test_attention_kinds_of_a_family_are_grouped_apart_and_near_uniform_is_said(tmp_path):
    from softrank.findings.replay_job import replay_store
    from softrank.findings.report import write_report

    rng = np.random.default_rng(5)
    store = tmp_path / "store"
    for i, kind in enumerate(("encoder-self", "cross")):  # layer 0 of both: never one cell
        h = 4.0 * rng.normal(size=(12, 3)) @ rng.normal(size=(3, 12))
        _kind_record(store, f"toyt5-{kind}", kind, 0, h)
    write_index(store)
    replay_store(store, tmp_path / "replay")
    page = write_report(tmp_path / "replay", tmp_path / "report.html").read_text(encoding="utf-8")
    cells = _data(page, "table-heads-toyt5__encoder-self_-0_25") + _data(page, "table-heads-toyt5__cross_-0_25")
    assert sorted(c["family"] for c in cells) == ["toyt5 (cross)", "toyt5 (encoder-self)"]
    assert all(c["operators"] == 1 for c in cells)
    assert sorted(r["family"] for r in _data(page, "table-summary")) == ["toyt5 (cross)", "toyt5 (encoder-self)"]
    assert {r["model"] for r in _data(page, "table-records")} == {"toyt5"}  # the model's name, not the path
    assert "near-uniform" not in page
    flat = tmp_path / "flat"
    _kind_record(flat, "flat-1", "encoder-self", 0, np.zeros((12, 12)))
    write_index(flat)
    replay_store(flat, tmp_path / "flat-replay")
    page = write_report(tmp_path / "flat-replay", tmp_path / "flat.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<p class="note near-uniform"><strong>toyt5</strong>: every operator', page)) == 1
