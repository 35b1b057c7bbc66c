"""``softrank run``'s summary: one row per (family, eps) of float64 bracket statistics, the
baseline, and the validated replay's agreement, joined on the exact tolerance; written to
``OUT/summary.csv`` and ``OUT/summary.json`` (with the seconds per step)."""

from __future__ import annotations

import statistics
from pathlib import Path

from softrank.fastpath.store.files import write_csv, write_json
from softrank.replay.tolerance import Tolerance


def replay_by_tolerance(replay_rows: list[dict]) -> dict[tuple[str, str], dict]:
    """The replay's rows by (record id, eps text); a malformed record's row has none.  The bracket
    stored each tolerance of this run as its text, which the replay prints back unchanged, so the
    text names the run's ``Tolerance`` (nothing is read back from it)."""
    return {(row["record_id"], row["eps"]): row for row in replay_rows
            if row.get("status") != "malformed" and isinstance(row.get("eps"), str)}


def _int(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def summarise(rows: list[dict], replay_rows: dict, tolerances: list[Tolerance]) -> list[dict]:
    """One row per (family, eps): float64 bracket statistics, baseline, validated agreement; the
    bracket's rows and the replay's are joined on the run's ``Tolerance`` (its text in their rows).
    A family with several attention kinds (the replay's ``attention``) is one family per kind,
    ``t5 (encoder-self)`` (``softrank.findings.kinds``); ``support`` is "causal" for a decoder's
    native operators (attention ``decoder-self``), "full" for every other kind."""
    from softrank.findings.kinds import kind_labels, support_kind

    attention = {rid: row.get("attention") for (rid, _), row in replay_rows.items()}
    labels = kind_labels([{"record_id": r["record_id"], "family": r["family"] or r["model"],
                           "attention": attention.get(r["record_id"])} for r in rows])
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((labels[r["record_id"]], r["eps_text"]), []).append(r)
    support = {fam: support_kind(attention.get(sel[0]["record_id"])) for (fam, _), sel in groups.items()}
    return [{"family": fam, "support": support[fam], **_family_row(fam, tol, groups[fam, tol.text], replay_rows)}
            for fam in sorted({fam for fam, _ in groups}) for tol in tolerances if (fam, tol.text) in groups]


def near_uniform_notes(rows: list[dict], replay_rows: dict) -> list[str]:
    """One line per family (by attention kind) whose every operator's validated bracket is [1, 1]
    at every eps (``softrank.findings.kinds.near_uniform``): a randomly initialised model."""
    from softrank.findings.kinds import NEAR_UNIFORM, near_uniform

    family = {r["record_id"]: r["family"] or r["model"] for r in rows}
    replayed = [{**row, "family": family.get(rid, "")} for (rid, _), row in replay_rows.items()]
    return [f"{fam}: {NEAR_UNIFORM}" for fam in near_uniform(replayed)]


def _family_row(fam: str, tol: Tolerance, sel: list[dict], replay_rows: dict) -> dict:
    p = [min(r["m"], r["N"]) for r in sel]
    U = [r["upper"] if r["upper"] is not None else q for r, q in zip(sel, p)]
    L = [r["lower"] for r in sel]
    bU = [r["baseline_upper"] if r["baseline_upper"] is not None else q for r, q in zip(sel, p)]
    bL = [r["baseline_lower"] for r in sel]
    agree = witnessed = 0
    for r in sel:
        rep = replay_rows.get((r["record_id"], tol.text))
        if rep is None:
            continue
        witnessed += 1
        agree += (_int(rep.get("validated_lower")) == r["lower"]
                  and _int(rep.get("validated_upper")) == r["upper"])
    return {
        "family": fam, "eps": tol.text, "operators": len(sel),
        "shape": f"{sel[0]['m']}x{sel[0]['N']}",
        "median_L": statistics.median(L), "median_U": statistics.median(U),
        "median_U_over_L": statistics.median(u / max(l, 1) for u, l in zip(U, L)),
        "resolved": sum(bool(r["resolved"]) for r in sel) / len(sel),
        "baseline_median_L": statistics.median(bL), "baseline_median_U": statistics.median(bU),
        "baseline_median_U_over_L": statistics.median(u / max(l, 1) for u, l in zip(bU, bL)),
        "baseline_resolved": sum(bool(r["baseline_resolved"]) for r in sel) / len(sel),
        "validated_agreement": (agree / witnessed) if witnessed else None,
        "replayed": witnessed,
    }


def family_outcomes(rows: list[dict], replay_table: list[dict]) -> list[dict]:
    """One row per family (by attention kind, as ``summarise``): records, tolerances, upper
    witnesses proved / refuted / unresolved, lower certificates proved / not accepted, the
    tolerances whose validated end differs from the float64 end (lower and upper), and the
    seconds the bracket's and the replay's workers spent on its records (each record's time once:
    the sum of its task times, not CPU time).  ``rows``: the bracket's rows; ``replay_table``: the
    rows of ``replay/replay.parquet``."""
    from softrank.findings.kinds import kind_labels

    labels = kind_labels([{"record_id": r.get("record_id"), "family": r.get("family") or r.get("model"),
                           "attention": r.get("attention")} for r in replay_table if r.get("status") != "malformed"])
    out: dict[str, dict] = {}

    def row(fam):
        return out.setdefault(fam, {"family": fam, "records": 0, "tolerances": 0, "upper_proved": 0,
                                    "upper_refuted": 0, "upper_unresolved": 0, "lower_proved": 0,
                                    "lower_not_accepted": 0, "lower_changed": 0, "upper_changed": 0,
                                    "bracket_seconds": 0.0, "replay_seconds": 0.0})

    replayed = set()
    for r in replay_table:
        if r.get("status") == "malformed" or r.get("record_id") not in labels:
            continue
        f = row(labels[r["record_id"]])
        f["tolerances"] += 1
        outcome = r.get("upper_outcome")
        if outcome in ("proved", "refuted", "unresolved"):
            f[f"upper_{outcome}"] += 1
        for low in r.get("lower_outcomes") or []:
            f["lower_proved" if low.get("outcome") == "proved" else "lower_not_accepted"] += 1
        f["lower_changed"] += _int(r.get("validated_lower")) != _int(r.get("float64_lower"))
        f["upper_changed"] += _int(r.get("validated_upper")) != _int(r.get("float64_upper"))
        if r["record_id"] not in replayed:  # the replay's time is per record, repeated on its tolerances
            replayed.add(r["record_id"])
            f["records"] += 1
            f["replay_seconds"] += float(r.get("seconds") or 0.0)
    timed = set()
    for r in rows:
        if r.get("record_id") in labels and r["record_id"] not in timed:
            timed.add(r["record_id"])
            row(labels[r["record_id"]])["bracket_seconds"] += float(r.get("seconds") or 0.0)
    return [out[fam] for fam in sorted(out)]


def write_summary(out: Path, table: list[dict], times: dict, families: list[dict] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "summary.csv", table, list(table[0]) if table else [])
    write_json(out / "summary.json", {"table": table, "seconds": times, "families": families or []})
