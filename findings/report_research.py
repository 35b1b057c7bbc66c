"""The report's comparison with the research page (``softrank run --panel full``): this run's
families at eps 0.25 beside the float64 figures the research page quotes for its own panels.

The research page's numbers are quoted, not recomputed: they come from other checkpoints (BERT-base,
GPT-2, Qwen2.5-1.5B, ViT-Base) that SoftRank does not embed.  Its "median U/L" is, as here, the
median over operators of U / max(L, 1), not the ratio of the medians.
"""

from __future__ import annotations

EPS = "0.25"
# family, operators, resolved share, median L, median U, median U/L (the research page, float64, eps 0.25)
RESEARCH_PAGE = (
    ("BERT-base", 512, 0.428, 11, 57, 3.82),
    ("GPT-2", 382, 0.997, 2, 6, 3.00),
    ("Qwen2.5-1.5B", 384, 0.771, 3, 9, 2.63),
    ("ViT-Base 1k", 512, 0.590, 6, 25, 3.41),
    ("ViT-Base 21k", 512, 0.619, 5, 21, 3.08),
)
HEADER = ["source", "family", "operators", "resolved", "median L", "median U", "median U/L"]


def comparison_rows(summary: list[dict]) -> list[dict]:
    """The research page's rows, then this run's families at eps 0.25 (``family_summary`` rows)."""
    rows = [{"source": "research page (float64)", "family": fam, "operators": n, "resolved_share": share,
             "median_L": lo, "median_U": up, "median_U_over_L": ratio}
            for fam, n, share, lo, up, ratio in RESEARCH_PAGE]
    for s in summary:
        if _is_eps(s["eps"]):
            rows.append({"source": "this run (validated)", "family": s["family"], "operators": s["operators"],
                         "resolved_share": s["resolved_share"], "median_L": s["median_L"],
                         "median_U": s["median_U"], "median_U_over_L": s["median_U_over_L"]})
    return rows


def _is_eps(value) -> bool:
    try:
        return abs(float(value) - float(EPS)) < 1e-12
    except (TypeError, ValueError):
        return False


def research_section(page, summary: list[dict]) -> None:
    """A heading, a note and the comparison table (``Page.table``, its data embedded as JSON)."""
    from softrank.findings.report_page import fmt_num, fmt_share

    rows = comparison_rows(summary)
    page.add("<h2>Beside the research page (eps 0.25)</h2><p class=\"note\">The first rows quote the research "
             "page's float64 figures for its own panels (other checkpoints, not recomputed here); the last rows "
             "are this run's validated brackets at eps 0.25 on the embedded checkpoints.  Median U/L is the "
             "median over operators of U / max(L, 1).</p>")
    page.table("research", HEADER,
               [[r["source"], r["family"], r["operators"], fmt_share(r["resolved_share"]), fmt_num(r["median_L"]),
                 fmt_num(r["median_U"]), f"{r['median_U_over_L']:.2f}"] for r in rows], data=rows)
