"""Rank each upper construction needs relative to the best one (the construction study).

Reads the ``bracket.csv`` of a store bracketed with ``softrank bracket --mode full`` (every
construction searched for its own least rank) and prints, per family and eps, the median over
operators of ``rank_c / min_c' rank_c'`` for each construction c (a construction that found no
witness in range counts as p = min(m, N)), and how often each construction is the best.

    .venv/bin/python -m softrank.fastpath.studies.constructions STORE/bracket.csv [--eps 0.25]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys

from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS


def _num(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def construction_ratios(rows: list[dict], eps: float) -> dict[str, dict[str, float]]:
    """family -> construction -> median ratio to the best construction; plus '#best' shares."""
    out: dict[str, dict[str, float]] = {}
    fams = sorted({r["family"] for r in rows})
    for fam in fams + ["all"]:
        sel = [r for r in rows if (fam == "all" or r["family"] == fam) and abs(float(r["eps"]) - eps) < 1e-12]
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="bracket.csv of a store bracketed with --mode full")
    ap.add_argument("--eps", type=float, default=0.25)
    args = ap.parse_args(argv)
    with open(args.table, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    res = construction_ratios(rows, args.eps)
    print(f"median rank / best construction's rank at eps {args.eps:g}")
    print("family".ljust(10) + "ops".rjust(5) + "".join(c.rjust(10) for c in ALL_CONSTRUCTIONS))
    for fam, d in res.items():
        print(fam.ljust(10) + str(d["operators"]).rjust(5) + "".join(f"{d[c]:10.2f}" for c in ALL_CONSTRUCTIONS))
        print("  best in".ljust(15) + "".join(f"{100 * d['best_share_' + c]:9.0f}%" for c in ALL_CONSTRUCTIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
