"""Exact linear programming: the LP form and the exact checks of an LP answer's certificate.

Form (all variables free; bounds are rows)::

    minimise  c.x   subject to   A_ub x <= b_ub,   A_eq x = b_eq.

Certificates (proofs/exact_lp_verification.md):

- optimal:    x primal feasible, y >= 0, c + A_ub^T y + A_eq^T z = 0, and c.x = -(b_ub.y + b_eq.z)
              (weak duality then makes c.x the exact optimum);
- infeasible: Farkas vector y >= 0, A_ub^T y + A_eq^T z = 0, b_ub.y + b_eq.z < 0;
- unbounded:  x feasible and a ray d with A_ub d <= 0, A_eq d = 0, c.d < 0.

Fraction arithmetic only; nothing here solves an LP.  The solver that proposes answers (HiGHS's
basis, then an exact simplex, both advisors) is ``softrank.oracle.search.lp`` (untrusted): what it
returns has passed ``check_result`` below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from softrank.exact.rational import ZERO


@dataclass
class LP:
    """``min c.x  s.t.  A_ub x <= b_ub, A_eq x = b_eq`` with x free.  A row is a dense list of n
    Fractions or a sparse dict ``{column: Fraction}`` (absent columns are 0; ``Builder`` makes
    sparse rows, so an LP with thousands of columns does not hold n entries per row)."""

    c: list[Fraction]
    A_ub: list = field(default_factory=list)
    b_ub: list[Fraction] = field(default_factory=list)
    A_eq: list = field(default_factory=list)
    b_eq: list[Fraction] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.c)

    def validate(self) -> None:
        n = self.n
        if len(self.A_ub) != len(self.b_ub) or len(self.A_eq) != len(self.b_eq):
            raise ValueError("LP: row and right-hand-side counts differ")
        if not (_all_exact(self.c) and _all_exact(self.b_ub) and _all_exact(self.b_eq)
                and all(_all_exact(v for _, v in entries(row)) for row in self.A_ub + self.A_eq)):
            raise ValueError("LP: an entry is not an exact rational (int or Fraction)")
        for row in self.A_ub + self.A_eq:
            if isinstance(row, dict):
                if any(not isinstance(j, int) or isinstance(j, bool) or not 0 <= j < n for j in row):
                    raise ValueError("LP: a sparse row names a column outside [0, n)")
            elif len(row) != n:
                raise ValueError("LP: row length differs from the number of variables")


@dataclass
class LPResult:
    status: str  # "optimal" | "infeasible" | "unbounded"
    x: list[Fraction] | None = None  # primal point (optimal, unbounded)
    y: list[Fraction] | None = None  # multipliers of the <= rows (optimal duals or Farkas)
    z: list[Fraction] | None = None  # multipliers of the = rows
    ray: list[Fraction] | None = None  # unbounded direction
    value: Fraction | None = None  # exact optimum
    route: str = ""  # "highs-basis" or "exact-simplex"


# ---------------------------------------------------------------- exact checks (Fraction only)

def _is_exact(v) -> bool:
    """An int (not a bool) or a Fraction: a float would make the checks below binary64 arithmetic."""
    return isinstance(v, (int, Fraction)) and not isinstance(v, bool)


def _all_exact(vs) -> bool:
    return all(_is_exact(v) for v in vs)


def _dot(u, v) -> Fraction:
    """Dot product of two dense vectors."""
    return sum((a * b for a, b in zip(u, v) if a and b), ZERO)


def entries(row):
    """(column, value) pairs of a dense or sparse row."""
    return row.items() if isinstance(row, dict) else enumerate(row)


def _row_dot(row, x) -> Fraction:
    """Dot product of a dense or sparse row with a dense vector x."""
    return sum((a * x[j] for j, a in entries(row) if a), ZERO)


def _At_y(rows, y, n) -> list[Fraction]:
    out = [ZERO] * n
    for row, yi in zip(rows, y):
        if yi:
            for j, a in entries(row):
                if a:
                    out[j] += a * yi
    return out


def check_primal(lp: LP, x) -> bool:
    """x satisfies every row exactly."""
    if x is None or len(x) != lp.n or not _all_exact(x):
        return False
    return all(_row_dot(r, x) <= b for r, b in zip(lp.A_ub, lp.b_ub)) and all(
        _row_dot(r, x) == b for r, b in zip(lp.A_eq, lp.b_eq)
    )


def _combination(lp: LP, y, z) -> list[Fraction] | None:
    if y is None or z is None or len(y) != len(lp.A_ub) or len(z) != len(lp.A_eq):
        return None
    if not (_all_exact(y) and _all_exact(z)):
        return None
    if any(v < 0 for v in y):
        return None
    g = _At_y(lp.A_ub, y, lp.n)
    for j, v in enumerate(_At_y(lp.A_eq, z, lp.n)):
        g[j] += v
    return g


def check_optimal(lp: LP, x, y, z) -> bool:
    """Primal feasibility, dual feasibility, equal objectives: c.x is the exact optimum."""
    if not check_primal(lp, x):
        return False
    g = _combination(lp, y, z)
    if g is None or any(cj + gj != 0 for cj, gj in zip(lp.c, g)):
        return False
    return _dot(lp.c, x) == -(_dot(lp.b_ub, y) + _dot(lp.b_eq, z))


def check_farkas(lp: LP, y, z) -> bool:
    """y >= 0, A_ub^T y + A_eq^T z = 0 and b_ub.y + b_eq.z < 0: the rows have no common solution."""
    g = _combination(lp, y, z)
    if g is None or any(gj != 0 for gj in g):
        return False
    return _dot(lp.b_ub, y) + _dot(lp.b_eq, z) < 0


def check_unbounded(lp: LP, x, d) -> bool:
    if not check_primal(lp, x) or d is None or len(d) != lp.n or not _all_exact(d):
        return False
    return (
        all(_row_dot(r, d) <= 0 for r in lp.A_ub)
        and all(_row_dot(r, d) == 0 for r in lp.A_eq)
        and _dot(lp.c, d) < 0
    )


def check_result(lp: LP, res: LPResult) -> bool:
    """The certificate of ``res`` proves its status for ``lp``, in exact arithmetic (an LP or a
    certificate with a non-rational entry is not checked: False)."""
    try:
        lp.validate()
    except ValueError:
        return False
    if res.status == "optimal":
        return (check_optimal(lp, res.x, res.y, res.z) and _is_exact(res.value)
                and res.value == _dot(lp.c, res.x))
    if res.status == "infeasible":
        return check_farkas(lp, res.y, res.z)
    if res.status == "unbounded":
        return check_unbounded(lp, res.x, res.ray)
    return False
