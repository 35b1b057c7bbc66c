"""The predictor study's operators table (``studies/predictors/table.py``): rows of a replayed panel
at eps 1/4 with targets in cap units from the validated bracket, the other rows counted by
reason, a damaged table refused on one line; ``--limit``'s round-robin over sources; the panels'
disjointness; the summary's resolved criterion."""

from __future__ import annotations

import math
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from softrank.errors import InputError
from softrank.studies.predictors.table import check_disjoint, first_per_family, operators_table, resolved


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A replayed demonstration store (8 synthetic operators, 3 tolerances)."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    proc = subprocess.run([sys.executable, "-m", "softrank", "demo", "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def _panel(demo, tmp_path, edit):
    """A copy of the demo's folder whose replay rows are given a text family's attention and a
    source, then ``edit(rows)``."""
    import shutil

    folder = tmp_path / "panel"
    shutil.copytree(demo, folder)
    table = pq.read_table(folder / "replay" / "replay.parquet")
    rows = table.to_pylist()
    for i, r in enumerate(rows):
        r.update(attention="encoder-self", source_id=f"s{i % 2}", family="all-MiniLM-L6-v2", model="minilm")
    edit(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), folder / "replay" / "replay.parquet")
    return folder


def test_rows_at_a_quarter_with_cap_unit_targets(demo, tmp_path):
    folder = _panel(demo, tmp_path, lambda rows: None)
    rows, counts = operators_table(folder, "main")
    raw = [r for r in pq.read_table(folder / "replay" / "replay.parquet").to_pylist() if r["eps"] == "0.25"]
    assert len(rows) == len(raw) == 8 and counts["other_eps"] == 16 and counts["other_attention"] == 0
    by_id = {r["record_id"]: r for r in raw}
    for r in rows:
        src = by_id[r["record_id"]]
        p = min(src["m"], src["N"])
        assert r["p"] == p and r["panel"] == "main" and r["family"] == "all-MiniLM-L6-v2"
        assert r["U_p"] == src["validated_upper"] / p and r["L_p"] == src["validated_lower"] / p
        lo, up = src["validated_lower"], src["validated_upper"]
        assert (r["mid_p"] == (lo + up) / (2 * p)) if resolved(lo, up, p) else math.isnan(r["mid_p"])
        assert (folder / "store" / "records" / r["record_id"]).is_dir() and r["folder"].endswith(r["record_id"])


def test_other_kinds_missing_ends_and_records_are_counted(demo, tmp_path):
    def edit(rows):
        quarter = [r for r in rows if r["eps"] == "0.25"]
        quarter[0]["attention"] = "decoder-self"  # a native causal operator: outside the protocol
        quarter[1]["validated_upper"] = None  # a missing end: the target is NaN, the row kept
        quarter[2]["record_id"] = "gone"  # no record folder
        quarter[3]["status"] = "malformed"
        quarter[4].update(model="flan-t5-small", family="FLAN-T5-small encoder")  # self-attention, not a text family
        quarter[5].update(model="dinov2-small", family="DINOv2-small")

    rows, counts = operators_table(_panel(demo, tmp_path, edit), "heldout")
    assert len(rows) == 3 and (counts["other_attention"], counts["missing_record"], counts["malformed"]) == (1, 1, 1)
    assert counts["other_model"] == 2 and {r["family"] for r in rows} == {"all-MiniLM-L6-v2"}
    assert counts["missing_upper"] == 1 and sum(math.isnan(r["U_p"]) for r in rows) == 1


@pytest.mark.parametrize("edit, field", [
    (lambda rows: rows.__setitem__(1, {**rows[0]}), "twice"),  # one record twice at eps 0.25
    (lambda rows: rows[0].update(validated_lower=10**6), "validated_lower"),  # lower end above p
])
def test_a_damaged_table_is_refused_in_one_line(demo, tmp_path, edit, field):
    def at_quarter(rows):
        rows.sort(key=lambda r: r["eps"] != "0.25")
        edit(rows)

    with pytest.raises(InputError) as err:
        operators_table(_panel(demo, tmp_path, at_quarter), "main")
    assert field in str(err.value) and "replay.parquet" in str(err.value) and "\n" not in str(err.value)


def test_a_folder_that_is_not_a_panel_is_refused(tmp_path):
    with pytest.raises(InputError, match="store/records"):
        operators_table(tmp_path, "main")


def test_limit_takes_operators_round_robin_over_sources():
    rows = [{"family": f, "source_id": s, "record_id": f"{f}{s}{i}"} for f in ("a", "b") for s in ("s0", "s1", "s2")
            for i in range(3)]
    picked = first_per_family(rows, 4)
    assert [r["record_id"] for r in picked] == ["as00", "as10", "as20", "as01", "bs00", "bs10", "bs20", "bs01"]
    assert first_per_family(rows, None) == rows and len(first_per_family(rows, 100)) == len(rows)


def test_panels_must_not_share_a_source():
    main = [{"source_id": "json.0"}, {"source_id": "csv.1"}]
    check_disjoint(main, [{"source_id": "heapq.0"}], "MAIN", "HELD")
    with pytest.raises(InputError, match="csv.1"):
        check_disjoint(main, [{"source_id": "csv.1"}], "MAIN", "HELD")


@pytest.mark.parametrize("lower, upper, p, expected", [
    (10, 20, 256, True), (10, 21, 256, True), (4, 6, 8, True), (3, 30, 256, False), (100, 125, 256, True),
    (50, 100, 256, True), (50, 101, 256, False), (7, 9, 12, True), (1, 4, 30, True), (1, 4, 20, False)])
def test_resolved_is_the_summarys_criterion(lower, upper, p, expected):
    assert resolved(lower, upper, p) is expected
