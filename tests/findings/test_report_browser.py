"""``softrank report`` rendered in headless Chromium (slow suite: ``pytest -m slow``): every figure
is visible, the page is not blank, the per-record table and the layer x head tables are in the
rendered DOM, and the resolved count the bracket figure states equals the summary table's and the
per-record table's.  Chromium is required here: without it the tests fail with one line saying how
to install it (``apt-get install -y chromium``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
PROBE = """<script>window.addEventListener('load', () => {
  const seen = [...document.images].map(i => { const b = i.getBoundingClientRect();
    return [i.id, i.naturalWidth, i.naturalHeight, i.complete, Math.round(b.width), Math.round(b.height)]; });
  document.body.setAttribute('data-probe', JSON.stringify(seen)); });</script>"""

pytestmark = pytest.mark.slow


def _chromium() -> str:
    if CHROMIUM is None:
        pytest.fail("headless Chromium is not installed (apt-get install -y chromium)", pytrace=False)
    return CHROMIUM


def _flags(tmp_path: Path) -> list[str]:
    return [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]


def _dump_dom(page: str, tmp_path: Path) -> str:
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run([*_flags(tmp_path), "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                          timeout=180)
    assert "data-probe" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


class Dom(HTMLParser):
    """The rendered DOM's tables (id -> rows of cell texts, with each cell's attributes) and the
    resolved counts in the figure captions."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, list[list[tuple[str, dict]]]] = {}
        self.counts: list[dict] = []
        self._table = self._row = self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self._table = self.tables.setdefault(a["id"], [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ["", a]
            self._row.append(self._cell)
        elif tag == "span" and "resolved-count" in (a.get("class") or ""):
            self.counts.append(a)

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = self._row = None
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data


def _decoder_block(store, rid, width, seed):
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.demo import frobenius_lower, tsvd_witness
    from softrank.fastpath.store.writer import RecordWriter

    rng = np.random.default_rng(seed)
    h = 3.0 * rng.normal(size=(width, 3)) @ rng.normal(size=(3, width)) + 0.3 * rng.normal(size=(width, width))
    a = rowsoftmax64(h)
    prov = {"model": "toy", "family": "toydec", "block_width": width, "attention": "decoder-self-block",
            "positions": [width, 2 * width], "layer": seed % 2, "head": seed // 2, "source_id": f"src{seed}"}
    with RecordWriter(store, rid, prov) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        x, y, s = tsvd_witness(a, 0.25)
        lower = frobenius_lower(s, width, 0.25)
        w.add_tolerance("0.25", upper=(x, y, "tsvd"), lower=[{"kind": "frobenius", "lower": lower}] if lower > 1 else [],
                        float64={"lower": lower, "upper": x.shape[1]})


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    """The page of a replayed demo store (8 heads: 2 layers x 4; the sharp ones resolved) and six
    decoder blocks of widths 8, 16, 32 (so every kind of figure is drawn)."""
    from softrank.findings.replay_job import replay_store
    from softrank.findings.report import write_report
    from softrank.fastpath.demo import DEMO_STYLE, build_demo_store
    from softrank.fastpath.store.writer import write_index

    root = tmp_path_factory.mktemp("browser")
    build_demo_store(root / "store", 8, 48, seed=0, style=DEMO_STYLE)
    for i, width in enumerate((8, 16, 32) * 2):
        _decoder_block(root / "store", f"block-{i}", width, seed=i)
    write_index(root / "store")
    replay_store(root / "store", root / "replay")
    return write_report(root / "replay", root / "report.html").read_text(encoding="utf-8")


def test_tables_and_figure_agree_in_the_rendered_page(page, tmp_path):
    dom = Dom(_dump_dom(page, tmp_path))
    records = dom.tables["table-records"]
    header = [c[0] for c in records[0]]
    assert header == ["record", "model", "layer", "head", "source", "block", "eps", "L", "U", "status"]
    body = [[c[0] for c in row] for row in records[1:]]
    assert len(body) == 8 * 3 + 6 and {row[0] for row in body} == \
        {f"demo-{i:02d}" for i in range(8)} | {f"block-{i}" for i in range(6)}
    assert {row[4] for row in body if row[0].startswith("block-")} == {f"src{i}" for i in range(6)}  # source
    assert {row[5] for row in body if row[0].startswith("block-")} == {"8", "16", "32"}  # block width
    heads = {name: rows for name, rows in dom.tables.items() if name.startswith("table-heads-")}
    assert len(heads) == 3 + 1  # synthetic: one per eps; toydec: one eps
    for name, rows in heads.items():
        assert [c[0] for c in rows[0]][0] == "layer \\ head"
        assert [row[0][0] for row in rows[1:]] == ["0", "1"]
    assert [c[0] for c in heads["table-heads-synthetic-0_25"][0]][1:] == ["0", "1", "2", "3"]
    summary = dom.tables["table-summary"]
    col = [c[0] for c in summary[0]].index("resolved")
    in_table = {(row[0][0], row[1][0]): row[col][0] for row in summary[1:]}  # (family, eps) -> "6/8 (75.0%)"
    family = {row[0]: ("toydec" if row[0].startswith("block-") else "synthetic") for row in body}
    by_status = Counter((family[row[0]], row[6]) for row in body if row[9] == "resolved")
    assert len(dom.counts) == len(in_table) == 4
    for span in dom.counts:  # the figure's count (its caption states the number in the figure's title)
        fam, eps = span["data-family"], span["data-eps"]
        done, ops = int(span["data-resolved"]), int(span["data-operators"])
        assert in_table[(fam, eps)].startswith(f"{done}/{ops} ") and by_status[(fam, eps)] == done
        heat = heads[f"table-heads-{fam}-{eps.replace('.', '_')}"]
        assert sum(int(c[1]["data-resolved"]) for row in heat[1:] for c in row[1:] if "data-resolved" in c[1]) == done
        if fam == "synthetic":
            assert done == 6 and ops == 8  # the demo shows resolved brackets (its diffuse head 3 is not)
    for fam in ("synthetic", "toydec"):
        fig = json.loads(re.search(rf'id="data-fig-brackets-{fam}">(.*?)</script>', page, re.S).group(1))
        assert {p["eps"]: sum(o["resolved"] for o in p["operators"]) for p in fig["panels"]} == \
            {s["data-eps"]: int(s["data-resolved"]) for s in dom.counts if s["data-family"] == fam}


def test_every_figure_is_visible(page, tmp_path):
    dom = _dump_dom(page, tmp_path)
    m = re.search(r"data-probe=\"([^\"]*)\"", dom)
    assert m, dom[:500]
    seen = json.loads(m.group(1).replace("&quot;", '"'))
    assert len(seen) == len(re.findall(r"<img ", page)) == 4
    for name, nat_w, nat_h, complete, w, h in seen:
        assert complete and nat_w > 100 and nat_h > 100 and w > 100 and h > 50, name
    shot = tmp_path / "shot.png"
    probe = tmp_path / "probe.html"
    subprocess.run([*_flags(tmp_path), f"--screenshot={shot}", "--window-size=1400,3000", probe.as_uri()],
                   capture_output=True, timeout=180)
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.shape == (3000, 1400) and (pixels < 200).mean() > 0.02  # figures and text drawn, not blank
