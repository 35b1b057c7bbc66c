"""Branch and bound over factor boxes, within a time budget (proofs/oracle_branch_bound.md).

Every B of rank <= k is Z C with Z = B[:, J] for some k columns J and C[:, J] = I, the other
entries of C in [-1, 1].  For each J the box of those entries and of Z is bisected; each box is
either proved empty (an exact Farkas vector of the relaxation rows of
``softrank.oracle.branch_checks``) or split, after the relaxation's C is tried as a row space (one
exact LP gives the best Z for it: a witness if its error is <= eps).  Boxes are taken
breadth-first over all J together.  When the budget runs out the answer is None (outside-scope).
Nothing here is trusted: ``decide`` re-checks what it returns.
"""

from __future__ import annotations

import itertools
import time
from collections import deque

from softrank.advisors import highs
from softrank.exact.rational import ONE, ZERO, fmt
from softrank.oracle.branch_checks import check_farkas_rows, relaxation_rows, root_box
from softrank.oracle.search import lp as xlp
from softrank.oracle.search import polish
from softrank.oracle.search.reductions import witness_certificate


def _proposed(rows):
    """HiGHS's exact basis answer for the elastic form (min s, every row relaxed by s), unchecked:
    (x by name, None) when s = 0, (None, multipliers by row) when s > 0, None without a proposal."""
    b = xlp.Builder()
    for r, (coefs, rhs, eq) in enumerate(rows):
        b.le({**coefs, "s": -1}, rhs, (r, 1))
        if eq:
            b.le({**{v: -x for v, x in coefs.items()}, "s": -1}, -rhs, (r, -1))
    b.le({"s": -1}, 0, "s")
    b.minimise({"s": 1})
    prop = highs.solve_via_basis(b.build())
    if prop is None or prop.status != "optimal":
        return None
    if prop.value == 0:
        x = {name: prop.x[j] for name, j in b.names.items()}
        return (x, None) if _satisfies(rows, x) else None
    mult = {}
    for (label, y) in b.ub_multipliers(prop.y).items():
        if label != "s" and y != 0:
            mult[label[0]] = mult.get(label[0], ZERO) + label[1] * y
    return None, mult


def _satisfies(rows, x) -> bool:
    for coefs, rhs, eq in rows:
        lhs = sum((c * x.get(v, ZERO) for v, c in coefs.items()), ZERO)
        if lhs > rhs or (eq and lhs != rhs):
            return False
    return True


def _solve(rows, method):
    """Feasibility of the rows: (x by variable name, None) or (None, sparse Farkas [[row, y]]).
    A proposed Farkas vector is kept only if ``check_farkas_rows`` accepts it; else the exact LP."""
    if method != "simplex":
        out = _proposed(rows)
        if out is not None and out[0] is not None:
            return out
        if out is not None:
            farkas = [[r, fmt(y)] for r, y in sorted(out[1].items()) if y != 0]
            if check_farkas_rows(rows, farkas):
                return None, farkas
    b = xlp.Builder()
    for r, (coefs, rhs, eq) in enumerate(rows):
        (b.eq if eq else b.le)(coefs, rhs, r)
    res = xlp.feasibility(b.build(), method)
    if res.feasible:
        return {name: res.x[j] for name, j in b.names.items()}, None
    mult = {**b.ub_multipliers(res.y), **b.eq_multipliers(res.z)}
    return None, [[r, fmt(y)] for r, y in sorted(mult.items()) if y != 0]


def _row_space(J, N, x, k):
    """V (k x N): V[:, J] = I, the free entries from the relaxation point."""
    return [[ONE if l == J[t] else (ZERO if l in J else x[("c", t, l)]) for l in range(N)] for t in range(k)]


def _split(box, root, x, J, m, N):
    """For the worst relaxed product z_it c_tl, its factor with the larger width relative to the
    root box; None if every product is exact."""
    free = [l for l in range(N) if l not in J]
    prods = [(i, t, l) for i in range(m) for t in range(len(J)) for l in free]
    if not prods:
        return None
    i, t, l = max(prods, key=lambda p: abs(x[("w", *p)] - x[("z", p[0], p[1])] * x[("c", p[1], p[2])]))
    if x[("w", i, t, l)] == x[("z", i, t)] * x[("c", t, l)]:
        return None

    def rel(key):
        width = root[key][1] - root[key][0]
        return (box[key][1] - box[key][0]) / width if width > 0 else ZERO
    return max((("z", i, t), ("c", t, l)), key=rel)


def _witness(A, eps, klass, J, x, method):
    """The relaxation's C as row space, with the best Z for it (one exact LP)."""
    N, k = len(A[0]), len(J)
    V = _row_space(J, N, x, k)
    X, tau = polish.best_factor(A, V, klass, method)
    if X is None or tau > eps:
        return None
    return witness_certificate(X, [[V[t][j] for t in range(k)] for j in range(N)],
                               construction="branch and bound: row space C of a factor box", columns=list(J))


def decide(A, eps, k, klass, cell, budget):
    """("feasible", witness, reduction) / ("impossible", certificate, reduction), or None when
    the budget (seconds) runs out first."""
    m, N = len(A), len(A[0])
    if not 1 <= k < N:
        return None
    deadline = time.monotonic() + float(budget)
    trees, queue = [], deque()
    # the C(N, k) roots are taken one at a time, ahead of the queue (the same breadth-first order
    # as listing them all first): a huge C(N, k) costs only the budget, never memory
    roots = itertools.combinations(range(N), k)
    while True:
        if time.monotonic() > deadline:
            return None
        J = next(roots, None)
        if J is not None:
            node = {}
            trees.append({"columns": list(J), "tree": node})
            J, box = list(J), root_box(A, eps, klass, list(J))
        elif queue:
            J, node, box = queue.popleft()
        else:
            break
        x, farkas = _solve(relaxation_rows(A, eps, klass, J, box), cell.method)
        cell.stats["lps"] = cell.stats.get("lps", 0) + 1
        if farkas is not None:
            node["y"] = farkas
            continue
        found = _witness(A, eps, klass, J, x, cell.method)
        if found is not None:
            return "feasible", found, "branch-and-bound"
        key = _split(box, root_box(A, eps, klass, J), x, J, m, N)
        if key is None or not box[key][0] < box[key][1]:  # pragma: no cover - exact point: a witness above
            return None
        L, U = box[key]
        at = (L + U) / 2
        node.update(split=[*key, fmt(at)], low={}, high={})
        queue.append((J, node["low"], {**box, key: (L, at)}))
        queue.append((J, node["high"], {**box, key: (at, U)}))
    return "impossible", {"kind": "branch-and-bound", "class": klass, "trees": trees}, "branch-and-bound"
