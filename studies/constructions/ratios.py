"""Rank each upper construction needs relative to the best one (the construction study).

Reads the ``bracket.csv`` of a store bracketed with ``softrank bracket --mode full`` (every
construction searched for its own least rank) and prints, per family and eps, the median over
operators of ``rank_c / min_c' rank_c'`` for each construction c (a construction that found no
witness in range counts as p = min(m, N)), and how often each construction is the best.

    softrank study constructions STORE/bracket.csv [--eps 0.25]
"""

from __future__ import annotations

import statistics

from softrank.exact.tolerance import Tolerance
from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
from softrank.validated.errors import InputError


def _num(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _value(text):
    """The exact tolerance a ``bracket.csv`` row prints (None when it is not one)."""
    try:
        return Tolerance.from_printed(text).value
    except InputError:
        return None


def construction_ratios(rows: list[dict], eps) -> dict[str, dict[str, float]]:
    """family -> construction -> median ratio to the best construction; plus '#best' shares, over
    the rows of tolerance ``eps`` (``Tolerance.parse``; rows joined on the exact value)."""
    eps = Tolerance.parse(eps)
    at_eps = [r for r in rows if _value(r.get("eps")) == eps.value]
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
