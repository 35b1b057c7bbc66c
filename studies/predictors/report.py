"""The predictor study's report: markdown tables, figures and a self-contained ``report.html``
(untrusted orchestration; the numbers come from ``evaluate.evaluate``).

- A table per view, model and target: family | comparison | MAE base | MAE with block | relative
  gain [95% interval] | verdict, each verdict followed by one sentence saying what its interval
  rules out and what it does not (``wording``), and a table of the rows each comparison used.
- A figure per view and target (``figure``): one panel per comparison, the relative gain of each
  model with its interval per family and for the aggregate, the +-0.10 band shaded.
- ``report.html``: the protocol's SHA-256 at the top, the research page's figures beside this
  study's, every table, the figures embedded as base64 PNG, the cost per view.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

from softrank.fastpath.store.files import write_text
from softrank.studies.predictors.evaluate import AGGREGATE, BAND, COMPARISONS, TARGETS, VIEWS

MODEL_NAMES = {"ridge": "ridge regression", "trees": "gradient-boosted trees"}
TARGET_NAMES = {"U_p": "U / p", "L_p": "L / p", "mid_p": "(L + U) / (2p), resolved brackets only"}
# The research page's float64 figures on its own checkpoints: (quantity, its figure, this study's
# view, comparison, field); quoted for side by side, never recomputed.
RESEARCH_PAGE = (
    ("native over the weak structural baseline: held-out error lowered by (cap units)",
     "0.0279 [0.0254, 0.0300]", "held-out", "native over structural", "gain_abs"),
    ("native over the calibrated baseline: aggregate gain (cap units)",
     "-0.00005", "held-out", "native over calibrated", "gain_abs"),
    ("native over the calibrated baseline: relative gain",
     "-0.0035 [-0.0422, +0.0179]", "held-out", "native over calibrated", "gain"),
    ("intrinsic over the calibrated baseline: gain (cap units)",
     "-0.000116", "held-out", "intrinsic over calibrated", "gain_abs"),
    ("intrinsic over the calibrated baseline, leave-one-head-out: relative gain",
     "-0.472 (47.2% worse)", "leave-one-head-out", "intrinsic over calibrated", "gain"),
)


def _g(v: float, digits: int = 3) -> str:
    return f"{v:+.{digits}f}" if math.isfinite(v) else "n/a"


def wording(lo: float, hi: float) -> str:
    """One sentence: what the 95% interval [lo, hi] of a relative gain rules out and what it does not."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "There is no interval (fewer than two sources, or no valid resample): it rules out nothing."
    head = f"The interval [{_g(lo)}, {_g(hi)}]"
    if lo <= 0 <= hi:
        missed = ["no effect"]
        if hi > BAND:
            missed.append(f"a gain above +{BAND:.2f}")
        if lo < -BAND:
            missed.append(f"a loss beyond -{BAND:.2f}")
        return (f"{head} rules out a gain above {_g(hi)} and a loss beyond {_g(lo)}; "
                f"it does not rule out {' or '.join(missed)}.")
    if lo > 0:
        small = f"a gain as small as {_g(lo)}" + (f", inside the +-{BAND:.2f} band" if lo <= BAND else "")
        return f"{head} rules out no effect, any loss and a gain above {_g(hi)}; it does not rule out {small}."
    small = f"a loss as small as {_g(hi)}" + (f", inside the +-{BAND:.2f} band" if hi >= -BAND else "")
    return f"{head} rules out no effect, any gain and a loss beyond {_g(lo)}; it does not rule out {small}."


def _order(results: list[dict]):
    fams = sorted({r["family"] for r in results if r["family"] != AGGREGATE}, key=str) + [AGGREGATE]
    comps = [c[0] for c in COMPARISONS] + sorted({r["comparison"] for r in results} - {c[0] for c in COMPARISONS})
    return fams, comps


def _pick(results: list[dict], **kw) -> list[dict]:
    return [r for r in results if all(r.get(k) == v for k, v in kw.items())]


def _cells(r: dict) -> list[str]:
    return [str(r["family"]), r["comparison"], f"{r['mae_base']:.5f}", f"{r['mae_aug']:.5f}",
            f"{_g(r['gain'], 4)} [{_g(r['lo'])}, {_g(r['hi'])}]", r["verdict"]]


COLUMNS = ("family", "comparison", "MAE base", "MAE with block", "relative gain [95% interval]", "verdict")
COUNT_COLUMNS = ("family", "comparison", "rows in the view", "without the target", "without a column",
                 "rows fitted", "rows evaluated")


def sections(evaluation: dict):
    """(view, model, target, table rows, sentences, count rows) in report order."""
    res = evaluation["results"]
    fams, comps = _order(res)
    views = [v for v in VIEWS if _pick(res, view=v)]
    models = [m for m in MODEL_NAMES if _pick(res, model=m)] + sorted({r["model"] for r in res} - set(MODEL_NAMES))
    targets = [t for t in TARGETS if _pick(res, target=t)]
    for view in views:
        for model in models:
            for target in targets:
                rows, words, counts = [], [], []
                for fam in fams:
                    for comp in comps:
                        for r in _pick(res, view=view, model=model, target=target, family=fam, comparison=comp):
                            rows.append(_cells(r))
                            words.append(f"{fam}, {comp}: {r['verdict']}. {wording(r['lo'], r['hi'])}")
                            if fam != AGGREGATE:
                                counts.append([str(fam), comp] + [str(r[k]) for k in (
                                    "rows_in_view", "dropped_target", "dropped_features", "rows", "evaluated")])
                if rows:
                    yield view, model, target, rows, words, counts


def _md_table(columns, rows) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + ["| " + " | ".join(r) + " |" for r in rows]


NOTES = (
    "Every comparison fits its baseline and its augmented model on the same rows: those whose target and every "
    "column of the augmented set are finite. A comparison with the intrinsic block therefore runs, baseline "
    "included, only on the rows where the intrinsic columns exist (the protocol's fixed subset).",
    "Predictions are made once, out of sample (each training part searches its own grid by source-grouped "
    "cross-validation); the bootstrap then resamples the evaluation rows by source cluster (every row of a drawn "
    "source enters), without refitting. The aggregate is the mean of the family MAEs; its resamples draw from the "
    "union of the families' sources.",
    f"Decision rule: interval inside [-{BAND:.2f}, +{BAND:.2f}]: adds nothing detectable; above +{BAND:.2f}: helps; "
    f"below -{BAND:.2f}: hurts; otherwise inconclusive at this size.",
)


def settings(evaluation: dict) -> str:
    """One line: the views, the bootstrap's size and seed, the workers."""
    return (f"Views: held-out (fit on the main panel, evaluated on the held-out panel), leave-one-source-out and "
            f"leave-one-head-out (head = (layer, head)) within the main panel; every fit within one family. "
            f"Bootstrap: {evaluation.get('n_boot', '?')} resamples, seed {evaluation.get('seed', '?')}; "
            f"{evaluation.get('jobs', 1)} worker process(es).")


def _ours(evaluation: dict, view: str, comp: str, field: str) -> list[tuple[str, str, str]]:
    out = []
    for r in _pick(evaluation["results"], view=view, comparison=comp, family=AGGREGATE):
        lo, hi = (r["abs_lo"], r["abs_hi"]) if field == "gain_abs" else (r["lo"], r["hi"])
        d = 6 if field == "gain_abs" else 4
        out.append((MODEL_NAMES.get(r["model"], r["model"]), r["target"],
                    f"{_g(r[field], d)} [{_g(lo, d)}, {_g(hi, d)}] ({view})"))
    return out


def side_by_side(evaluation: dict) -> list[list[str]]:
    """Rows: quantity | research page | model | target | this study (aggregate, 95% interval)."""
    rows = []
    for quantity, page, view, comp, field in RESEARCH_PAGE:
        for model, target, ours in _ours(evaluation, view, comp, field) or [("-", "-", "not evaluated")]:
            rows.append([quantity, page, model, target, ours])
    return rows


SIDE_COLUMNS = ("quantity", "research page (float64, its own checkpoints)", "model", "target",
                "this study (aggregate [95% interval], view)")


def markdown(evaluation: dict, protocol_sha256: str, figures: dict | None = None, extra=(), banner: str = "") -> str:
    """The whole report in markdown (``figures``: (view, target) -> PNG file name to link;
    ``extra``: further sections, dicts with ``title``, ``text`` (paragraphs), ``columns``, ``rows``;
    ``banner``: a line shown first, such as "not the run of record")."""
    lines = ["# The predictor study", ""] + ([f"> {banner}", ""] if banner else [])
    lines += [f"Protocol SHA-256: `{protocol_sha256}`", ""]
    lines += [f"- {n}" for n in NOTES + (settings(evaluation),)] + [""]
    lines += ["## The research page's figures beside this study's", "",
              "The research page's numbers are its float64 figures on its own checkpoints, quoted as given.", ""]
    lines += _md_table(SIDE_COLUMNS, side_by_side(evaluation)) + [""]
    for view, model, target, rows, words, counts in sections(evaluation):
        lines += [f"## {view}, {MODEL_NAMES.get(model, model)}, target {TARGET_NAMES.get(target, target)}", ""]
        lines += _md_table(COLUMNS, rows) + [""] + [f"- {w}" for w in words] + [""]
        lines += ["Rows:", ""] + _md_table(COUNT_COLUMNS, counts) + [""]
        if figures and (view, target) in figures:
            lines += [f"![{view}, {target}]({figures[(view, target)]})", ""]
    for sec in extra:
        lines += [f"## {sec['title']}", ""] + [t + "\n" for t in sec["text"]] + _md_table(sec["columns"], sec["rows"])
        lines += [""]
    lines += ["## Cost", ""] + _md_table(*cost_table(evaluation)) + [""]
    return "\n".join(lines)


def cost_table(evaluation: dict):
    rows = [[v, str(c["tasks"]), str(c["folds"]), str(c["fits"]), f"{c['cpu_s']:.1f}", f"{c['wall_s']:.1f}"]
            for v, c in sorted(evaluation.get("costs", {}).items(), key=lambda kv: VIEWS.index(kv[0]))]
    rows.append(["all (wall, jobs = %d)" % evaluation.get("jobs", 1), "", "", "", "", f"{evaluation.get('wall_s', 0):.1f}"])
    return ("view", "tasks", "folds", "model fits", "CPU s (sum over tasks)", "task wall s (sum)"), rows


def figure(evaluation: dict, view: str, target: str, path) -> bool:
    """The relative gain with its interval per family and the aggregate, one marker per model,
    one panel per comparison, the +-0.10 band shaded; False when there is nothing to draw."""
    res = _pick(evaluation["results"], view=view, target=target)
    if not res:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams, comps = _order(res)
    comps = [c for c in comps if _pick(res, comparison=c)]
    models = sorted({r["model"] for r in res}, key=lambda m: (m not in MODEL_NAMES, m))
    fig, axes = plt.subplots(1, len(comps), figsize=(3.6 * len(comps), 3.4), squeeze=False, sharey=True)
    for ax, comp in zip(axes[0], comps):
        ax.axhspan(-BAND, BAND, color="0.88", zorder=0)
        ax.axhline(0, color="0.5", lw=0.8)
        for j, model in enumerate(models):
            xs, ys, err = [], [], [[], []]
            for i, fam in enumerate(fams):
                for r in _pick(res, comparison=comp, family=fam, model=model):
                    if math.isfinite(r["gain"]):
                        xs.append(i + (j - (len(models) - 1) / 2) * 0.22)
                        ys.append(r["gain"])
                        ok = math.isfinite(r["lo"]) and math.isfinite(r["hi"])
                        err[0].append(r["gain"] - r["lo"] if ok else 0.0)
                        err[1].append(r["hi"] - r["gain"] if ok else 0.0)
            ax.errorbar(xs, ys, yerr=[[max(e, 0.0) for e in err[0]], [max(e, 0.0) for e in err[1]]], fmt="os"[j % 2],
                        capsize=3, label=MODEL_NAMES.get(model, model))
        ax.set_xticks(range(len(fams)), [str(f) for f in fams], rotation=20, fontsize=7)
        ax.set_title(comp, fontsize=9)
    axes[0][0].set_ylabel("relative gain [95% interval]")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{view}, target {TARGET_NAMES.get(target, target)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _html_table(columns, rows) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_page(evaluation: dict, protocol_sha256: str, pngs: dict, extra=(), banner: str = "") -> str:
    """A self-contained page (``pngs``: (view, target) -> PNG bytes, embedded as base64)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>The predictor study</title>',
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
             "margin:0.5em 0}td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px}</style></head><body>",
             "<h1>The predictor study</h1>", *([f"<p><strong>{e(banner)}</strong></p>"] if banner else []),
             f"<p>Protocol SHA-256: <code>{e(protocol_sha256)}</code></p>",
             "<ul>" + "".join(f"<li>{e(n)}</li>" for n in NOTES + (settings(evaluation),)) + "</ul>",
             "<h2>The research page's figures beside this study's</h2>",
             "<p>The research page's numbers are its float64 figures on its own checkpoints, quoted as given.</p>",
             _html_table(SIDE_COLUMNS, side_by_side(evaluation))]
    shown = set()
    for view, model, target, rows, words, counts in sections(evaluation):
        parts.append(f"<h2>{e(view)}, {e(MODEL_NAMES.get(model, model))}, target {e(TARGET_NAMES.get(target, target))}</h2>")
        parts.append(_html_table(COLUMNS, rows))
        parts.append("<ul>" + "".join(f"<li>{e(w)}</li>" for w in words) + "</ul>")
        parts.append("<details><summary>Rows</summary>" + _html_table(COUNT_COLUMNS, counts) + "</details>")
        if (view, target) in pngs and (view, target) not in shown:
            shown.add((view, target))
            data = base64.b64encode(pngs[(view, target)]).decode("ascii")
            parts.append(f'<p><img alt="{e(view)}, {e(target)}" src="data:image/png;base64,{data}"></p>')
    for sec in extra:
        parts += [f"<h2>{e(sec['title'])}</h2>", *(f"<p>{e(t)}</p>" for t in sec["text"]),
                  _html_table(sec["columns"], sec["rows"])]
    parts += ["<h2>Cost</h2>", _html_table(*cost_table(evaluation)), "</body></html>"]
    return "\n".join(parts)


def write(evaluation: dict, out, protocol_sha256: str, extra=(), banner: str = "") -> dict:
    """Write ``predictors.md``, one ``predictors-<view>-<target>.png`` per view and target and
    ``report.html`` into ``out``; the paths written by name (``extra``, ``banner``: as ``markdown``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures, pngs, paths = {}, {}, {}
    for view in VIEWS:
        for target in TARGETS:
            name = f"predictors-{view}-{target}.png"
            if figure(evaluation, view, target, out / name):
                figures[(view, target)] = name
                pngs[(view, target)] = (out / name).read_bytes()
                paths[name] = out / name
    write_text(out / "predictors.md", markdown(evaluation, protocol_sha256, figures, extra, banner))
    write_text(out / "report.html", html_page(evaluation, protocol_sha256, pngs, extra, banner))
    paths["predictors.md"], paths["report.html"] = out / "predictors.md", out / "report.html"
    return paths
