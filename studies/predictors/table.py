"""The predictor study's operators: one row per text-family operator of a replayed panel at the
protocol's tolerance, with its targets in cap units (``U_p``, ``L_p``, ``mid_p``) from the
validated bracket, and the record folder its features are computed from."""

from __future__ import annotations

import math
from pathlib import Path

from softrank.errors import InputError
from softrank.studies.predictors.protocol import ATTENTIONS, EPS, MODELS


def resolved(lower: int, upper: int, p: int) -> bool:
    """The summary's criterion: U <= 2L, or U - L <= 2, or U - L <= p/10 (exact integers)."""
    return upper <= 2 * lower or upper - lower <= 2 or 10 * (upper - lower) <= p


def operators_table(folder, panel: str) -> tuple[list[dict], dict]:
    """``(rows, counts)`` for the panel in ``folder`` (``store/`` and ``replay/``): the rows at eps
    1/4 of the text families (MiniLM's self-attention, SmolLM2's common-prefix blocks), each checked
    as ``softrank regress`` checks it; ``counts`` says how many were left out and why."""
    from softrank.findings.replay_table import check_replay_row, read_parquet_rows

    folder = Path(folder)
    store, replay = folder / "store", folder / "replay"
    for path, what in ((store / "records", "store/records"), (replay / "replay.parquet", "replay/replay.parquet")):
        if not path.exists():
            raise InputError(str(folder), what, "missing: give the output folder of softrank run --panel full "
                                                "or of softrank study constructions --panel full")
    columns, raw = read_parquet_rows(replay, "replay.parquet")
    need = {"record_id", "status", "model", "family", "attention", "source_id", "layer", "head", "m", "N", "eps_value",
            "validated_lower", "validated_upper"}
    if not need <= set(columns):
        raise InputError(str(replay / "replay.parquet"), "columns", f"missing {sorted(need - set(columns))}")
    rows, counts, seen = [], {"other_model": 0, "other_attention": 0, "other_eps": 0, "malformed": 0, "missing_lower": 0,
                              "missing_upper": 0, "missing_record": 0}, set()
    for i, row in enumerate(raw):
        if row.get("status") == "malformed" or row["eps_value"] is None:
            counts["malformed"] += 1
            continue
        check_replay_row(replay / "replay.parquet", i, row)
        if row.get("model") not in MODELS:
            counts["other_model"] += 1
            continue
        if row["attention"] not in ATTENTIONS:
            counts["other_attention"] += 1
            continue
        if row["eps_value"] != float(EPS):
            counts["other_eps"] += 1
            continue
        rid = row["record_id"]
        if rid in seen:
            raise InputError(str(replay / "replay.parquet"), f"row {i}", f"record {rid!r} twice at eps 0.25")
        seen.add(rid)
        rec = store / "records" / rid
        if not rec.is_dir():
            counts["missing_record"] += 1
            continue
        m, n = int(row["m"]), int(row["N"])
        p = min(m, n)
        lo, up = row["validated_lower"], row["validated_upper"]
        counts["missing_lower"] += lo is None
        counts["missing_upper"] += up is None
        out = {"record_id": rid, "panel": panel, "family": str(row["family"]), "model": str(row.get("model") or ""), "source_id": str(row["source_id"]),
               "layer": int(row["layer"]), "head": int(row["head"]), "m": m, "N": n, "p": p, "folder": str(rec),
               "U_p": math.nan if up is None else up / p, "L_p": math.nan if lo is None else lo / p,
               "mid_p": (lo + up) / (2 * p) if lo is not None and up is not None and resolved(lo, up, p)
               else math.nan}
        rows.append(out)
    rows.sort(key=lambda r: (r["family"], r["source_id"], r["layer"], r["head"], r["record_id"]))
    return rows, counts


def first_per_family(rows: list[dict], limit: int | None) -> list[dict]:
    """``--limit N``: the first N operators of each family (in the table's order), every source kept
    as long as it can be: the operators are taken round-robin over sources."""
    if limit is None:
        return rows
    out = []
    for fam in sorted({r["family"] for r in rows}):
        by_source: dict = {}
        for r in rows:
            if r["family"] == fam:
                by_source.setdefault(r["source_id"], []).append(r)
        queues = [by_source[s] for s in sorted(by_source)]
        picked = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
        out.extend(picked[:limit])
    return out


def check_disjoint(main: list[dict], heldout: list[dict], main_dir, heldout_dir) -> None:
    """The held-out view needs sources the fit never saw."""
    shared = {r["source_id"] for r in main} & {r["source_id"] for r in heldout}
    if shared:
        raise InputError(str(heldout_dir), "source_id", f"{len(shared)} source(s) also in {main_dir} "
                                                        f"(e.g. {sorted(shared)[0]!r}): the panels must be disjoint")
