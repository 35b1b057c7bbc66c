"""Regenerate the six kept cells of tests/cells/ (deterministic searches; run from the repo root:
``.venv/bin/python tests/cells/make_cells.py``).  The test (tests/test_oracle_cells.py) never runs
this: it re-checks the stored certificates exactly and re-derives the stored verdicts.

Each cell file holds A, eps, the verdicts at the ranks that pin r_eps(A) in both classes (with
their certificates) and the exact profiles.  The ``special`` cell was found by the search below:
unrestricted r_eps = 1 while stochastic r_eps = 2.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction as F
from pathlib import Path

from softrank.exact.rational import fmt, fmt_mat
from softrank.oracle.search import profile

HERE = Path(__file__).resolve().parent


def stochastic(rng, m, n, top=4):
    rows = []
    for _ in range(m):
        w = [rng.randint(0, top) for _ in range(n)]
        if sum(w) == 0:
            w[0] = 1
        rows.append([F(x, sum(w)) for x in w])
    return rows


def signed(rng, m, n):
    return [[F(rng.randint(-4, 4), rng.randint(1, 4)) for _ in range(n)] for _ in range(m)]


def search_special(seed=2):
    """3x3 stochastic A, eps in {1/20..19/20}: unrestricted r = 1 and stochastic r = 2."""
    rng = random.Random(seed)
    while True:
        A = stochastic(rng, 3, 3)
        for eps in [F(a, 20) for a in range(1, 20)]:
            if profile(A, eps, search=False).rank == 1 and profile(A, eps, "stochastic").rank == 2:
                return A, eps


def search(pred, gen, seed):
    rng = random.Random(seed)
    while True:
        A = gen(rng)
        for eps in [F(a, 20) for a in range(1, 20)]:
            if pred(A, eps):
                return A, eps


def record(name, description, A, eps):
    cell = {"name": name, "description": description, "A": fmt_mat(A), "eps": fmt(eps),
            "profiles": {}, "verdicts": []}
    for klass in ("unrestricted", "stochastic"):
        p = profile(A, eps, klass)
        cell["profiles"][klass] = {"lower": p.lower, "upper": p.upper, "rank": p.rank,
                                   "thresholds": {str(k): fmt(v) for k, v in sorted(p.thresholds.items())}}
        for d in p.decisions:
            if d.verdict == "outside-scope":
                continue
            assert d.recheck()
            cell["verdicts"].append({"k": d.k, "class": klass, "verdict": d.verdict,
                                     "reduction": d.reduction, "proof": d.proof, "certificate": d.certificate})
    (HERE / f"{name}.json").write_text(json.dumps(cell, indent=1) + "\n")
    print(name, {k: (v["lower"], v["upper"], v["rank"]) for k, v in cell["profiles"].items()})


def main():
    A, eps = search_special()
    record("special_unres1_stoch2", "found by search: unrestricted r_eps = 1 (witness at k=1, row norm at k=0); "
           "stochastic r_eps = 2 (dual certificate at k=1, exact witness at k=2)", A, eps)

    def r2_many_patterns(A, eps):
        p = profile(A, eps, search=False)
        if p.rank != 2:
            return False
        cert = next(d.certificate for d in p.decisions if d.k == 1)
        return len(cert["patterns"]) >= 3

    A, eps = search(r2_many_patterns, lambda r: stochastic(r, 3, 3, 9), 3)
    record("stochastic3x3_r2", "3x3 stochastic, unrestricted r = 2: rank 1 refuted by signed dual certificates "
           "(several sign patterns), rank 2 feasible through a kernel vector (k = N - 1)", A, eps)

    A = [[F(1), F(0)], [F(1, 2), F(1, 2)]]
    record("boundary2x2", "eps equals the exact threshold eps*_1 = 1/||A^-1||_inf = 1/3: rank 1 is feasible "
           "only with equality, a case binary64 cannot settle", A, F(1, 3))

    A, eps = search(lambda A, e: profile(A, e, search=False).rank == 3, lambda r: stochastic(r, 3, 4, 9), 4)
    record("rect3x4_r3", "3x4, r = 3: rank 2 = m - 1 refuted by one w per orthant (cokernel duals)", A, eps)

    def free_rows(A, eps):
        return (profile(A, eps, search=False).rank == 1
                and sum(sum(abs(x) for x in r) <= eps for r in A) >= 1)

    A, eps = search(free_rows, lambda r: [[F(x, 8) for x in row] for row in stochastic(r, 4, 3, 4)][:2]
                    + stochastic(r, 2, 3, 4), 5)
    record("free_rows4x3", "4x3 with rows of l1 norm <= eps (free rows, b_i = 0): r = 1 with a rank-1 witness "
           "whose free rows are zero", A, eps)

    A, eps = search(lambda A, e: profile(A, e, search=False).rank == 3, lambda r: signed(r, 4, 3), 6)
    record("signed4x3_r3", "4x3 with negative entries, r = 3: rank 2 = N - 1 refuted by kernel duals; the "
           "stochastic class is empty within eps (a row is too far from the simplex)", A, eps)


if __name__ == "__main__":
    main()
