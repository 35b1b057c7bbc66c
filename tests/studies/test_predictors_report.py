"""The predictor study's report: the wording rule, the tables, the figure and a self-contained,
well-formed report.html carrying the protocol's hash."""

import math
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")

from softrank.studies.predictors import report  # noqa: E402
from softrank.studies.predictors.evaluate import AGGREGATE, verdict  # noqa: E402

SHA = "0123456789abcdef" * 4


def _result(view, model, family, comparison, gain, lo, hi, target="U_p"):
    base = 0.1
    return {"view": view, "model": model, "target": target, "family": family, "comparison": comparison,
            "mae_base": base, "mae_aug": base * (1 - gain), "gain": gain, "gain_abs": base * gain,
            "lo": lo, "hi": hi, "abs_lo": base * lo, "abs_hi": base * hi, "verdict": verdict(lo, hi),
            "rows_in_view": 100, "dropped_target": 2, "dropped_features": 3, "rows": 95, "evaluated": 40,
            "sources": 4, "boot_valid": 50}


def evaluation():
    res = []
    for view in ("held-out", "leave-one-head-out"):
        for model in ("ridge", "trees"):
            for fam in ("MiniLM", "SmolLM2", AGGREGATE):
                res.append(_result(view, model, fam, "native over structural", 0.5, 0.3, 0.7))
                res.append(_result(view, model, fam, "native over calibrated", -0.0035, -0.0422, 0.0179))
                res.append(_result(view, model, fam, "intrinsic over calibrated", -0.2, -0.4, 0.05))
    return {"results": res, "costs": {"held-out": {"tasks": 4, "folds": 4, "fits": 84, "cpu_s": 12.5, "wall_s": 13.0}},
            "wall_s": 14.0, "jobs": 1, "n_boot": 50, "seed": 0}


def test_wording_says_what_the_interval_rules_out_and_what_it_does_not():
    w = report.wording(-0.04, 0.07)
    assert "rules out a gain above +0.070 and a loss beyond -0.040" in w and "does not rule out no effect." in w
    w = report.wording(-0.3, 0.2)
    assert "does not rule out no effect or a gain above +0.10 or a loss beyond -0.10" in w
    w = report.wording(0.05, 0.4)
    assert "rules out no effect, any loss and a gain above +0.400" in w and "a gain as small as +0.050, inside" in w
    w = report.wording(-0.5, -0.2)
    assert "rules out no effect, any gain and a loss beyond -0.500" in w and "a loss as small as -0.200." in w
    assert "rules out nothing" in report.wording(math.nan, math.nan)


def test_markdown_tables_per_view_model_and_target():
    md = report.markdown(evaluation(), SHA)
    assert SHA in md
    assert "| family | comparison | MAE base | MAE with block | relative gain [95% interval] | verdict |" in md
    assert "## held-out, ridge regression, target U / p" in md and "## leave-one-head-out, gradient-boosted trees" in md
    assert "| aggregate | native over calibrated | 0.10000 | 0.10035 | -0.0035 [-0.042, +0.018] | adds nothing detectable |" in md
    assert "| MiniLM | native over structural | 0.10000 | 0.05000 | +0.5000 [+0.300, +0.700] | helps |" in md
    assert "intrinsic over calibrated: inconclusive at this size. The interval [-0.400, +0.050]" in md
    assert "| MiniLM | native over calibrated | 100 | 2 | 3 | 95 | 40 |" in md  # the rows table
    # the research page's figures beside this study's
    assert "0.0279 [0.0254, 0.0300]" in md and "-0.0035 [-0.0422, +0.0179]" in md and "47.2% worse" in md
    assert "-0.00005" in md and "-0.000116" in md and "float64 figures on its own checkpoints" in md
    assert "baseline" in md and "same rows" in md and "Bootstrap: 50 resamples, seed 0" in md


class _Checker(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def test_write_gives_a_self_contained_well_formed_page(tmp_path):
    paths = report.write(evaluation(), tmp_path / "out", SHA)
    assert set(paths) == {"predictors.md", "report.html", "predictors-held-out-U_p.png",
                          "predictors-leave-one-head-out-U_p.png"}
    assert paths["predictors-held-out-U_p.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = paths["report.html"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and SHA in page[:2000]
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    imgs = [a for t, a in checker.tags if t == "img"]
    assert len(imgs) == 2 and all(a["src"].startswith("data:image/png;base64,") for a in imgs)
    assert sum(t == "table" for t, _ in checker.tags) >= 4
    assert "<th>relative gain [95% interval]</th>" in page and "<td>+0.5000 [+0.300, +0.700]</td>" in page
    assert "href=" not in page and 'src="http' not in page  # nothing outside the page
    assert "predictors-held-out-U_p.png" in paths["predictors.md"].read_text(encoding="utf-8")


def test_figure_draws_nothing_for_an_absent_view(tmp_path):
    assert not report.figure(evaluation(), "leave-one-source-out", "U_p", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    assert report.figure(evaluation(), "held-out", "U_p", tmp_path / "y.png") and (tmp_path / "y.png").stat().st_size > 1000
