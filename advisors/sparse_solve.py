"""Exact sparse linear solves for the HiGHS advisor (untrusted: whatever it returns is re-checked).

The basis systems of the oracle's LPs are large and very sparse: most rows tie one auxiliary
variable (an absolute value, a slack) to two or three others.  A dense rational solve of such a
system costs O(n^3) operations on growing rationals (minutes and gigabytes at n ~ 3,000), while
Gaussian elimination that keeps the rows sparse and picks its pivots by the Markowitz rule
(least ``(row count - 1) * (column count - 1)``, rows with few entries first) eliminates the
auxiliary variables with little fill-in and leaves a small dense core.  Below ``DENSE_AT`` rows the
remaining core is handed to FLINT's dense ``fmpq_mat`` solver.

``solve(rows, rhs, n)`` returns ``x`` (a list of ``Fraction``) with ``rows x = rhs``, or ``None``
when the elimination meets a singular system.
"""

from __future__ import annotations

import heapq
from fractions import Fraction

from flint import fmpq, fmpq_mat

#: remaining rows at which the elimination stops and the dense core goes to FLINT
DENSE_AT = 400
#: a remaining row with at least this many entries (relative to the core) marks the core dense
DENSE_SHARE = 0.25


def solve(rows: list[dict[int, Fraction]], rhs: list[Fraction], n: int) -> list[Fraction] | None:
    """Exact solution of the square system ``rows x = rhs`` (rows as ``{column: value}``)."""
    if len(rows) != n:
        return None
    live = {r: dict(row) for r, row in enumerate(rows)}
    b = {r: Fraction(v) for r, v in enumerate(rhs)}
    cols: dict[int, set[int]] = {j: set() for j in range(n)}
    for r, row in live.items():
        for j in row:
            if not 0 <= j < n:
                return None
            cols[j].add(r)
    heap = [(len(row), r) for r, row in live.items()]
    heapq.heapify(heap)
    pivots: list[tuple[int, dict[int, Fraction], Fraction]] = []  # (column, row, rhs) in order
    while live:
        if len(live) <= DENSE_AT and _dense_enough(live):
            break
        nnz, r = heapq.heappop(heap)
        if r not in live or len(live[r]) != nnz:
            continue  # a stale entry
        row = live.pop(r)
        if not row:
            return None  # an empty remaining row: singular
        c = min(row, key=lambda j: (len(cols[j]), j))
        for j in row:
            cols[j].discard(r)
        piv, br = row[c], b.pop(r)
        for r2 in list(cols[c]):
            row2 = live[r2]
            f = row2[c] / piv
            for j, v in row.items():
                w = row2.get(j, 0) - f * v
                if w:
                    if j not in row2:
                        cols[j].add(r2)
                    row2[j] = w
                elif j in row2:
                    del row2[j]
                    cols[j].discard(r2)
            b[r2] -= f * br
            heapq.heappush(heap, (len(row2), r2))
        del cols[c]
        pivots.append((c, row, br))
    x: dict[int, Fraction] = {}
    if live:
        core = _dense_core(live, b, cols)
        if core is None:
            return None
        x.update(core)
    for c, row, br in reversed(pivots):
        s = br - sum((v * x[j] for j, v in row.items() if j != c), Fraction(0))
        x[c] = s / row[c]
    if len(x) != n:
        return None
    return [x[j] for j in range(n)]


def _dense_enough(live: dict[int, dict[int, Fraction]]) -> bool:
    """Every remaining row has many entries: sparse elimination no longer pays."""
    least = min(len(row) for row in live.values())
    return least >= max(2, DENSE_SHARE * len(live))


def _dense_core(live, b, cols) -> dict[int, Fraction] | None:
    """Solve the remaining square core densely with FLINT."""
    rs = sorted(live)
    cs = sorted(cols)
    if len(rs) != len(cs):
        return None
    where = {j: t for t, j in enumerate(cs)}
    k = len(rs)
    M = fmpq_mat(k, k)
    for t, r in enumerate(rs):
        for j, v in live[r].items():
            M[t, where[j]] = fmpq(v.numerator, v.denominator)
    rhs = fmpq_mat(k, 1, [fmpq(b[r].numerator, b[r].denominator) for r in rs])
    try:
        sol = M.solve(rhs)
    except ZeroDivisionError:
        return None
    return {j: Fraction(int(sol[t, 0].p), int(sol[t, 0].q)) for t, j in enumerate(cs)}
