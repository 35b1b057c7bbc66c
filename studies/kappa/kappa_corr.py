"""Statistics of ``softrank study kappa``: one row per (operator, eps) joining the size scores to
the validated rank bracket [L, U], and per (family, eps, score, target, subset) the Spearman
rank correlation (average ranks for ties) with a percentile bootstrap interval that resamples
whole sources (every operator of a drawn source_id enters together).

Targets: the validated lower end L, upper end U and midpoint (L + U) / 2.  Subsets: every row,
and only rows whose bracket is resolved (U <= 2L, or U - L <= 2, or U - L <= p/10).
"""

from __future__ import annotations

import math

import numpy as np

MAIN_SCORES = ("kappa(T_r*)", "theorem form", "theorem form, best r", "kappa_bal(T_r*)", "Gamma", "kappa(C)", "r*")
TARGETS = ("mid", "lower", "upper")
SUBSETS = ("all", "resolved")


def resolved(lower: int, upper: int, p: int) -> bool:
    return upper <= 2 * lower or upper - lower <= 2 or upper - lower <= p / 10


def theorem_form(entry: dict, eps: float) -> float | None:
    """log of (1 + kappa / (eps - tau)^2)^(r/2) from the validated upper ends of kappa and tau (the
    C_r factor left out); None unless tau(T_r) < eps is validated."""
    if not entry["tau_upper"] < eps or not math.isfinite(entry["kappa_upper"]):
        return None
    return entry["r"] / 2 * math.log1p(entry["kappa_upper"] / (eps - entry["tau_upper"]) ** 2)


def _mid(d: dict) -> float:
    return (d["kappa_lower"] + d["kappa_upper"]) / 2 if "kappa_lower" in d else (d["lower"] + d["upper"]) / 2


def scores_of(op: dict, eps: float) -> dict:
    """Every score of one operator at one tolerance (None where it does not exist)."""
    by_r = {e["r"]: e for e in op["ranks"]}
    r = op["r_star"][repr(float(eps))]
    e = by_r[r]
    forms = [f for f in (theorem_form(x, eps) for x in op["ranks"]) if f is not None]
    out = {"kappa(T_r*)": _mid(e), "theorem form": theorem_form(e, eps), "theorem form, best r": min(forms, default=None),
           "kappa_bal(T_r*)": e["kappa_bal"], "Gamma": op["gamma"], "kappa(C)": _mid(op["kappa_C"]), "r*": float(r)}
    for fr in op["fixed_ranks"]:
        out[f"kappa(T_{fr})"] = _mid(by_r[fr])
        out[f"kappa_bal(T_{fr})"] = by_r[fr]["kappa_bal"]
    return out


def study_rows(ops: list[dict], brackets: dict) -> list[dict]:
    """One row per (operator, eps with a validated bracket)."""
    rows = []
    for op in ops:
        for eps, (text, lo, up) in sorted(brackets.get(op["record_id"], {}).items()):
            if lo is None or up is None or repr(float(eps)) not in op["r_star"]:
                continue
            r = op["r_star"][repr(float(eps))]
            e = next(x for x in op["ranks"] if x["r"] == r)
            rows.append({"record_id": op["record_id"], "family": op["family"], "model": op.get("model"),
                         "source_id": op["source_id"],
                         "eps": text, "eps_value": eps, "lower": lo, "upper": up, "mid": (lo + up) / 2,
                         "resolved": resolved(lo, up, min(op["m"], op["N"])), "r_star": r,
                         "tau_star_lower": e["tau_lower"], "tau_star_upper": e["tau_upper"],
                         "kappa_star_lower": e["kappa_lower"], "kappa_star_upper": e["kappa_upper"],
                         "scores": scores_of(op, eps)})
    return rows


def spearman_boot(x, y, groups, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman's rho of (x, y) and a 95% percentile interval over ``n_boot`` resamples of whole
    groups (rows with a missing x or y are left out first)."""
    from scipy.stats import rankdata, spearmanr

    keep = [i for i in range(len(x)) if x[i] is not None and y[i] is not None and math.isfinite(x[i])]
    x, y = np.array([x[i] for i in keep], float), np.array([y[i] for i in keep], float)
    g = [groups[i] for i in keep]
    out = {"rho": math.nan, "lo": math.nan, "hi": math.nan, "n": len(x), "sources": len(set(g)), "boot_valid": 0}
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return out
    out["rho"] = float(spearmanr(x, y).statistic)
    idx = [np.array([i for i, v in enumerate(g) if v == s]) for s in sorted(set(g), key=str)]
    picks = np.random.default_rng(seed).integers(0, len(idx), (n_boot, len(idx)))
    lengths = np.array([len(i) for i in idx])[picks].sum(1)
    vals: list[float] = []
    for size in np.unique(lengths):  # resamples of one length are ranked together
        rows = np.stack([np.concatenate([idx[k] for k in row]) for row in picks[lengths == size]])
        rx, ry = rankdata(x[rows], axis=1), rankdata(y[rows], axis=1)
        rx, ry = rx - rx.mean(1, keepdims=True), ry - ry.mean(1, keepdims=True)
        den = np.sqrt((rx ** 2).sum(1) * (ry ** 2).sum(1))
        ok = den > 0
        vals.extend(((rx * ry).sum(1)[ok] / den[ok]).tolist())
    if vals:
        out.update(lo=float(np.percentile(vals, 2.5)), hi=float(np.percentile(vals, 97.5)), boot_valid=len(vals))
    return out


def correlation_table(rows: list[dict], n_boot: int = 2000, seed: int = 0, scores=None) -> list[dict]:
    """Per (family, eps, score, target, subset): rho, interval, n, sources."""
    table = []
    names = scores or sorted({k for r in rows for k in r["scores"]}, key=lambda k: (k not in MAIN_SCORES, k))
    for fam in sorted({r["family"] for r in rows}, key=str):
        for eps in sorted({r["eps_value"] for r in rows if r["family"] == fam}):
            part = [r for r in rows if r["family"] == fam and r["eps_value"] == eps]
            for subset in SUBSETS:
                sub = part if subset == "all" else [r for r in part if r["resolved"]]
                for name in names:
                    for target in TARGETS:
                        res = spearman_boot([r["scores"].get(name) for r in sub], [r[target] for r in sub],
                                            [r["source_id"] for r in sub], n_boot, seed)
                        table.append({"family": fam, "eps": part[0]["eps"], "eps_value": eps, "score": name,
                                      "target": target, "subset": subset, **res})
    return table


def _fmt(c: dict) -> str:
    if not math.isfinite(c["rho"]):
        return "n/a"
    return f"{c['rho']:+.3f} [{c['lo']:+.2f}, {c['hi']:+.2f}]" if math.isfinite(c["lo"]) else f"{c['rho']:+.3f}"


def markdown_table(table: list[dict], scores=MAIN_SCORES) -> list[str]:
    """Rows family / eps / score; columns: rho vs midpoint (all, resolved only), vs L, vs U (all)."""
    key = {(c["family"], c["eps_value"], c["score"], c["target"], c["subset"]): c for c in table}
    lines = ["| family | eps | score | rho vs mid [95% CI], all (n) | vs mid, resolved only (n) | vs L, all | vs U, all |",
             "|---|---|---|---|---|---|---|"]
    for fam, eps in sorted({(c["family"], c["eps_value"]) for c in table}, key=lambda t: (str(t[0]), t[1])):
        for s in scores:
            cells = [key.get((fam, eps, s, t, sub)) for t, sub in (("mid", "all"), ("mid", "resolved"),
                                                                   ("lower", "all"), ("upper", "all"))]
            if cells[0] is None:
                continue
            lines.append(f"| {fam} | {eps:g} | {s} | {_fmt(cells[0])} ({cells[0]['n']}) | {_fmt(cells[1])} "
                         f"({cells[1]['n']}) | {_fmt(cells[2])} | {_fmt(cells[3])} |")
    return lines


def scatter_figure(rows: list[dict], path, scores=("kappa(T_r*)", "theorem form", "kappa_bal(T_r*)", "Gamma")) -> None:
    """Score (log axis) against the validated midpoint, bars to [L, U]; one column per family,
    one colour per eps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fams = sorted({r["family"] for r in rows}, key=str)
    fig, axes = plt.subplots(len(scores), max(1, len(fams)), figsize=(5.2 * max(1, len(fams)), 3.4 * len(scores)),
                             squeeze=False)
    eps_vals = sorted({r["eps_value"] for r in rows})
    colours = dict(zip(eps_vals, plt.cm.viridis(np.linspace(0.1, 0.85, max(1, len(eps_vals))))))
    for col, fam in enumerate(fams):
        for row, s in enumerate(scores):
            ax = axes[row][col]
            for eps in eps_vals:
                pts = [r for r in rows if r["family"] == fam and r["eps_value"] == eps and r["scores"].get(s) is not None]
                if not pts:
                    continue
                x = np.array([r["scores"][s] for r in pts])
                y = np.array([r["mid"] for r in pts])
                err = np.array([[r["mid"] - r["lower"] for r in pts], [r["upper"] - r["mid"] for r in pts]])
                ax.errorbar(x, y, yerr=err, fmt="o", ms=3, lw=0.6, alpha=0.75, color=colours[eps], label=f"eps {eps:g}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(s + (" (log of the form)" if s.startswith("theorem") else ""))
            ax.set_ylabel("validated rank, midpoint [L, U]")
            models = sorted({str(r.get("model")) for r in rows if r["family"] == fam})
            ax.set_title(f"{fam} ({', '.join(models)}): {s}")
            if ax.get_legend_handles_labels()[0]:  # no points, no legend (matplotlib would warn)
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _median(vals) -> float:
    vals = [v for v in vals if v is not None and math.isfinite(v)]
    return float(np.median(vals)) if vals else math.nan


def summarise(ops: list[dict], chosen: list[dict], rows: list[dict], seconds_ops: float, seconds_total: float) -> dict:
    """Coverage, validation counts, gaps and times of a run."""
    good = [o for o in ops if "error" not in o]
    entries = [e for o in good for e in o["ranks"] if not e["is_C"]]
    full = [o["kappa_C"] for o in good]
    by_n: dict = {}
    for o in good:
        by_n.setdefault(o["N"], []).append(o["kappa_C"])
    return {
        "operators_selected": len(chosen), "operators_done": len(good),
        "operators_failed": [o["error"] if o.get("bad_input") else o["record_id"] + ": " + o["error"]
                             for o in ops if "error" in o],
        "operators_bad_input": sum(1 for o in ops if o.get("bad_input")),
        "families": {f: sum(o["family"] == f for o in good) for f in sorted({o["family"] for o in good}, key=str)},
        "rows": len(rows), "rows_resolved": sum(r["resolved"] for r in rows),
        "kappa_brackets": len(entries) + len(full),
        "kappa_lower_validated": sum(e["kappa_lower_validated"] for e in entries) + sum(k["lower_validated"] for k in full),
        "tau_checks": len(entries), "tau_proved": sum(e["tau_outcome"] == "proved" for e in entries),
        "kappa_T_median_rel_gap": _median(e["kappa_rel_gap"] for e in entries),
        "kappa_T_max_rel_gap": max((e["kappa_rel_gap"] for e in entries), default=math.nan),
        "kappa_C": {str(n): {"operators": len(v), "r": sorted({k["r"] for k in v}),
                             "median_rel_gap": _median(k["rel_gap"] for k in v),
                             "max_rel_gap": max(k["rel_gap"] for k in v),
                             "median_seconds": _median(k["seconds"] for k in v),
                             "max_seconds": max(k["seconds"] for k in v)} for n, v in sorted(by_n.items())},
        "kappa_C_lower_le_gamma_upper": sum(o["kappa_C"]["lower"] <= o["gamma_upper"] for o in good
                                            if o["gamma_upper"] is not None),
        "gamma_over_kappa_C_median": {f: _median(o["gamma"] / o["kappa_C"]["upper"] for o in good
                                                 if o["family"] == f and o["gamma"] is not None)
                                      for f in sorted({o["family"] for o in good}, key=str)},
        "median_seconds_per_operator": _median(o["seconds"] for o in good),
        "seconds_operators": seconds_ops, "seconds_total": seconds_total,
    }
