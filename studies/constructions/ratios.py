"""Rank each upper construction needs relative to the best one (the construction study).

Reads the ``bracket.csv`` of a store bracketed with ``softrank bracket --mode full`` (every
construction searched for its own least rank) and prints, per family and eps, the median over
operators of ``rank_c / min_c' rank_c'`` for each construction c (a construction that found no
witness in range counts as p = min(m, N)), and how often each construction is the best.

    softrank study constructions STORE/bracket.csv [--eps 0.25]
"""

from __future__ import annotations

import statistics

from softrank.replay.tolerance import Tolerance
from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
from softrank.errors import InputError


def _num(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _at(rows: list[dict], eps: Tolerance) -> list[dict]:
    """The rows of ``bracket.csv`` (a table file read back: ``Tolerance.from_table``) at ``eps``."""
    out = []
    for r in rows:
        try:
            if Tolerance.from_table(r.get("eps"), "bracket.csv") == eps:
                out.append(r)
        except InputError:
            continue  # not a tolerance: no row of eps
    return out


def construction_ratios(rows: list[dict], eps) -> dict[str, dict[str, float]]:
    """family -> construction -> median ratio to the best construction; plus '#best' shares, over
    the rows of tolerance ``eps`` (``Tolerance.parse``; rows joined on the exact value)."""
    at_eps = _at(rows, Tolerance.parse(eps))
    out: dict[str, dict[str, float]] = {}
    fams = sorted({r["family"] for r in at_eps})
    for fam in fams + ["all"]:
        sel = [r for r in at_eps if fam == "all" or r["family"] == fam]
        ratios: dict[str, list[float]] = {c: [] for c in ALL_CONSTRUCTIONS}
        wins: dict[str, int] = {c: 0 for c in ALL_CONSTRUCTIONS}
        for r in sel:
            p = min(int(r["m"]), int(r["N"]))
            ranks = {c: (_num(r.get(f"rank_{c}")) or p) for c in ALL_CONSTRUCTIONS}
            best = max(1, min(ranks.values()))
            for c, k in ranks.items():
                ratios[c].append(k / best)
                wins[c] += k == best
        if sel:
            out[fam] = {c: statistics.median(v) for c, v in ratios.items()}
            out[fam].update({f"best_share_{c}": wins[c] / len(sel) for c in ALL_CONSTRUCTIONS})
            out[fam]["operators"] = len(sel)
    return out
