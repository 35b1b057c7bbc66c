"""The report's held-out construction section (``cli/report_constructions.py``): a ``heldout.json``
checked field by field, the figure's embedded data equal to the file's numbers, the tables beside the
research page's quoted figures, and one line (no traceback) for a tampered file."""

from __future__ import annotations

import json
import math

import pytest

from softrank.findings.report_constructions import (CONSTRUCTIONS, RESEARCH_BEST, constructions_section, figure_data,
                                               load_heldout)
from softrank.findings.report_page import Page
from softrank.studies.heldout import heldout
from softrank.errors import InputError


def _op(fam, source, lower, upper, ranks, failed):
    rows = [{"record_id": f"{fam}{source}", "eps_value": "0.25", "m": "64", "N": "64",
             **{f"rank_{c}": str(k) for c, k in zip(heldout.ALL_CONSTRUCTIONS, ranks)},
             **{f"failed_{c}": " ".join(map(str, failed)) for c in heldout.ALL_CONSTRUCTIONS}}]
    rep = [{"record_id": f"{fam}{source}", "eps_value": "0.25", "status": "ok", "family": fam, "source_id": source,
            "validated_lower": str(lower), "validated_upper": str(upper)}]
    return heldout.operator_ratios(rows, rep, 0.25)


@pytest.fixture()
def result():
    ops = (_op("F", "s1", 2, 4, [6, 5, 4, 8, 8, 12], [1, 3, 5]) + _op("F", "s2", 3, 3, [3, 4, 3, 6, 9, 9], [2])
           + _op("G", "s1", 1, 2, [2, 2, 2, 2, 3, 4], [1]))
    return {"eps": "0.25", "sources": ["s1", "s2"], "families": heldout.summarise(ops, draws=50)}


def test_figure_data_are_the_benchmark_numbers(result):
    data = figure_data(result)
    f = data["families"]["F"]
    assert f["operators"] == 2 and f["rank_over_L"]["best"] == result["families"]["F"]["best"]
    assert f["rank_over_L"]["best"]["median"] == (4 / 2 + 3 / 3) / 2
    assert f["relative_to_altl1"]["tsvd"]["median"] == (6 / 4 + 3 / 3) / 2
    # s1: 1 < L = 2 impossible, 3 open, 5 >= U = 4 missed, for each of the six; s2: 2 < 3 impossible
    assert f["failed_attempts"] == {"impossible": 12, "open": 6, "missed": 6}
    assert data["research_page"]["failed_attempts"] == 435_436


def test_section_renders_the_figure_and_the_tables(result, tmp_path):
    path = tmp_path / "heldout.json"
    path.write_text(json.dumps(result))
    page = Page()
    constructions_section(page, load_heldout(path), str(path))
    html = "\n".join(page.parts)
    assert page.figures["constructions"].startswith(b"\x89PNG")
    embedded = html.split('id="data-fig-constructions">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == json.loads(json.dumps(figure_data(result)))
    for table in ("constructions", "relative", "attempts"):
        assert f'id="table-{table}"' in html
    assert all(f"{m:.2f} [{lo:.2f}, {hi:.2f}]" in html for _, m, lo, hi in RESEARCH_BEST)
    assert "12 (50.0%)" in html and str(path) in html


@pytest.mark.parametrize("tamper, field", [
    (lambda d: d.pop("families"), "families"),
    (lambda d: d["families"]["F"].update(operators="2"), "operators"),
    (lambda d: d["families"]["F"]["best"].update(median=math.nan), "median/ci95"),
    (lambda d: d["families"]["F"]["tsvd"].update(ci95=[1.0]), "median/ci95"),
    (lambda d: d["families"]["F"]["relative_to_altl1"]["tsvd"].update(median="1"), "relative_to_altl1.tsvd"),
    (lambda d: d["families"]["F"].pop("operators_with_altl1"), "relative_to_altl1"),
    (lambda d: d["families"]["F"].pop("failed_attempts"), "failed_attempts"),
    (lambda d: d["families"]["F"]["failed_attempts"]["all"].update(open=-1), "failed_attempts.all"),
    (lambda d: d["families"]["G"]["failed_attempts"].pop("rpqr"), "failed_attempts.rpqr"),
])
def test_a_tampered_benchmark_is_one_line_naming_the_field(result, tmp_path, tamper, field):
    tamper(result)
    path = tmp_path / "heldout.json"
    path.write_text(json.dumps(result))
    with pytest.raises(InputError) as err:
        load_heldout(path)
    assert field in str(err.value) and "\n" not in str(err.value)


def test_a_family_without_alternating_l1_witnesses_shows_no_ratio(result, tmp_path):
    del result["families"]["G"]["relative_to_altl1"]
    result["families"]["G"]["operators_with_altl1"] = 0
    path = tmp_path / "heldout.json"
    path.write_text(json.dumps(result))
    page = Page()
    constructions_section(page, load_heldout(path), str(path))
    table = "\n".join(page.parts).split('id="table-relative"', 1)[1].split("</table>", 1)[0]
    assert "<td>G</td><td class=\"n\">0</td><td>-</td>" in table


def test_a_file_that_is_not_json_is_one_line(tmp_path):
    path = tmp_path / "heldout.json"
    path.write_bytes(b"{\"families\": ")
    with pytest.raises(InputError, match="heldout.json"):
        load_heldout(path)
    assert CONSTRUCTIONS == heldout.ALL_CONSTRUCTIONS  # the producer's six, in its order
