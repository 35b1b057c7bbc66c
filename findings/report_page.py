"""The page of ``softrank report`` (``findings/report.py``), section by section: ``Page`` holds the HTML
parts and the figures; each ``_section(page, rows)`` adds one part (header, brackets per family,
layer x head tables, records, transitions, distributions, widths, problems)."""

from __future__ import annotations

import base64
import html
import json
from collections import Counter, defaultdict
from pathlib import Path

from softrank.findings import report_figures as rf
from softrank.findings.regress import VERDICTS, analyse


class Page:
    """The page being built: HTML parts and the figures (PNG bytes by name)."""

    def __init__(self):
        self.parts: list[str] = []
        self.figures: dict[str, bytes] = {}

    def add(self, text: str) -> None:
        self.parts.append(text)

    def figure(self, name: str, png: bytes, data, caption: str, extra: str = "") -> None:
        """A figure with its caption (text) and ``extra`` (HTML after the caption text)."""
        self.figures[name] = png
        uri = "data:image/png;base64," + base64.b64encode(png).decode()
        more = f"; {extra}" if extra else ""
        self.add(f'<figure id="fig-{name}"><img id="img-{name}" class="figure" alt="{_e(caption)}" src="{uri}">'
                 f"<figcaption>{_e(caption)}{more}</figcaption></figure>")
        self.data(f"fig-{name}", data)

    def data(self, name: str, data) -> None:
        text = json.dumps(data, sort_keys=True).replace("</", "<\\/")
        self.add(f'<script type="application/json" id="data-{name}">{text}</script>')

    def table(self, name: str, header: list[str], rows: list[list], data=None) -> None:
        head = "".join(f"<th>{_e(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
        self.add(f'<table id="table-{name}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
        if data is not None:
            self.data(f"table-{name}", data)


def _e(text) -> str:
    return html.escape("" if text is None else str(text))


def _cell(value) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="n">{_e(value)}</td>'
    cls = ' class="reason"' if isinstance(value, str) and len(value) > 80 else ""
    return f"<td{cls}>{_e(value)}</td>"


def fmt_num(v) -> str:
    return "-" if v is None else f"{v:g}"


def fmt_share(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _header(page: Page, data: dict) -> None:
    rows, meta, manifest = data["rows"], data["meta"], data["manifest"]
    status = Counter(r.get("status") for r in rows)
    records = len({r["record_id"] for r in rows})
    if manifest is None and not isinstance(data["folder"], Path):
        state = "in memory (softrank.results)"
    elif manifest is None:
        state = "no manifest.json (an older or unfinished replay)"
    else:
        state = "complete" if manifest.get("complete") is True else "NOT complete"
    page.add("<h1>SoftRank report</h1>")
    page.table("about", ["replay tables", "store", "softrank", "strict", "run", "records", "rows by status"],
               [[str(data["folder"]), meta.get("store", "?"), meta.get("softrank_version", "?"),
                 meta.get("strict", "?"), state, records, ", ".join(f"{k}: {n}" for k, n in sorted(status.items()))]])


RESOLVED_NOTE = ("<em>Resolved</em> (one criterion on the whole page, that of the README's results table and of "
                 "<code>softrank run</code>'s summary): a proved witness and U &lt;= 2L, or U - L &lt;= 2, or "
                 "U - L &lt;= min(m, N)/10.")


def _brackets(page: Page, rows: list[dict]) -> list[dict]:
    page.add("<h2>Validated brackets per family</h2><p class=\"note\">Each vertical segment is one operator's "
             "proved bracket L &lt;= r_eps(A) &lt;= U (log scale), operators sorted by U; green: resolved; "
             "orange: not resolved; red dashed: no proved witness, U is the full rank min(m, N) "
             f"(dashed black line). {RESOLVED_NOTE}</p>")
    for fam in rf.families(rf.ok_rows(rows)):
        data = rf.bracket_data(rows, fam)
        if data["panels"]:
            page.add(f"<h3>{_e(fam)}</h3>")
            counts = "; ".join(
                f'<span class="resolved-count" data-family="{_e(fam)}" data-eps="{_e(p["eps"])}" '
                f'data-resolved="{sum(o["resolved"] for o in p["operators"])}" '
                f'data-operators="{len(p["operators"])}">eps {_e(p["eps"])}: '
                f'{sum(o["resolved"] for o in p["operators"])}/{len(p["operators"])} resolved</span>'
                for p in data["panels"])
            page.figure(f"brackets-{_slug(fam)}", rf.bracket_figure(data), data,
                        f"{fam}: validated brackets per eps, sorted by upper end", extra=counts)
    summary = rf.family_summary(rows)
    page.add("<h3>Per family and eps</h3>")
    page.table("summary", ["family", "support", "eps", "operators", "median L", "median U", "median U/L", "resolved",
                           "closed exactly (L = U)"],
               [[s["family"], s["support"], s["eps"], s["operators"], fmt_num(s["median_L"]), fmt_num(s["median_U"]),
                 f"{s['median_U_over_L']:.2f}", f"{s['resolved']}/{s['operators']} ({fmt_share(s['resolved_share'])})",
                 fmt_share(s["closed_share"])] for s in summary], data=summary)
    page.add(f"<p class=\"note\">{RESOLVED_NOTE} A row without a proved witness has U = min(m, N).</p>")
    if any(s["support"] != "full" for s in summary):
        from softrank.findings.kinds import NATIVE_NOTE

        page.add(f'<p class="note native">{_e(NATIVE_NOTE)}</p>')
    return summary


def _heads(page: Page, rows: list[dict]) -> None:
    """Per family and eps, a layer x head table: resolved / operators per (layer, head), coloured by
    the resolved share, with median L, U and U/L in the cell's title."""
    cells = rf.head_data(rows)
    page.add("<h2>Layers and heads</h2><p class=\"note\">Per family and eps, one cell per (layer, head): "
             "operators resolved / operators (several when the head was captured on several sources or blocks), "
             "green when all are resolved, orange when none; hover for median L, U and U/L. "
             f"{RESOLVED_NOTE}</p>")
    if not cells:
        page.add("<p class=\"note\">No replayed operator has a layer and a head.</p>")
        return
    missing = sum(1 for r in rf.ok_rows(rows) if r.get("layer") is None or r.get("head") is None)
    if missing:
        page.add(f"<p class=\"note\">{missing} rows without a layer or head are not in these tables.</p>")
    groups: dict = defaultdict(list)
    for c in cells:
        groups[(c["family"], c["eps"])].append(c)
    order = {e: i for i, e in enumerate(rf.eps_order(rows))}
    for (fam, eps), mine in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], len(order)))):
        layers = sorted({c["layer"] for c in mine})
        heads = sorted({c["head"] for c in mine})
        at = {(c["layer"], c["head"]): c for c in mine}
        name = f"heads-{_slug(fam)}-{_slug(eps)}"
        page.add(f"<h3>{_e(fam)}, eps = {_e(eps)}</h3>")
        head_row = "".join(f"<th>{h}</th>" for h in heads)
        body = []
        for layer in layers:
            tds = []
            for h in heads:
                c = at.get((layer, h))
                if c is None:
                    tds.append('<td class="heat"></td>')
                    continue
                tip = (f"layer {layer}, head {h}: {c['operators']} operators, median L {fmt_num(c['median_L'])}, "
                       f"median U {fmt_num(c['median_U'])}, median U/L {c['median_U_over_L']:.2f}")
                tds.append(f'<td class="heat" style="background:{_heat(c["resolved_share"])}" title="{_e(tip)}" '
                           f'data-layer="{layer}" data-head="{h}" data-resolved="{c["resolved"]}" '
                           f'data-operators="{c["operators"]}">{c["resolved"]}/{c["operators"]}</td>')
            body.append(f"<tr><th>{layer}</th>{''.join(tds)}</tr>")
        page.add(f'<table id="table-{name}" class="heads" data-family="{_e(fam)}" data-eps="{_e(eps)}">'
                 f"<thead><tr><th>layer \\ head</th>{head_row}</tr></thead><tbody>{''.join(body)}</tbody></table>")
        page.data(f"table-{name}", mine)


STATUS = {"resolved": "resolved", "unresolved": "not resolved", "no_witness": "no proved witness"}


def _heat(share: float) -> str:
    """Orange (none resolved) to green (all resolved), light enough to read the text on."""
    lo, hi = (255, 216, 168), (178, 242, 187)
    return "#" + "".join(f"{round(a + (b - a) * share):02x}" for a, b in zip(lo, hi))


def _records(page: Page, rows: list[dict]) -> None:
    """One row per record and eps: model, layer, head, source, block width, eps, L, U, status."""
    listed = rf.record_rows(rows)
    page.add(f"<h2>Every operator ({len({r['record_id'] for r in listed})} records, {len(listed)} rows)</h2>"
             "<p class=\"note\">status: resolved, not resolved, no proved witness (U shown is the full rank), "
             f"malformed or contradiction. {RESOLVED_NOTE}</p>")
    header = ["record", "model", "layer", "head", "source", "block", "eps", "L", "U", "status"]
    body = "".join(
        "<tr>" + "".join(_cell(r[k]) for k in ("record_id", "model", "layer", "head", "source", "block", "eps",
                                               "L", "U")) + f'<td class="{r["status"]}">{_e(STATUS.get(r["status"], r["status"]))}</td></tr>'
        for r in listed)
    page.add('<table id="table-records"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in header)
             + f"</tr></thead><tbody>{body}</tbody></table>")
    page.data("table-records", listed)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "none"


def _transitions(page: Page, rows: list[dict], verdicts: list[dict]) -> None:
    tables = analyse(rows, verdicts)
    page.add("<h2>float64 to validated verdicts</h2><p class=\"note\">Count of (record, budget k) per family "
             "and eps, by float64 verdict (rows) and validated verdict (columns).</p>")
    per = defaultdict(Counter)
    for t in tables["transitions"]:
        per[(t["family"], t["eps"])][(t["float64_verdict"], t["validated_verdict"])] += t["count"]
    order = {e: i for i, e in enumerate(rf.eps_order(rows))}
    body = []
    for (fam, eps), c in sorted(per.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], len(order)), kv[0][1])):
        for f in ("feasible", "impossible", "unresolved", "none"):
            if any(c[(f, v)] for v in VERDICTS + ("error",)):
                body.append([fam, eps, f, *[c[(f, v)] for v in VERDICTS + ("error",)]])
    page.table("transitions", ["family", "eps", "float64", *[f"-> {v}" for v in VERDICTS + ("error",)]], body,
               data=tables["transitions"])
    page.table("ends", ["family", "eps", "records", "validated L = float64 L", "validated U = float64 U"],
               [[e["family"], e["eps"], e["records"], e["lower_equal"], e["upper_equal"]] for e in tables["ends"]])
    fails = tables["failures"]
    page.add(f"<h3>float64 verdicts that fail validation ({len(fails)})</h3>")
    if fails:
        page.table("failures", ["record", "eps", "k", "float64", "validated", "reason"],
                   [[f["record_id"], f["eps"], f["k"], f["float64_verdict"], f["validated_verdict"], f["reason"]]
                    for f in fails], data=fails)


def _distributions(page: Page, rows: list[dict]) -> None:
    data = rf.distribution_data(rows)
    page.add("<h2>chi_upper and witness margins</h2>")
    if not any(data["chi_upper"].values()) and not any(data["margin"].values()):
        page.add("<p class=\"note\">No replayed record.</p>")
        return
    page.figure("distributions", rf.distribution_figure(data), data,
                "chi_upper per record, and eps minus the certified bound of every proved witness (log10)")
    stats = []
    for key in ("chi_upper", "margin"):
        for fam, values in data[key].items():
            if values:
                stats.append([key, fam, len(values), f"{min(values):.3e}", f"{rf._median(values):.3e}",
                              f"{max(values):.3e}"])
    page.table("distribution-stats", ["quantity", "family", "count", "min", "median", "max"], stats)


def _widths(page: Page, verdicts: list[dict]) -> None:
    page.add("<h2>Decoder blocks across block widths</h2>")
    widths = defaultdict(set)
    for v in verdicts:
        if v.get("block_width") is not None:
            widths[v.get("family") or ""].add(v["block_width"])
    if not widths:
        page.add("<p class=\"note\">No decoder blocks (no block_width) in these tables.</p>")
        return
    cells = rf.width_data(verdicts)
    for fam, ws in sorted(widths.items()):
        if len(ws) < 2:
            page.add(f"<p class=\"note\">{_e(fam)}: one block width ({', '.join(map(str, sorted(ws)))}) in this "
                     "store; the share against width needs several.</p>")
            continue
        mine = [c for c in cells if c["family"] == fam]
        page.figure(f"widths-{_slug(fam)}", rf.width_figure(mine), mine,
                    f"{fam}: share of operators shown feasible (solid) and impossible (dashed) per budget k")
        page.table(f"widths-{_slug(fam)}", ["eps", "k", "block width", "operators", "feasible", "impossible"],
                   [[c["eps"], c["k"], c["block_width"], c["operators"], fmt_share(c["feasible_share"]),
                     fmt_share(c["impossible_share"])] for c in mine])


def _problems(page: Page, rows: list[dict]) -> None:
    malformed = [r for r in rows if r.get("status") == "malformed"]
    page.add(f"<h2>Malformed records ({len(malformed)})</h2>")
    if malformed:
        page.table("malformed", ["record", "error"], [[r["record_id"], r.get("error")] for r in malformed],
                   data=[{"record_id": r["record_id"], "error": r.get("error")} for r in malformed])
    contra = [r for r in rows if r.get("status") == "contradiction"]
    if contra:
        page.add(f"<h2>Contradictions ({len(contra)})</h2>")
        page.table("contradictions", ["record", "eps", "error"], [[r["record_id"], r["eps"], r.get("error")]
                                                                   for r in contra])
    open_ = [r for r in rows if r.get("upper_outcome") not in (None, "proved")]
    page.add(f"<h2>Witnesses not proved ({len(open_)})</h2>")
    if open_:
        listed = [{"record_id": r["record_id"], "family": r.get("family"), "eps": r["eps"],
                   "outcome": r["upper_outcome"], "rank": r.get("upper_rank"), "bound": r.get("upper_bound"),
                   "reason": r.get("upper_reason") or "(no reason given)"} for r in open_]
        page.table("witnesses", ["record", "family", "eps", "outcome", "rank", "certified bound", "reason"],
                   [list(x.values()) for x in listed], data=listed)
    lowers = [(r, o) for r in rows for o in r.get("lower_outcomes") or [] if o.get("outcome") != "proved"]
    page.add(f"<h2>Lower certificates not accepted ({len(lowers)})</h2>")
    if lowers:
        page.table("lowers", ["record", "eps", "kind", "claimed", "outcome", "reason"],
                   [[r["record_id"], r["eps"], o.get("kind"), o.get("claimed"), o.get("outcome"),
                     o.get("reason") or "(no reason given)"] for r, o in lowers])
