"""The report of a replay (``softrank report REPLAY_DIR --out FILE.html``, ``softrank.report``): one
self-contained HTML page a person can look at.

Read from the replay tables (``replay.parquet``, ``verdicts.parquet`` of ``softrank replay``; the
numbers are never recomputed from records): per family, every operator's validated bracket as a
vertical segment on a log scale, sorted by upper end, resolved ones coloured, with the full-rank
line; the table per family and eps (operators, median L, median U, median U/L, resolved count and
share, closed share); per family and eps a layer x head table (resolved count per head, coloured
by the resolved share); one row per record and eps (model, layer, head, source, block, eps, L, U,
status); the float64-to-validated verdict transitions (``softrank.findings.regress.analyse``);
the chi_upper and witness-margin distributions; for decoder blocks in several block widths, the
share shown feasible / impossible at each budget against width; every malformed record, every
witness not proved and every lower certificate not accepted, with its reason.

*Resolved* means one thing everywhere on the page, the criterion of the results table
(``softrank.findings.report_figures.is_resolved``: a proved witness and U <= 2L, or U - L <= 2, or
U - L <= min(m, N)/10), which ``softrank run``'s summary applies to the float64 ends.

Figures are PNG data URIs (matplotlib, Agg); each figure's data is embedded beside it as JSON
(``<script type="application/json" id="data-FIGURE">``) and each table's rows likewise
(``id="data-TABLE"``).  No external reference: the page opens offline.  ``--figures DIR`` also
writes every figure as ``DIR/FIGURE.png`` (``figures=``).  The page's sections are built by
``softrank.findings.report_page``.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from pathlib import Path

from softrank.fastpath.store.files import atomic_write
from softrank.fastpath.store.files import output_folder as output_dir
from softrank.findings.regress import read_rows
from softrank.findings.report_page import (Page, _brackets, _distributions, _header, _heads, _problems, _records,
                                           _transitions, _widths)
from softrank.findings.tables import table_metadata
from softrank.errors import InputError

STYLE = """body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:13px}th,td{border:1px solid #ccc;padding:2px 6px}
th{background:#f1f3f5}td.n{text-align:right}img{max-width:100%;height:auto;border:1px solid #eee}
figure{margin:.5em 0 1.5em}figcaption{font-size:13px;color:#555}.note{color:#555;font-size:14px}
td.reason{max-width:700px;font-size:12px}td.heat{text-align:center;min-width:2.2em}
td.resolved{color:#2b8a3e}td.unresolved{color:#e8590c}td.no_witness,td.malformed,td.contradiction{color:#c92a2a}"""


def load(replay_dir) -> dict:
    """The replay and verdict rows (older tables: ``chi`` read as ``chi_upper``), the parquet
    metadata and the manifest, if any."""
    folder = Path(replay_dir)
    if not folder.is_dir():
        raise InputError(str(folder), "", "not a folder")
    rows, verdicts = read_rows(folder, "replay.parquet"), read_rows(folder, "verdicts.parquet")
    manifest = None
    if (folder / "manifest.json").is_file():
        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = None
    return _normalised({"folder": folder, "rows": rows, "verdicts": verdicts, "manifest": manifest,
                        "meta": table_metadata(folder / "replay.parquet")})


def _normalised(data: dict) -> dict:
    """Rows as the page reads them: ``chi`` of older tables as ``chi_upper``, lists never None."""
    from softrank.findings.kinds import by_kind

    data["rows"], data["verdicts"] = by_kind(data["rows"], data["verdicts"])  # a family per attention kind
    rows, verdicts = data["rows"], data["verdicts"]
    for r in rows:
        if "chi_upper" not in r:
            r["chi_upper"] = r.get("chi")
        if not isinstance(r.get("lower_outcomes"), list):
            r["lower_outcomes"] = []
        r.setdefault("block_width", None)
    for v in verdicts:
        v.setdefault("block_width", None)
    return data


def write_report(replay_dir, out, figures=None, info: dict | None = None, research: bool = False,
                 heldout=None) -> Path:
    """Build the page from REPLAY_DIR's tables into OUT (atomic); with ``figures``, the PNGs too.
    ``info`` (a dict) receives what ``--json`` prints; ``research`` adds the comparison with the
    research page's figures (``softrank.findings.report_research``; ``softrank run --panel full``);
    ``heldout`` (a heldout.json; default REPLAY_DIR/../heldout.json if it exists) the held-out
    construction benchmark (``softrank.findings.report_constructions``)."""
    if heldout is None and (Path(replay_dir).parent / "heldout.json").is_file():
        heldout = Path(replay_dir).parent / "heldout.json"
    data = load(replay_dir)
    if heldout is not None:
        from softrank.findings.report_constructions import load_heldout

        data["heldout"], data["heldout_path"] = load_heldout(heldout), str(heldout)
    return _write(data, out, figures, info, research)


def write_report_data(rows: list[dict], verdicts: list[dict], out, figures=None, *, folder: str = "(in memory)",
                      meta: dict | None = None, info: dict | None = None) -> Path:
    """The same page from rows in memory (``softrank.report`` of a ``softrank.Results``): the rows
    of ``replay.parquet`` and ``verdicts.parquet``, checked as the tables are when read."""
    from softrank.findings.replay_table import REQUIRED, check_table_rows

    rows, verdicts = [dict(r) for r in rows], [dict(v) for v in verdicts]
    for name, table in (("replay.parquet", rows), ("verdicts.parquet", verdicts)):
        columns = sorted({c for r in table for c in r}) if table else list(REQUIRED[name])
        check_table_rows(f"{folder}: {name}", name, columns, table)
    data = {"folder": folder, "rows": rows, "verdicts": verdicts, "manifest": None, "meta": dict(meta or {})}
    return _write(_normalised(data), out, figures, info)


def _write(data: dict, out, figures, info: dict | None, research: bool = False) -> Path:
    from softrank.findings.kinds import NEAR_UNIFORM, near_uniform

    page = Page()
    _header(page, data)
    for fam in near_uniform(data["rows"]):  # a randomly initialised model: said before any figure
        page.add(f'<p class="note near-uniform"><strong>{html.escape(fam)}</strong>: {html.escape(NEAR_UNIFORM)}.</p>')
    summary = _brackets(page, data["rows"])
    if research:  # softrank run --panel full: beside the research page's float64 figures
        from softrank.findings.report_research import research_section

        research_section(page, summary)
    if data.get("heldout") is not None:
        from softrank.findings.report_constructions import constructions_section

        constructions_section(page, data["heldout"], data["heldout_path"])
    _heads(page, data["rows"])
    _records(page, data["rows"])
    _transitions(page, data["rows"], data["verdicts"])
    _distributions(page, data["rows"])
    _widths(page, data["verdicts"])
    _problems(page, data["rows"])
    text = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>SoftRank report</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(page.parts) + "\n</body></html>\n")
    out = Path(out)
    output_dir(out.parent)
    atomic_write(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    if figures:
        folder = output_dir(figures, field="figures")
        for name, png in page.figures.items():
            atomic_write(folder / f"{name}.png", lambda tmp, png=png: Path(tmp).write_bytes(png))
    if info is not None:
        rows = data["rows"]
        info.update(report=str(out), figures=sorted(page.figures), records=len({r["record_id"] for r in rows}),
                    rows=len(rows), rows_by_status=dict(sorted(Counter(r.get("status") for r in rows).items())),
                    summary=summary)
    return out
