"""Exact rational two-phase simplex (dense tableau, Bland's rule): the fallback of ``oracle.search.lp``.

Untrusted like HiGHS: it only proposes certificates, which ``exact.lp.check_result`` re-checks.
Bland's rule (least index enters, least index leaves among ties) guarantees termination.

Standard form: x = x+ - x-, a slack per <= row, rows negated so right-hand sides are >= 0, and
an artificial variable per row that has no slack basic at the start.
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mat

from softrank.advisors import Proposal, entries


_ZERO = fmpq(0)


def _q(a: Fraction) -> fmpq:
    return fmpq(a.numerator, a.denominator)


def _f(a: fmpq) -> Fraction:
    return Fraction(int(a.p), int(a.q))


class _Tableau:
    """The standard form of an LP as a dense rational tableau, with Bland's-rule pivoting."""

    def __init__(self, lp):
        n, p = lp.n, len(lp.A_ub)
        rows = [(r, b) for r, b in zip(lp.A_ub, lp.b_ub)] + [(r, b) for r, b in zip(lp.A_eq, lp.b_eq)]
        self.n, self.p, self.R = n, p, len(rows)
        self.rho = [1 if b >= 0 else -1 for _, b in rows]
        art_rows = [i for i in range(self.R) if i >= p or self.rho[i] < 0]
        self.C = C = 2 * n + p + len(art_rows)
        art_col = {i: 2 * n + p + t for t, i in enumerate(art_rows)}
        # the standard-form matrix A' (rows already multiplied by rho) and right-hand side
        self.A0 = []
        for i, (r, b) in enumerate(rows):
            s = self.rho[i]
            line = [_ZERO] * (C + 1)
            for j, a in entries(r):
                if a:
                    line[j] = _q(a * s)
                    line[n + j] = _q(-a * s)
            if i < p:
                line[2 * n + i] = fmpq(s)
            if i in art_col:
                line[art_col[i]] = fmpq(1)
            line[C] = _q(b * s)
            self.A0.append(line)
        self.T = [list(line) for line in self.A0]
        self.basis = [art_col[i] if i in art_col else 2 * n + i for i in range(self.R)]
        self.is_art = [False] * C
        for j in art_col.values():
            self.is_art[j] = True

    def objective_row(self, cost):
        obj = list(cost) + [_ZERO]
        for r in range(self.R):
            cb = cost[self.basis[r]]
            if cb:
                obj = [o - cb * t for o, t in zip(obj, self.T[r])]
        return obj

    def pivot(self, obj, r, e):
        T = self.T
        piv = T[r][e]
        if piv != 1:
            inv = 1 / piv
            T[r] = [t * inv for t in T[r]]
        row = T[r]
        for s in range(self.R):
            if s != r:
                f = T[s][e]
                if f:
                    T[s] = [a - f * b for a, b in zip(T[s], row)]
        f = obj[e]
        if f:
            obj[:] = [a - f * b for a, b in zip(obj, row)]
        self.basis[r] = e

    def run(self, obj, allowed):
        """Bland's rule until optimal (returns None) or unbounded (returns the entering column)."""
        T, C = self.T, self.C
        while True:
            e = next((j for j in range(C) if allowed[j] and obj[j] < 0), None)
            if e is None:
                return None
            best = None
            for r in range(self.R):
                a = T[r][e]
                if a > 0:
                    key = (T[r][C] / a, self.basis[r])
                    if best is None or key < best[0]:
                        best = (key, r)
            if best is None:
                return e
            self.pivot(obj, best[1], e)

    def duals(self, cost):
        """pi' with B^T pi' = c_B for the current basis, mapped to the original rows (rho)."""
        R, basis = self.R, self.basis
        B = fmpq_mat(R, R, [self.A0[r][basis[c]] for r in range(R) for c in range(R)])
        cb = fmpq_mat(R, 1, [cost[basis[c]] for c in range(R)])
        pi = B.transpose().solve(cb)
        return [_f(pi[i, 0]) * self.rho[i] for i in range(R)]

    def point(self):
        X = [_ZERO] * self.C
        for r in range(self.R):
            X[self.basis[r]] = self.T[r][self.C]
        return [_f(X[j] - X[self.n + j]) for j in range(self.n)]

    def ray(self, e):
        D = [_ZERO] * self.C
        D[e] = fmpq(1)
        for r in range(self.R):
            D[self.basis[r]] = -self.T[r][e]
        return [_f(D[j] - D[self.n + j]) for j in range(self.n)]

    def drive_out_artificials(self):
        """Pivot artificial variables out of the basis where possible (their value is 0)."""
        for r in range(self.R):
            if self.is_art[self.basis[r]]:
                e = next((j for j in range(self.C) if not self.is_art[j] and self.T[r][j] != 0), None)
                if e is not None:
                    self.pivot([_ZERO] * (self.C + 1), r, e)


def solve(lp) -> Proposal:
    n, p = lp.n, len(lp.A_ub)
    if p + len(lp.A_eq) == 0:
        x = [Fraction(0)] * n
        if all(c == 0 for c in lp.c):
            return Proposal("optimal", x=x, y=[], z=[], value=Fraction(0), route="exact-simplex")
        return Proposal("unbounded", x=x, ray=[-c for c in lp.c], route="exact-simplex")
    tab = _Tableau(lp)
    # phase 1: minimise the sum of the artificial variables
    cost1 = [fmpq(1) if a else _ZERO for a in tab.is_art]
    obj = tab.objective_row(cost1)
    tab.run(obj, [True] * tab.C)
    if -obj[tab.C] > 0:
        pi = tab.duals(cost1)
        return Proposal("infeasible", y=[-v for v in pi[:p]], z=[-v for v in pi[p:]], route="exact-simplex")
    tab.drive_out_artificials()
    # phase 2: the LP's own cost on x = x+ - x-
    cost2 = [_ZERO] * tab.C
    for j, c in enumerate(lp.c):
        cost2[j] = _q(c)
        cost2[n + j] = _q(-c)
    obj = tab.objective_row(cost2)
    e = tab.run(obj, [not a for a in tab.is_art])
    x = tab.point()
    if e is not None:
        return Proposal("unbounded", x=x, ray=tab.ray(e), route="exact-simplex")
    pi = tab.duals(cost2)
    value = sum((c * v for c, v in zip(lp.c, x)), Fraction(0))
    return Proposal(
        "optimal", x=x, y=[-v for v in pi[:p]], z=[-v for v in pi[p:]], value=value, route="exact-simplex"
    )
