"""The report's comparison with the research page (``cli/report_research.py``) and the bracket
figure at the full panel's scale (``report_figures._layout``: panels stacked beyond ``MANY``)."""

from __future__ import annotations

from softrank.findings import report_figures as rf
from softrank.findings.report_page import Page
from softrank.findings.report_research import RESEARCH_PAGE, comparison_rows, research_section

SUMMARY = [{"family": "all-MiniLM-L6-v2", "eps": "0.25", "operators": 576, "resolved_share": 0.5, "median_L": 16,
            "median_U": 56, "median_U_over_L": 2.2},
           {"family": "all-MiniLM-L6-v2", "eps": "0.15", "operators": 576, "resolved_share": 0.4, "median_L": 28,
            "median_U": 80, "median_U_over_L": 2.6}]


def test_comparison_quotes_the_research_page_then_this_run_at_eps_one_quarter():
    rows = comparison_rows(SUMMARY)
    assert [r["family"] for r in rows] == ["BERT-base", "GPT-2", "Qwen2.5-1.5B", "ViT-Base 1k", "ViT-Base 21k",
                                           "all-MiniLM-L6-v2"]
    assert rows[0] == {"source": "research page (float64)", "family": "BERT-base", "operators": 512,
                       "resolved_share": 0.428, "median_L": 11, "median_U": 57, "median_U_over_L": 3.82}
    assert rows[-1]["source"] == "this run (validated)" and rows[-1]["median_U"] == 56
    assert len(RESEARCH_PAGE) == 5


def test_research_section_renders_a_table_with_its_data():
    page = Page()
    research_section(page, SUMMARY)
    html = "\n".join(page.parts)
    assert "Beside the research page" in html and "42.8%" in html and "99.7%" in html and "3.82" in html


def _panel(eps: str, n: int) -> dict:
    ops = [{"record_id": f"r{i}", "lower": 1 + i % 30, "upper": 40 + i % 90, "full_rank": 256,
            "resolved": i % 3 == 0, "witness_proved": True} for i in range(n)]
    return {"eps": eps, "operators": sorted(ops, key=lambda o: (o["upper"], o["lower"]))}


def test_hundreds_of_operators_stack_the_panels():
    few, many = [_panel("0.25", 10)] * 3, [_panel("0.15", 600), _panel("0.25", 600)]
    assert rf._layout(few)[:2] == (1, 3)
    assert rf._layout(many)[:2] == (2, 1)
    png = rf.bracket_figure({"family": "all-MiniLM-L6-v2", "panels": many})
    assert png.startswith(b"\x89PNG")
