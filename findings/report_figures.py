"""The numbers and figures of ``softrank report``, computed from the rows of the replay tables
(``replay.parquet``, ``verdicts.parquet``) and nothing else.

Every ``*_data`` function returns plain data (what a figure draws or a table shows); every
``*_figure`` function draws such data with matplotlib (Agg backend) and returns PNG bytes.  The
page embeds each figure's data beside it, so a reader (or a test) can check one against the other.

Conventions: the validated bracket of a row is ``L = validated_lower`` and ``U = validated_upper``;
a row without a proved witness has ``U = min(m, N)`` (the full rank, always an upper end).  A row
is *resolved* by one criterion everywhere (figures, tables, the layer x head view): that of the
README's results table and of ``softrank run``'s summary (``resolved``, the producer's criterion,
``softrank.fastpath.bracket.matrix.resolved``, restated: a proved witness and U <= 2L, or U - L <= 2,
or U - L <= min(m, N)/10), applied to the validated ends; *closed* when ``L = U``; ``U/L`` divides by ``max(L, 1)``.  The witness margin is
``eps - certified bound`` of a proved witness.
"""

from __future__ import annotations

import io
import math
import statistics
from collections import Counter, defaultdict
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

RESOLVED, UNRESOLVED, NO_WITNESS = "#2f9e44", "#f08c00", "#c92a2a"
VERDICT_SHARES = ("feasible", "impossible")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def ok_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok"]


def eps_order(rows: list[dict]) -> list[str]:
    """Distinct eps texts, by value."""
    seen = {r.get("eps"): r.get("eps_value") for r in rows if r.get("eps") is not None}
    return sorted(seen, key=lambda e: (seen[e] is None, seen[e] or 0.0, e))


def families(rows: list[dict]) -> list[str]:
    return sorted({r.get("family") or "" for r in rows})


def full_rank(r: dict) -> int:
    return min(r["m"], r["N"])


def upper_end(r: dict) -> int:
    return r["validated_upper"] if r.get("validated_upper") is not None else full_rank(r)


def lower_end(r: dict) -> int:
    return r.get("validated_lower") or 0


def resolved(lower: int, upper: int | None, p: int) -> bool:
    """The criterion of the results table in README.md: U <= 2L, or U - L <= 2, or U - L <= p/10
    (p = min(m, N)); False without an upper end."""
    return upper is not None and (upper <= 2 * lower or upper - lower <= 2 or (upper - lower) * 10 <= p)


def is_resolved(r: dict) -> bool:
    """The one criterion of the page: the README results table's (and ``softrank run``'s) on the
    validated ends; False without a proved witness."""
    return resolved(lower_end(r), r.get("validated_upper"), full_rank(r))


def status(r: dict) -> str:
    """A row's status on the page: ``resolved``, ``unresolved`` (not resolved), ``no_witness``
    (no proved witness), or the table's ``malformed`` / ``contradiction``."""
    if r.get("status") != "ok":
        return str(r.get("status"))
    if r.get("validated_upper") is None:
        return "no_witness"
    return "resolved" if is_resolved(r) else "unresolved"


def _median(values: list) -> float | None:
    return float(statistics.median(values)) if values else None


def _label(text, limit: int = 60) -> str:
    """A family name as a figure label: at most ``limit`` characters (text layout of a 100 kB name
    took over a minute; the HTML tables keep the whole name)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bracket_data(rows: list[dict], family: str) -> dict:
    """Per eps, every operator of FAMILY with its validated bracket, sorted by upper end."""
    panels = []
    for eps in eps_order(rows):
        sel = [r for r in ok_rows(rows) if (r.get("family") or "") == family and r.get("eps") == eps]
        ops = [{"record_id": r["record_id"], "lower": lower_end(r), "upper": upper_end(r),
                "full_rank": full_rank(r), "resolved": is_resolved(r),
                "witness_proved": r.get("validated_upper") is not None} for r in sel]
        ops.sort(key=lambda o: (o["upper"], o["lower"], o["record_id"]))
        if ops:
            panels.append({"eps": eps, "operators": ops})
    return {"family": family, "panels": panels}


def family_summary(rows: list[dict]) -> list[dict]:
    """Per family (and attention kind, ``softrank.findings.kinds``) and eps: operators, median L,
    median U, median U/L, resolved share, closed share; ``support``: "causal" for native decoder
    self-attention, else "full" (``softrank.findings.kinds.support_kind``)."""
    from softrank.findings.kinds import by_kind, support_kind

    rows = by_kind(rows)[0]
    table = []
    for family in families(ok_rows(rows)):
        for eps in eps_order(rows):
            sel = [r for r in ok_rows(rows) if (r.get("family") or "") == family and r.get("eps") == eps]
            if not sel:
                continue
            lows, ups = [lower_end(r) for r in sel], [upper_end(r) for r in sel]
            table.append({"family": family, "support": support_kind(sel[0].get("attention")), "eps": eps,
                          "operators": len(sel), "median_L": _median(lows),
                          "median_U": _median(ups), "median_U_over_L": _median([u / max(lo, 1) for lo, u in zip(lows, ups)]),
                          "resolved": sum(map(is_resolved, sel)),
                          "resolved_share": sum(map(is_resolved, sel)) / len(sel),
                          "closed_share": sum(lo == u for lo, u in zip(lows, ups)) / len(sel)})
    return table


def head_data(rows: list[dict]) -> list[dict]:
    """Per (family, eps, layer, head) of the replayed rows that have a layer and a head: operators,
    resolved count and share, median L, median U, median U/L."""
    groups = defaultdict(list)
    for r in ok_rows(rows):
        if r.get("layer") is not None and r.get("head") is not None:
            groups[(r.get("family") or "", r.get("eps"), r["layer"], r["head"])].append(r)
    order = {e: i for i, e in enumerate(eps_order(rows))}
    out = []
    for (fam, eps, layer, head), sel in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 0),
                                                                                kv[0][2], kv[0][3])):
        lows, ups = [lower_end(r) for r in sel], [upper_end(r) for r in sel]
        done = sum(map(is_resolved, sel))
        out.append({"family": fam, "eps": eps, "layer": layer, "head": head, "operators": len(sel),
                    "resolved": done, "resolved_share": done / len(sel), "median_L": _median(lows),
                    "median_U": _median(ups),
                    "median_U_over_L": _median([u / max(lo, 1) for lo, u in zip(lows, ups)])})
    return out


def record_rows(rows: list[dict]) -> list[dict]:
    """One entry per row of the replay table, in its order: record, model, layer, head, source
    (``source_id``), block (``block_width``), eps, L, U (validated; U is the full rank without a
    proved witness) and ``status``."""
    from softrank.fastpath.capture.labels import model_label

    out = []
    for r in rows:
        ok = r.get("status") == "ok"
        model = r.get("model")  # the model's name (a checkpoint folder's, not the path as typed)
        out.append({"record_id": r["record_id"], "model": model_label(model) if isinstance(model, str) and model
                    else model, "layer": r.get("layer"),
                    "head": r.get("head"), "source": r.get("source_id"), "block": r.get("block_width"),
                    "eps": r.get("eps"), "L": lower_end(r) if ok else None,
                    "U": upper_end(r) if ok and r.get("m") and r.get("N") else None, "status": status(r)})
    return out


def bracket_figure(data: dict) -> bytes:
    """One panel per eps: a vertical segment from L to U per operator (log scale), sorted by U,
    coloured when resolved; the full-rank line min(m, N); one legend below the panels (stacked,
    one per row, beyond ``MANY`` operators: ``_layout``).  Every
    tick is an integer (operators on x; ranks 1, 2, 5, 10, ... on y)."""
    plt = _plt()
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    panels = data["panels"]
    nrows, ncols, size, dot = _layout(panels)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, sharey=True, squeeze=False)
    axes = [list(axes.flat)]
    legend = {}
    for ax, panel in zip(axes[0], panels):
        ops = panel["operators"]
        width = max(0.3, min(3.0, 500 / max(len(ops), 1)))
        for key, color, label, style in (("resolved", RESOLVED, "resolved (U <= 2L, U - L <= 2 or <= min(m, N)/10)",
                                           "solid"),
                                          ("unresolved", UNRESOLVED, "not resolved", "solid"),
                                          ("no_witness", NO_WITNESS, "no proved witness (U = full rank)", "dashed")):
            pick = [i for i, o in enumerate(ops) if _kind(o) == key]
            if pick:
                legend[label] = ax.vlines(pick, [max(ops[i]["lower"], 0.8) for i in pick],
                                          [ops[i]["upper"] for i in pick], colors=color, linewidth=width,
                                          linestyles=style)
                closed = [i for i in pick if ops[i]["lower"] == ops[i]["upper"]]
                ax.scatter(closed, [ops[i]["upper"] for i in closed], s=dot, color=color, marker="o", zorder=3)
        (legend["full rank min(m, N)"],) = ax.step(range(len(ops)), [o["full_rank"] for o in ops], where="mid",
                                                   color="black", linestyle="--", linewidth=1)
        legend["closed exactly (L = U): a dot"] = ax.scatter([], [], s=10, color="gray", marker="o")
        ax.set_yscale("log")
        ax.set_ylim(0.7, 1.6 * max(o["full_rank"] for o in ops))
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}" if v >= 1 else ""))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        done = sum(o["resolved"] for o in ops)
        ax.set_title(f"{_label(data['family'])}, eps = {panel['eps']}: {done}/{len(ops)} resolved", fontsize=10)
        if nrows == 1 or ax is axes[0][-1]:
            ax.set_xlabel(f"operators sorted by upper end ({len(ops)})")
        ax.grid(True, which="major", axis="y", alpha=0.3)
    fig.subplots_adjust(hspace=0.3)
    for ax in axes[0][: 1 if nrows == 1 else nrows]:
        ax.set_ylabel("rank: validated lower to upper end")
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend), fontsize=8,
               bbox_to_anchor=(0.5, -0.06 if nrows == 1 else 0.03), frameon=False)
    return _png(fig)


MANY = 200  # beyond this many operators in a panel, the panels are stacked, each the page's width


def _layout(panels: list[dict]) -> tuple[int, int, tuple[float, float], float]:
    """Rows, columns, figure size (inches) and dot size: panels side by side, or, with hundreds of
    operators (one segment each, sorted by U), stacked one per row, 12 inches wide, smaller dots."""
    most = max((len(p["operators"]) for p in panels), default=0)
    if most <= MANY:
        return 1, len(panels), (4.6 * len(panels) + 0.6, 4.4), 10
    return len(panels), 1, (12.0, 3.6 * len(panels)), 3


def _kind(op: dict) -> str:
    if not op["witness_proved"]:
        return "no_witness"
    return "resolved" if op["resolved"] else "unresolved"


def _margin(r: dict) -> float | None:
    if r.get("upper_outcome") != "proved" or not r.get("upper_bound"):
        return None
    try:
        eps = Tolerance.from_table(r.get("eps") or "").value  # the table file's eps cell
        bound = Fraction(Decimal(r["upper_bound"]))
    except (InputError, InvalidOperation, ValueError):
        return None
    return float(eps - bound)


def distribution_data(rows: list[dict]) -> dict:
    """Per family: every chi_upper, and the margin eps - bound of every proved witness."""
    chi, margin = defaultdict(list), defaultdict(list)
    seen = set()
    for r in ok_rows(rows):
        fam = r.get("family") or ""
        if r.get("chi_upper") is not None and r["record_id"] not in seen:  # chi is per record, not per eps
            seen.add(r["record_id"])
            chi[fam].append(r["chi_upper"])
        m = _margin(r)
        if m is not None:
            margin[fam].append(m)
    return {"chi_upper": dict(sorted(chi.items())), "margin": dict(sorted(margin.items()))}


def distribution_figure(data: dict) -> bytes:
    """Histograms of log10 chi_upper (per record) and log10 of the witness margin (per record and eps)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, key, label in ((axes[0], "chi_upper", "log10 chi_upper (bound on ||A - A_hat||_inf), per record"),
                           (axes[1], "margin", "log10 (eps - certified bound), proved witnesses")):
        logs = {fam: [math.log10(v) for v in values if v > 0 and math.isfinite(v)] for fam, values in data[key].items()}
        every = [x for xs in logs.values() for x in xs]
        if every:  # the same bins for every family
            lo, hi = min(every), max(every)
            bins = [lo + (hi - lo + 1e-9) * i / 30 for i in range(31)] if hi > lo else [lo - 0.5, lo + 0.5]
            for fam, xs in logs.items():
                if xs:
                    ax.hist(xs, bins=bins, alpha=0.55, label=f"{_label(fam)} ({len(xs)})")
            ax.legend(fontsize=8)
        ax.set_xlabel(label, fontsize=9)
        ax.set_ylabel("count")
        ax.yaxis.set_major_locator(_integer_locator())
    return _png(fig)


def _integer_locator():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def width_data(verdict_rows: list[dict]) -> list[dict]:
    """For each family whose decoder blocks come in several block widths: per (eps, k, width) the
    number of operators and the share shown feasible and impossible by the validated verdict."""
    widths = defaultdict(set)
    for v in verdict_rows:
        if v.get("block_width") is not None:
            widths[v.get("family") or ""].add(v["block_width"])
    cells = defaultdict(Counter)
    for v in verdict_rows:
        fam = v.get("family") or ""
        if v.get("block_width") is not None and len(widths[fam]) > 1:
            cells[(fam, v.get("eps"), v.get("k"), v["block_width"])][v.get("validated_verdict")] += 1
    out = []
    for (fam, eps, k, width), c in sorted(cells.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2], kv[0][3])):
        n = sum(c.values())
        out.append({"family": fam, "eps": eps, "k": k, "block_width": width, "operators": n,
                    **{f"{v}_share": c[v] / n for v in VERDICT_SHARES}})
    return out


def width_figure(cells: list[dict]) -> bytes:
    """Share feasible (solid) and impossible (dashed) against block width, one line per budget k;
    one panel per eps."""
    plt = _plt()
    eps_list = list(dict.fromkeys(c["eps"] for c in cells))
    fig, axes = plt.subplots(1, len(eps_list), figsize=(5 * len(eps_list) + 0.6, 3.8), squeeze=False, sharey=True)
    for ax, eps in zip(axes[0], eps_list):
        sel = [c for c in cells if c["eps"] == eps]
        for i, k in enumerate(sorted({c["k"] for c in sel})):
            line = sorted((c for c in sel if c["k"] == k), key=lambda c: c["block_width"])
            xs = [c["block_width"] for c in line]
            color = f"C{i % 10}"
            ax.plot(xs, [c["feasible_share"] for c in line], "-o", color=color, label=f"k={k} feasible")
            ax.plot(xs, [c["impossible_share"] for c in line], "--s", color=color, label=f"k={k} impossible")
        ax.set_xscale("log", base=2)
        widths = sorted({c["block_width"] for c in sel})
        ax.set_xticks(widths, [str(w) for w in widths])
        ax.minorticks_off()
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("block width N")
        ax.set_title(f"{_label(cells[0]['family'])}, eps = {eps}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("share of operators (validated)")
    return _png(fig)
