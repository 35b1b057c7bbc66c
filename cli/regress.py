"""``softrank regress REPLAY_DIR [--out DIR]``: float64 versus validated verdicts of a replay.

Reads ``verdicts.parquet`` and ``replay.parquet`` written by ``softrank replay`` and reports

- **transitions**: per family and eps, how many (record, budget k) verdicts went from each float64
  verdict (feasible, impossible, unresolved, or none) to each validated verdict;
- **ends**: per family and eps, how many records have validated lower (upper) end equal to the
  float64 one;
- **failures**: every (record, eps, k) whose float64 verdict (feasible or impossible) is not the
  validated one, with the reason: which inequality (Lemma U for feasible, the lower certificates'
  lemmas for impossible) and by how much, from the checkers' stored bounds and reasons;
- **end_differences**: every (record, eps) whose validated end differs from the float64 end.

Printed as rich tables and saved as parquet, csv and json in ``--out`` (default
``REPLAY_DIR/regress``).  Reading only: nothing here decides a verdict.

``--against BASELINE`` (another replay folder, or a baseline JSON written by ``--write-baseline``,
such as ``tests/golden/expected.json``) compares, per record and eps, the status, the validated
lower and upper ends, the witness outcome and the validated verdict at every budget, prints every
change (and every record or eps present on one side only) and exits 1 on any
(``softrank.cli.regress_baseline``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import json

import pyarrow as pa

from softrank.cli.args import check_count, path_arg
from softrank.cli.paths import output_dir, output_file
from softrank.cli.regress_baseline import baselines, check_baseline_target
from softrank.cli.tables import write_table
from softrank.fastpath.store.replay_table import read_replay_table
from softrank.replay.tolerance import Tolerance
from softrank.validated.errors import InputError

VERDICTS = ("feasible", "impossible", "unresolved")
FROM = VERDICTS + ("none",)


EPILOG = """--json prints one object instead of the tables: {"verdicts" ((record, eps, k) compared),
"agree", "failures" (float64 verdicts that fail validation), "contradicted", "lower_equal", "records"
((record, eps) pairs), "tables" (the folder written), "baseline" (the file --write-baseline wrote, or
null), "against" (or null), "changes" (every change against --against, one line each; null without
it), "exit_code"}."""


def configure(parser) -> None:
    parser.add_argument("replay_dir", type=path_arg, help="folder with replay.parquet and verdicts.parquet (softrank replay --out)")
    parser.add_argument("--out", default=None, type=path_arg, help="output folder (default: REPLAY_DIR/regress)")
    parser.add_argument("--max-list", type=int, default=40, help="failures printed, >= 0 (all are saved)")
    parser.add_argument("--against", default=None, metavar="BASELINE", type=path_arg,
                        help="a replay folder or a baseline JSON: print every changed verdict or bracket, exit 1 on any")
    parser.add_argument("--write-baseline", default=None, metavar="FILE.json", type=path_arg,
                        help="write this replay's validated results as a baseline JSON (for --against)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below) instead of the tables")
    parser.epilog = EPILOG


def _read(folder: Path, name: str) -> list[dict]:
    """The checked rows of FOLDER/NAME (``softrank.fastpath.store.replay_table.read_replay_table``)."""
    return read_replay_table(folder, name)


def _lower_explanation(row: dict, k: int | None) -> str:
    """Which lower certificates could have proved ``r > k`` and why they were not accepted."""
    outcomes = row.get("lower_outcomes") or []
    relevant = [f"{o['kind']} claims r >= {o['claimed']}: {o['outcome']}" for o in outcomes
                if k is None or o.get("claimed") is None or o["claimed"] > k]
    reasons = "; ".join(f"{o['kind']}: {o['reason']}" for o in outcomes if o.get("reason"))
    if not relevant:
        return "no lower certificate stored with a claim above the budget" + (f" (reasons: {reasons})" if reasons else "")
    return "; ".join(relevant) + (f" | {reasons}" if reasons else "")


def _upper_explanation(row: dict) -> str:
    outcome = row.get("upper_outcome")
    if outcome is None:
        return "no upper witness stored"
    bound = row.get("upper_bound") or ""
    try:
        eps = Tolerance.from_table(row.get("eps") or "").value  # the table file's eps cell
    except InputError:
        eps = None
    excess = ""
    try:
        if bound and eps is not None:
            excess = f", excess bound - eps = {float(Fraction(bound) - eps):+.3e}"
    except (ValueError, ZeroDivisionError):
        pass
    reason = row.get("upper_reason") or ""
    return (f"Lemma U (||A - X Y^T||_inf <= eps, rank {row.get('upper_rank')}): {outcome}; "
            f"certified bound {bound or '?'} vs eps {row.get('eps')}{excess}" + (f"; {reason}" if reason else ""))


def analyse(replay_rows: list[dict], verdict_rows: list[dict]) -> dict[str, list[dict]]:
    ends, differences = _ends(replay_rows)
    return {"transitions": _transitions(verdict_rows), "ends": ends, "failures": _failures(replay_rows, verdict_rows),
            "end_differences": differences}


def _transitions(verdict_rows: list[dict]) -> list[dict]:
    trans = Counter()
    for v in verdict_rows:
        f = v.get("float64_verdict") or "none"
        trans[(v.get("family") or "", v.get("eps") or "", f, v.get("validated_verdict") or "")] += 1
    return [{"family": fam, "eps": eps, "float64_verdict": f, "validated_verdict": val, "count": c}
            for (fam, eps, f, val), c in sorted(trans.items())]


def _failures(replay_rows: list[dict], verdict_rows: list[dict]) -> list[dict]:
    by_key = {(r["record_id"], r.get("eps")): r for r in replay_rows if r.get("status") == "ok"}
    failures = []
    for v in verdict_rows:
        f, val = v.get("float64_verdict") or "", v.get("validated_verdict") or ""
        if f not in ("feasible", "impossible") or f == val:
            continue
        row = by_key.get((v["record_id"], v.get("eps")), {})
        if f == "impossible":
            end, inequality = "lower", _lower_explanation(row, v.get("k"))
            f_end, v_end = row.get("float64_lower"), row.get("validated_lower")
        else:
            end, inequality = "upper", _upper_explanation(row)
            f_end, v_end = row.get("float64_upper"), row.get("validated_upper")
        failures.append({"record_id": v["record_id"], "family": v.get("family") or "", "eps": v.get("eps") or "",
                         "k": v.get("k"), "float64_verdict": f, "validated_verdict": val, "end": end,
                         "float64_end": f_end, "validated_end": v_end,
                         "contradiction": val in ("feasible", "impossible"), "reason": inequality})
    return failures


def _ends(replay_rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Per (family, eps): how many validated ends equal the float64 ones; and every end that differs."""
    ends = defaultdict(Counter)
    differences = []
    for r in replay_rows:
        if r.get("status") != "ok":
            continue
        key = (r.get("family") or "", r.get("eps") or "")
        c = ends[key]
        c["records"] += 1
        c["lower_equal"] += r.get("validated_lower") == r.get("float64_lower")
        c["upper_equal"] += r.get("validated_upper") == r.get("float64_upper")
        for end in ("lower", "upper"):
            fv, vv = r.get(f"float64_{end}"), r.get(f"validated_{end}")
            if fv == vv:
                continue
            why = _lower_explanation(r, None) if end == "lower" else _upper_explanation(r)
            if end == "lower" and fv is not None and vv is not None and vv > fv:
                why = f"validated lower above float64's ({r.get('lower_kind')}); " + why
            differences.append({"record_id": r["record_id"], "family": key[0], "eps": key[1], "end": end,
                                "float64_end": fv, "validated_end": vv, "reason": why})
    rows = [{"family": fam, "eps": eps, "records": c["records"], "lower_equal": c["lower_equal"],
             "upper_equal": c["upper_equal"],
             "lower_equal_pct": 100.0 * c["lower_equal"] / c["records"] if c["records"] else 0.0,
             "upper_equal_pct": 100.0 * c["upper_equal"] / c["records"] if c["records"] else 0.0}
            for (fam, eps), c in sorted(ends.items())]
    return rows, differences


_SCHEMAS = {
    "transitions": [("family", pa.string()), ("eps", pa.string()), ("float64_verdict", pa.string()),
                    ("validated_verdict", pa.string()), ("count", pa.int64())],
    "ends": [("family", pa.string()), ("eps", pa.string()), ("records", pa.int64()), ("lower_equal", pa.int64()),
             ("upper_equal", pa.int64()), ("lower_equal_pct", pa.float64()), ("upper_equal_pct", pa.float64())],
    "failures": [("record_id", pa.string()), ("family", pa.string()), ("eps", pa.string()), ("k", pa.int64()),
                 ("float64_verdict", pa.string()), ("validated_verdict", pa.string()), ("end", pa.string()),
                 ("float64_end", pa.int64()), ("validated_end", pa.int64()), ("contradiction", pa.bool_()),
                 ("reason", pa.string())],
    "end_differences": [("record_id", pa.string()), ("family", pa.string()), ("eps", pa.string()),
                        ("end", pa.string()), ("float64_end", pa.int64()), ("validated_end", pa.int64()),
                        ("reason", pa.string())],
}


def save(tables: dict[str, list[dict]], out: Path) -> None:
    """Each table as ``NAME.parquet``, ``NAME.csv`` and ``NAME.json`` in OUT (each file atomic)."""
    out = output_dir(out)
    for name, rows in tables.items():
        write_table(out / name, rows, _SCHEMAS[name], formats=("parquet", "csv", "json"))


def render(tables: dict[str, list[dict]], max_list: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    per = defaultdict(Counter)
    for t in tables["transitions"]:
        per[(t["family"], t["eps"])][(t["float64_verdict"], t["validated_verdict"])] += t["count"]
    tab = Table(title="float64 -> validated verdicts: count of (record, budget k) per (family, eps)")
    for col in ("family", "eps", "float64"):
        tab.add_column(col, overflow="fold")
    for v in VERDICTS:
        tab.add_column(f"-> {v}", justify="right")
    for (fam, eps), c in sorted(per.items()):
        for f in FROM:
            if any(c[(f, v)] for v in VERDICTS):
                tab.add_row(fam, eps, f, *[(f"[bold]{c[(f, v)]}[/bold]" if f == v else str(c[(f, v)])) for v in VERDICTS])
    console.print(tab)
    ends = Table(title="validated ends equal to float64 ends, per (family, eps)")
    for col in ("family", "eps", "records", "lower =", "upper ="):
        ends.add_column(col, justify="right" if col not in ("family", "eps") else "left")
    for e in tables["ends"]:
        ends.add_row(e["family"], e["eps"], str(e["records"]), f"{e['lower_equal']} ({e['lower_equal_pct']:.1f}%)",
                     f"{e['upper_equal']} ({e['upper_equal_pct']:.1f}%)")
    console.print(ends)
    fails = tables["failures"]
    if fails:
        ft = Table(title=f"float64 verdicts that fail validation ({len(fails)}; first {min(len(fails), max_list)})")
        for col in ("record", "eps", "k", "float64", "validated", "reason"):
            ft.add_column(col, overflow="fold")
        for f in fails[:max_list]:
            ft.add_row(f["record_id"], f["eps"], str(f["k"]), f["float64_verdict"], f["validated_verdict"], f["reason"])
        console.print(ft)


def run(args) -> int:
    check_count(args.max_list, "max-list", minimum=0)
    if getattr(args, "write_baseline", None) is not None:  # checked before any work or output
        output_file(args.write_baseline, "write-baseline")
        check_baseline_target(args)
    folder = Path(args.replay_dir)
    if not folder.is_dir():
        raise InputError(str(folder), "", "not a folder")
    tables = analyse(_read(folder, "replay.parquet"), _read(folder, "verdicts.parquet"))
    out = Path(args.out) if args.out else folder / "regress"
    save(tables, out)
    as_json = getattr(args, "json", False)
    if not as_json:
        render(tables, args.max_list)
    n = sum(t["count"] for t in tables["transitions"])
    agree = sum(t["count"] for t in tables["transitions"] if t["float64_verdict"] == t["validated_verdict"])
    records = sum(e["records"] for e in tables["ends"])
    lower_eq = sum(e["lower_equal"] for e in tables["ends"])
    contra = sum(1 for f in tables["failures"] if f["contradiction"])
    if not as_json:
        print(f"regress: {n} verdicts, {agree} agree; {len(tables['failures'])} float64 verdicts fail validation "
              f"({contra} contradicted); lower ends equal on {lower_eq}/{records} (record, eps); tables: {out}")
        return baselines(args, folder)
    code, lines = baselines(args, folder, quiet=True)
    against, written = getattr(args, "against", None), getattr(args, "write_baseline", None)
    print(json.dumps({"verdicts": n, "agree": agree, "failures": len(tables["failures"]), "contradicted": contra,
                      "lower_equal": lower_eq, "records": records, "tables": str(out),
                      "baseline": None if written is None else str(written),
                      "against": None if against is None else str(against), "changes": lines, "exit_code": code}))
    return code
