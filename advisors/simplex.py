"""Exact rational two-phase simplex (dense tableau, Bland's rule): the fallback of ``exact.lp``.

Untrusted like HiGHS: it only proposes certificates, which ``exact.lp.check_result`` re-checks.
Bland's rule (least index enters, least index leaves among ties) guarantees termination.

Standard form: x = x+ - x-, a slack per <= row, rows negated so right-hand sides are >= 0, and
an artificial variable per row that has no slack basic at the start.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mat

from softrank.advisors import Proposal


def _q(a: Fraction) -> fmpq:
    return fmpq(a.numerator, a.denominator)


def _f(a: fmpq) -> Fraction:
    return Fraction(int(a.p), int(a.q))


def solve(lp) -> Proposal:
    n, p, q = lp.n, len(lp.A_ub), len(lp.A_eq)
    R = p + q
    zero = fmpq(0)
    if R == 0:
        x = [Fraction(0)] * n
        if all(c == 0 for c in lp.c):
            return Proposal("optimal", x=x, y=[], z=[], value=Fraction(0), route="exact-simplex")
        return Proposal("unbounded", x=x, ray=[-c for c in lp.c], route="exact-simplex")

    rows = [(r, b) for r, b in zip(lp.A_ub, lp.b_ub)] + [(r, b) for r, b in zip(lp.A_eq, lp.b_eq)]
    rho = [1 if b >= 0 else -1 for _, b in rows]
    art_rows = [i for i in range(R) if i >= p or rho[i] < 0]
    n_art = len(art_rows)
    C = 2 * n + p + n_art
    art_col = {i: 2 * n + p + t for t, i in enumerate(art_rows)}
    # the standard-form matrix A' (rows already multiplied by rho) and right-hand side
    A0 = []
    for i, (r, b) in enumerate(rows):
        s = rho[i]
        line = [zero] * (C + 1)
        for j, a in enumerate(r):
            if a:
                line[j] = _q(a * s)
                line[n + j] = _q(-a * s)
        if i < p:
            line[2 * n + i] = fmpq(s)
        if i in art_col:
            line[art_col[i]] = fmpq(1)
        line[C] = _q(b * s)
        A0.append(line)
    T = [list(line) for line in A0]
    basis = [art_col[i] if i in art_col else 2 * n + i for i in range(R)]
    is_art = [False] * C
    for j in art_col.values():
        is_art[j] = True

    def objective_row(cost):
        obj = list(cost) + [zero]
        for r in range(R):
            cb = cost[basis[r]]
            if cb:
                obj = [o - cb * t for o, t in zip(obj, T[r])]
        return obj

    def pivot(obj, r, e):
        piv = T[r][e]
        if piv != 1:
            inv = 1 / piv
            T[r] = [t * inv for t in T[r]]
        row = T[r]
        for s in range(R):
            if s != r:
                f = T[s][e]
                if f:
                    T[s] = [a - f * b for a, b in zip(T[s], row)]
        f = obj[e]
        if f:
            obj[:] = [a - f * b for a, b in zip(obj, row)]
        basis[r] = e

    def run(obj, allowed):
        """Bland's rule until optimal (returns None) or unbounded (returns the entering column)."""
        while True:
            e = next((j for j in range(C) if allowed[j] and obj[j] < 0), None)
            if e is None:
                return None
            best = None
            for r in range(R):
                a = T[r][e]
                if a > 0:
                    ratio = T[r][C] / a
                    key = (ratio, basis[r])
                    if best is None or key < best[0]:
                        best = (key, r)
            if best is None:
                return e
            pivot(obj, best[1], e)

    def duals(cost):
        """pi' with B^T pi' = c_B for the current basis, mapped to the original rows (rho)."""
        B = fmpq_mat(R, R, [A0[r][basis[c]] for r in range(R) for c in range(R)])
        cb = fmpq_mat(R, 1, [cost[basis[c]] for c in range(R)])
        pi = B.transpose().solve(cb)
        return [_f(pi[i, 0]) * rho[i] for i in range(R)]

    def point():
        X = [zero] * C
        for r in range(R):
            X[basis[r]] = T[r][C]
        return [_f(X[j] - X[n + j]) for j in range(n)]

    # phase 1
    cost1 = [fmpq(1) if is_art[j] else zero for j in range(C)]
    obj = objective_row(cost1)
    run(obj, [True] * C)
    if -obj[C] > 0:
        pi = duals(cost1)
        return Proposal("infeasible", y=[-v for v in pi[:p]], z=[-v for v in pi[p:]], route="exact-simplex")
    # drive artificial variables out of the basis where possible (their value is 0)
    for r in range(R):
        if is_art[basis[r]]:
            e = next((j for j in range(C) if not is_art[j] and T[r][j] != 0), None)
            if e is not None:
                pivot([zero] * (C + 1), r, e)
    # phase 2
    cost2 = [zero] * C
    for j, c in enumerate(lp.c):
        cost2[j] = _q(c)
        cost2[n + j] = _q(-c)
    obj = objective_row(cost2)
    allowed = [not a for a in is_art]
    e = run(obj, allowed)
    x = point()
    if e is not None:
        D = [zero] * C
        D[e] = fmpq(1)
        for r in range(R):
            D[basis[r]] = -T[r][e]
        ray = [_f(D[j] - D[n + j]) for j in range(n)]
        return Proposal("unbounded", x=x, ray=ray, route="exact-simplex")
    pi = duals(cost2)
    value = sum((c * v for c, v in zip(lp.c, x)), Fraction(0))
    return Proposal(
        "optimal", x=x, y=[-v for v in pi[:p]], z=[-v for v in pi[p:]], value=value, route="exact-simplex"
    )
