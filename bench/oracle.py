"""``softrank bench oracle``: the exact oracle's two timing targets (docs/oracle.md).

1. Full profile (every k up to rank A, with thresholds) of 3x3 rational cells: median seconds
   (target: under 2 s).
2. A rank-1 decision on a 6x6 cell whose six rows all exceed eps, so the signed reduction has
   2^5 = 32 sign patterns: once with every pattern solved (no pruning, the worst case) and once
   with depth-first pruning (target: under 30 s).
3. The full profile of one attention-like 20 x 20 cell (12 x 12 with ``--quick``): rows
   proportional to round(1000 exp(g)) + 1, g standard normal, eps 1/4; seconds, the exact bracket,
   and how many ranks each route settled (no target: the size a profile reaches in seconds).

Every verdict's certificate is re-checked exactly inside the timed call.  Prints JSON.
"""

from __future__ import annotations

import random
import statistics
import time
from fractions import Fraction

from softrank.cli.output import print_json


def _stochastic(rng: random.Random, m: int, n: int, top: int = 9):
    rows = []
    for _ in range(m):
        w = [rng.randint(1, top) for _ in range(n)]
        s = sum(w)
        rows.append([Fraction(x, s) for x in w])
    return rows


def main(args) -> int:
    from softrank.oracle.search import decide, profile
    from softrank.oracle.search.lp import STATS

    repeats, quick = args.repeats, bool(args.quick)
    rng = random.Random(20260)
    out: dict = {"benchmark": "oracle", "repeats": repeats}

    # 1. 3x3 full profiles
    cells = [(_stochastic(rng, 3, 3), Fraction(rng.randint(1, 9), 20)) for _ in range(repeats)]
    times, ranks = [], []
    profile(*cells[0])  # warm the imports (scipy, HiGHS binding)
    for A, eps in cells:
        t = time.perf_counter()
        p = profile(A, eps)
        times.append(time.perf_counter() - t)
        assert all(d.recheck() for d in p.decisions)
        ranks.append(p.rank)
    out["profile_3x3"] = {"median_s": statistics.median(times), "max_s": max(times), "ranks": ranks,
                          "target_s": 2.0, "ok": statistics.median(times) < 2.0}

    # 2. 6x6 rank-1 decision, 32 sign patterns
    n = 4 if quick else 6
    A = _stochastic(rng, n, n)
    eps = Fraction(1, 5)
    assert all(sum(abs(x) for x in r) > eps for r in A)
    res = {}
    for prune in (False, True):
        before = dict(STATS)
        t = time.perf_counter()
        v = decide(A, eps, 1, prune=prune)
        dt = time.perf_counter() - t
        ok = v.recheck()
        res["pruned" if prune else "all_patterns"] = {
            "seconds": dt, "verdict": v.verdict, "recheck": ok,
            "patterns_in_certificate": len(v.certificate.get("patterns", [])) if v.certificate else 0,
            "lps": sum(STATS[k] - before[k] for k in ("highs-basis", "exact-simplex")),
            "exact_simplex_fallbacks": STATS["exact-simplex"] - before["exact-simplex"],
        }
    out[f"rank1_{n}x{n}"] = {**res, "sign_patterns": 2 ** (n - 1), "target_s": 30.0,
                             "ok": res["all_patterns"]["seconds"] < 30.0}
    # 3. a mid-size attention-like cell, full profile
    import math

    n = 12 if quick else 20
    cell_rng = random.Random(20)
    A = []
    for _ in range(n):
        w = [round(1000 * math.exp(cell_rng.gauss(0, 1))) + 1 for _ in range(n)]
        A.append([Fraction(x, sum(w)) for x in w])
    t = time.perf_counter()
    p = profile(A, Fraction(1, 4))
    dt = time.perf_counter() - t
    routes: dict = {}
    for d in p.decisions:
        routes[d.reduction] = routes.get(d.reduction, 0) + 1
    out[f"profile_{n}x{n}"] = {"seconds": dt, "lower": p.lower, "upper": p.upper, "closed": p.rank is not None,
                               "ranks_by_route": routes, "recheck": all(d.recheck() for d in p.decisions)}
    print_json(out, indent=2)
    return 0
