"""Exact linear programming: an LP answer is returned only with a certificate checked in rationals.

Form (all variables free; bounds are rows)::

    minimise  c.x   subject to   A_ub x <= b_ub,   A_eq x = b_eq.

Certificates (proofs/exact_lp_verification.md):

- optimal:    x primal feasible, y >= 0, c + A_ub^T y + A_eq^T z = 0, and c.x = -(b_ub.y + b_eq.z)
              (weak duality then makes c.x the exact optimum);
- infeasible: Farkas vector y >= 0, A_ub^T y + A_eq^T z = 0, b_ub.y + b_eq.z < 0;
- unbounded:  x feasible and a ray d with A_ub d <= 0, A_eq d = 0, c.d < 0.

Route: float64 HiGHS gives a basis; the basis system is solved exactly and the candidate certificate
is checked by the functions ``check_*`` below (a few HiGHS settings in turn, since a basis optimal in
binary64 may not be optimal in rationals).  If every one fails, an exact
rational simplex (``softrank.advisors.simplex``) solves the LP from scratch, and its certificate is
checked by the same functions.  No LP result leaves this module unchecked.  Both routes are
advisors (``softrank.advisors``): what they propose is accepted only through ``check_result``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction


from softrank.advisors import highs, simplex

ZERO = Fraction(0)


class LPVerificationError(ArithmeticError):
    """No route produced a certificate that checks (a bug: the exact simplex always should)."""


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

def _dot(u, v) -> Fraction:
    """Dot product of two dense vectors."""
    return sum((a * b for a, b in zip(u, v) if a and b), ZERO)


def _entries(row):
    """(column, value) pairs of a dense or sparse row."""
    return row.items() if isinstance(row, dict) else enumerate(row)


def _row_dot(row, x) -> Fraction:
    """Dot product of a dense or sparse row with a dense vector x."""
    return sum((a * x[j] for j, a in _entries(row) if a), ZERO)


def _At_y(rows, y, n) -> list[Fraction]:
    out = [ZERO] * n
    for row, yi in zip(rows, y):
        if yi:
            for j, a in _entries(row):
                if a:
                    out[j] += a * yi
    return out


def check_primal(lp: LP, x) -> bool:
    """x satisfies every row exactly."""
    if x is None or len(x) != lp.n:
        return False
    return all(_row_dot(r, x) <= b for r, b in zip(lp.A_ub, lp.b_ub)) and all(
        _row_dot(r, x) == b for r, b in zip(lp.A_eq, lp.b_eq)
    )


def _combination(lp: LP, y, z) -> list[Fraction] | None:
    if y is None or z is None or len(y) != len(lp.A_ub) or len(z) != len(lp.A_eq):
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
    if not check_primal(lp, x) or d is None or len(d) != lp.n:
        return False
    return (
        all(_row_dot(r, d) <= 0 for r in lp.A_ub)
        and all(_row_dot(r, d) == 0 for r in lp.A_eq)
        and _dot(lp.c, d) < 0
    )


def check_result(lp: LP, res: LPResult) -> bool:
    if res.status == "optimal":
        return check_optimal(lp, res.x, res.y, res.z) and res.value == _dot(lp.c, res.x)
    if res.status == "infeasible":
        return check_farkas(lp, res.y, res.z)
    if res.status == "unbounded":
        return check_unbounded(lp, res.x, res.ray)
    return False


# ---------------------------------------------------------------- solving

def _result(proposal) -> LPResult:
    """An advisor's proposal as an (as yet unchecked) LPResult; only ``check_result`` accepts it."""
    return LPResult(proposal.status, x=proposal.x, y=proposal.y, z=proposal.z, ray=proposal.ray,
                    value=proposal.value, route=proposal.route)


#: counters for tests and the benchmark: how often each route produced the checked answer
STATS = {"highs-basis": 0, "exact-simplex": 0, "highs-failed": 0}


def solve(lp: LP, method: str = "auto") -> LPResult:
    """Exact optimum / Farkas / ray of ``lp``, checked by :func:`check_result`.

    ``method``: ``"auto"`` (HiGHS basis, then exact simplex), ``"highs"`` (HiGHS basis only; raises
    ``LPVerificationError`` if its certificate does not check) or ``"simplex"`` (exact simplex only).
    """
    lp.validate()
    if method in ("auto", "highs"):
        for attempt in range(highs.ATTEMPTS):  # HiGHS settings in turn, each basis checked exactly
            proposal = highs.solve_via_basis(lp, attempt)
            res = None if proposal is None else _result(proposal)
            if res is not None and check_result(lp, res):
                STATS["highs-basis"] += 1
                return res
            STATS["highs-failed"] += 1
        if method == "highs":
            raise LPVerificationError("HiGHS basis did not give a checked certificate")
    elif method != "simplex":
        raise ValueError(f"unknown LP method {method!r}")
    res = _result(simplex.solve(lp))
    if not check_result(lp, res):  # pragma: no cover - would be a bug in simplex.py
        raise LPVerificationError("exact simplex produced a certificate that does not check")
    STATS["exact-simplex"] += 1
    return res


@dataclass
class Feasibility:
    feasible: bool
    x: list[Fraction] | None = None  # a point satisfying every row (feasible)
    y: list[Fraction] | None = None  # Farkas multipliers of the <= rows (infeasible)
    z: list[Fraction] | None = None  # Farkas multipliers of the = rows (infeasible)
    route: str = ""


def feasibility(lp: LP, method: str = "auto") -> Feasibility:
    """Decide whether ``A_ub x <= b_ub, A_eq x = b_eq`` has a solution, exactly (c is ignored).

    Solved as the elastic LP ``min s  s.t.  A_ub x - s <= b_ub, +-(A_eq x - b_eq) - s <= 0,
    -s <= 0``, which is always feasible and bounded.  Optimum 0: its x is a solution (checked).
    Optimum > 0: its dual restricted to the original rows is a Farkas vector (checked).
    """
    lp.validate()
    n, p, q = lp.n, len(lp.A_ub), len(lp.A_eq)
    one, neg = Fraction(1), Fraction(-1)
    rows = [{**dict(_entries(r)), n: neg} for r in lp.A_ub]
    rows += [{**dict(_entries(r)), n: neg} for r in lp.A_eq]
    rows += [{**{j: -a for j, a in _entries(r)}, n: neg} for r in lp.A_eq]
    rows.append({n: neg})
    rhs = list(lp.b_ub) + list(lp.b_eq) + [-b for b in lp.b_eq] + [ZERO]
    elastic = LP(c=[ZERO] * n + [one], A_ub=rows, b_ub=rhs)
    res = solve(elastic, method)
    if res.status != "optimal":  # pragma: no cover - the elastic LP is feasible and bounded
        raise LPVerificationError("elastic LP not optimal")
    if res.value == 0:
        x = res.x[:n]
        if not check_primal(lp, x):  # pragma: no cover - implied by the elastic optimum
            raise LPVerificationError("elastic optimum 0 but x violates a row")
        return Feasibility(True, x=x, route=res.route)
    y = res.y[:p]
    z = [a - b for a, b in zip(res.y[p : p + q], res.y[p + q : p + 2 * q])]
    if not check_farkas(lp, y, z):  # pragma: no cover - implied by the elastic optimum
        raise LPVerificationError("elastic optimum > 0 but its dual is not a Farkas vector")
    return Feasibility(False, y=y, z=z, route=res.route)


class Builder:
    """Build an LP by named variables and labelled rows (labels map multipliers back)."""

    def __init__(self):
        self.names: dict = {}
        self.ub_rows: list[dict] = []
        self.ub_rhs: list[Fraction] = []
        self.ub_labels: list = []
        self.eq_rows: list[dict] = []
        self.eq_rhs: list[Fraction] = []
        self.eq_labels: list = []
        self.cost: dict = {}

    def var(self, name) -> int:
        if name not in self.names:
            self.names[name] = len(self.names)
        return self.names[name]

    def le(self, coefs: dict, rhs, label) -> None:
        self.ub_rows.append({self.var(k): Fraction(v) for k, v in coefs.items() if v != 0})
        self.ub_rhs.append(Fraction(rhs))
        self.ub_labels.append(label)

    def eq(self, coefs: dict, rhs, label) -> None:
        self.eq_rows.append({self.var(k): Fraction(v) for k, v in coefs.items() if v != 0})
        self.eq_rhs.append(Fraction(rhs))
        self.eq_labels.append(label)

    def minimise(self, coefs: dict) -> None:
        self.cost = {self.var(k): Fraction(v) for k, v in coefs.items()}

    def build(self) -> LP:
        """The LP with sparse rows (copies of the builder's)."""
        n = len(self.names)
        c = [ZERO] * n
        for j, v in self.cost.items():
            c[j] = v
        return LP(
            c=c,
            A_ub=[dict(r) for r in self.ub_rows],
            b_ub=list(self.ub_rhs),
            A_eq=[dict(r) for r in self.eq_rows],
            b_eq=list(self.eq_rhs),
        )

    def value(self, x, name) -> Fraction:
        return x[self.names[name]]

    def ub_multipliers(self, y) -> dict:
        return dict(zip(self.ub_labels, y))

    def eq_multipliers(self, z) -> dict:
        return dict(zip(self.eq_labels, z))

