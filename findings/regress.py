"""Float64 versus validated verdicts of a replay (``softrank regress REPLAY_DIR``).

Reads ``verdicts.parquet`` and ``replay.parquet`` written by ``softrank replay`` and computes

- **transitions**: per family and eps, how many (record, budget k) verdicts went from each float64
  verdict (feasible, impossible, unresolved, or none) to each validated verdict;
- **ends**: per family and eps, how many records have validated lower (upper) end equal to the
  float64 one;
- **failures**: every (record, eps, k) whose float64 verdict (feasible or impossible) is not the
  validated one, with the reason: which inequality (Lemma U for feasible, the lower certificates'
  lemmas for impossible) and by how much, from the checkers' stored bounds and reasons;
- **end_differences**: every (record, eps) whose validated end differs from the float64 end.

``save`` writes them as parquet, csv and json (the command line prints them as rich tables,
``softrank.cli.regress``).  Reading only: nothing here decides a verdict.  Baselines
(``--write-baseline``, ``--against``) are ``softrank.findings.regress_baseline``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import pyarrow as pa

from softrank.fastpath.store.files import output_folder as output_dir
from softrank.findings.replay_table import read_replay_table
from softrank.findings.tables import write_table
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

VERDICTS = ("feasible", "impossible", "unresolved")
FROM = VERDICTS + ("none",)


def read_rows(folder: Path, name: str) -> list[dict]:
    """The checked rows of FOLDER/NAME (``softrank.findings.replay_table.read_replay_table``)."""
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


def totals(tables: dict[str, list[dict]]) -> dict:
    """What the summary line counts: verdicts compared and agreeing, failures, contradicted ones,
    (record, eps) pairs and those with equal lower ends."""
    trans, ends = tables["transitions"], tables["ends"]
    return {"verdicts": sum(t["count"] for t in trans),
            "agree": sum(t["count"] for t in trans if t["float64_verdict"] == t["validated_verdict"]),
            "failures": len(tables["failures"]), "contradicted": sum(1 for f in tables["failures"] if f["contradiction"]),
            "lower_equal": sum(e["lower_equal"] for e in ends), "records": sum(e["records"] for e in ends)}
