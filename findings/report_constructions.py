"""The report's construction section: the held-out construction benchmark's ``heldout.json``
(``softrank study constructions --panel full``; ``softrank.studies.heldout.heldout``) as one
figure of two panels and three tables, beside the research page's float64 figures for its own held-out panel.

Per family: the best construction's rank / validated lower end and each construction's, with 95%
source-bootstrap intervals; each construction's rank relative to alternating l1's; the failed
attempts by what the validated bracket says of them (impossible, open, missed).  The numbers are
read from ``heldout.json``, never recomputed; the research page's are quoted.
"""

from __future__ import annotations

import math
from pathlib import Path

from softrank.fastpath.store.files import load_json_text, read_text_file
from softrank.errors import InputError

NAMES = {"best": "best of six", "tsvd": "truncated SVD", "rwsvd": "row-reweighted SVD",
         "altl1": "alternating l1", "cpqr": "column pivoted QR", "rpqr": "row pivoted QR",
         "reprows": "representative rows"}
# the six upper constructions of the benchmark (the producer's ALL_CONSTRUCTIONS), in its order
CONSTRUCTIONS = tuple(c for c in NAMES if c != "best")
CLASSES = ("impossible", "open", "missed")
CLASS_TEXT = {"impossible": "below L: no matrix of that rank is within eps",
              "open": "between L and U: undecided", "missed": "at or above U: a proved witness of that rank exists"}
# The research page's held-out benchmark (float64, eps 0.25), quoted: best construction / lower
# certificate with 95% intervals; each construction's rank / alternating l1's; failed attempts.
RESEARCH_BEST = (("BERT-base", 3.73, 3.48, 3.89), ("GPT-2", 2.58, 2.50, 3.00),
                 ("Qwen2.5-1.5B", 2.58, 2.42, 2.78), ("ViT-Base 1k", 3.47, 3.00, 3.67))
RESEARCH_RELATIVE = {"altl1": 1.00, "rwsvd": 1.49, "tsvd": 1.62, "cpqr": 1.80, "rpqr": 2.09, "reprows": 6.45}
RESEARCH_ATTEMPTS = (435_436, {"impossible": 0.211, "open": 0.334, "missed": 0.455})


def _stat(value, where: str) -> dict:
    if (not isinstance(value, dict) or not isinstance(value.get("median"), (int, float))
            or not isinstance(value.get("ci95"), list) or len(value["ci95"]) != 2
            or not all(isinstance(x, (int, float)) and math.isfinite(x) for x in [value["median"], *value["ci95"]])):
        raise InputError(where, "median/ci95", "expected {\"median\": number, \"ci95\": [low, high]}")
    return value


def load_heldout(path) -> dict:
    """``heldout.json`` checked for what the section reads (one-line InputError naming the field)."""
    path = Path(path)
    data = load_json_text(read_text_file(path, "heldout"), path, "heldout")  # regular files only
    fams = data.get("families") if isinstance(data, dict) else None
    if not isinstance(fams, dict) or not fams:
        raise InputError(str(path), "families", "expected an object of families")
    for fam, row in fams.items():
        where = f"{path}: families.{fam}"
        if not isinstance(row, dict) or not isinstance(row.get("operators"), int):
            raise InputError(where, "operators", "expected an integer")
        for c in ("best", *CONSTRUCTIONS):
            _stat(row.get(c), f"{where}.{c}")
        rel = row.get("relative_to_altl1")
        failed = row.get("failed_attempts")
        if not isinstance(failed, dict):
            raise InputError(where, "failed_attempts", "missing (a benchmark of an older SoftRank)")
        if rel is not None:  # absent when alternating l1 found no witness in the family
            if not isinstance(rel, dict) or not isinstance(row.get("operators_with_altl1"), int):
                raise InputError(where, "relative_to_altl1", "expected an object and operators_with_altl1")
            for c in CONSTRUCTIONS:
                _stat(rel.get(c), f"{where}.relative_to_altl1.{c}")
        for c in (*CONSTRUCTIONS, "all"):
            counts = failed.get(c)
            if not isinstance(counts, dict) or not all(isinstance(counts.get(k), int) and counts[k] >= 0
                                                       for k in CLASSES):
                raise InputError(where, f"failed_attempts.{c}", "expected non-negative integer counts")
    return data


def figure_data(heldout: dict) -> dict:
    """What the figure's two panels draw: per family the medians and intervals, and the attempt shares."""
    fams = heldout["families"]
    return {"families": {fam: {"operators": row["operators"],
                               "rank_over_L": {c: row[c] for c in ("best", *CONSTRUCTIONS)},
                               "relative_to_altl1": row.get("relative_to_altl1"),
                               "operators_with_altl1": row.get("operators_with_altl1"),
                               "failed_attempts": row["failed_attempts"]["all"]} for fam, row in fams.items()},
            "research_page": {"best_over_L": [list(r) for r in RESEARCH_BEST], "relative_to_altl1": RESEARCH_RELATIVE,
                              "failed_attempts": RESEARCH_ATTEMPTS[0], "failed_shares": RESEARCH_ATTEMPTS[1]}}


def construction_figure(data: dict) -> bytes:
    """Left: per family, rank / validated L for the best construction and each one (median, 95%
    interval). Right: per family, the failed attempts by class (shares), the research page's beside."""
    from softrank.findings.report_figures import _plt, _png

    plt = _plt()
    fams = list(data["families"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [2, 1]})
    keys = ("best", *CONSTRUCTIONS)
    width = 0.8 / max(len(fams), 1)
    for j, fam in enumerate(fams):
        stats = data["families"][fam]["rank_over_L"]
        xs = [i + (j - (len(fams) - 1) / 2) * width for i in range(len(keys))]
        med = [stats[c]["median"] for c in keys]
        err = [[m - stats[c]["ci95"][0] for m, c in zip(med, keys)], [stats[c]["ci95"][1] - m for m, c in zip(med, keys)]]
        left.bar(xs, med, width=width, yerr=err, capsize=3, label=f"{fam} ({data['families'][fam]['operators']})")
    left.axhline(1, color="black", linewidth=1, linestyle="--")
    left.set_xticks(range(len(keys)), [NAMES[c] for c in keys], rotation=25, ha="right", fontsize=8)
    left.set_ylabel("rank / validated lower end (median, 95% interval)")
    left.set_title("held-out operators, eps = 0.25", fontsize=10)
    left.legend(fontsize=8)
    colors = {"impossible": "#1971c2", "open": "#f08c00", "missed": "#c92a2a"}
    bars = [(fam, data["families"][fam]["failed_attempts"]) for fam in fams]
    bars.append(("research page\n(float64)", dict(data["research_page"]["failed_shares"])))
    for i, (label, counts) in enumerate(bars):
        total = sum(counts.values()) or 1
        start = 0.0
        for k in CLASSES:
            share = counts[k] / total
            right.barh(i, share, left=start, color=colors[k], label=CLASS_TEXT[k] if i == 0 else None)
            start += share
    right.set_yticks(range(len(bars)), [label for label, _ in bars], fontsize=8)
    right.set_xlim(0, 1)
    right.set_xlabel("share of failed attempts")
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    return _png(fig)


def constructions_section(page, heldout: dict, source: str) -> None:
    """The figure and the tables, with a note naming ``source`` (the heldout.json read)."""
    from softrank.findings.report_page import _e

    data = figure_data(heldout)
    fams = heldout["families"]
    page.add("<h2>Held-out construction benchmark (eps 0.25)</h2><p class=\"note\">From "
             f"{_e(source)}: the panel's heads on {len(heldout.get('sources') or [])} sources disjoint from the main "
             "panel's, every construction searched for its own least rank, the validated replay's lower end L. "
             "Intervals resample the sources (95%, percentile bootstrap).  The research page's figures are its "
             "float64 ones for other checkpoints, quoted.</p>")
    page.figure("constructions", construction_figure(data), data,
                "Left: rank / validated L per construction and family. Right: where the failed attempts fall")
    rows = [[fam, row["operators"], *(f"{row[c]['median']:.2f} [{row[c]['ci95'][0]:.2f}, {row[c]['ci95'][1]:.2f}]"
                                      for c in ("best", *CONSTRUCTIONS))] for fam, row in fams.items()]
    rows += [[f"{fam} (research page)", "", f"{m:.2f} [{lo:.2f}, {hi:.2f}]", *[""] * len(CONSTRUCTIONS)]
             for fam, m, lo, hi in RESEARCH_BEST]
    page.table("constructions", ["family", "operators", *(NAMES[c] for c in ("best", *CONSTRUCTIONS))], rows)
    rel = [[fam, row.get("operators_with_altl1"),
            *(f"{row['relative_to_altl1'][c]['median']:.2f} [{row['relative_to_altl1'][c]['ci95'][0]:.2f}, "
              f"{row['relative_to_altl1'][c]['ci95'][1]:.2f}]" if row.get("relative_to_altl1") else "-"
              for c in CONSTRUCTIONS)] for fam, row in fams.items()]
    rel.append(["research page", "", *(f"{RESEARCH_RELATIVE[c]:.2f}" for c in CONSTRUCTIONS)])
    page.add("<p class=\"note\">Rank relative to alternating l1's: median over the operators where alternating "
             "l1 found a witness within its rank cap.</p>")
    page.table("relative", ["rank / alternating l1's", "operators", *(NAMES[c] for c in CONSTRUCTIONS)], rel)
    att = []
    for fam, row in fams.items():
        counts = row["failed_attempts"]["all"]
        total = sum(counts.values())
        att.append([fam, total, *(f"{counts[k]:,} ({100 * counts[k] / max(total, 1):.1f}%)" for k in CLASSES)])
    total, shares = RESEARCH_ATTEMPTS
    att.append(["research page", total, *(f"{100 * shares[k]:.1f}%" for k in CLASSES)])
    page.table("attempts", ["failed attempts", "total", *(CLASS_TEXT[k] for k in CLASSES)], att)
