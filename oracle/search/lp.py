"""Solving exact LPs for the oracle's search (untrusted): advisors propose, the exact checks accept.

Route: float64 HiGHS gives a basis; the basis system is solved exactly and the candidate certificate
is checked by ``softrank.exact.lp.check_result`` (a few HiGHS settings in turn, since a basis
optimal in binary64 may not be optimal in rationals).  If every one fails, an exact rational simplex
(``softrank.advisors.simplex``) solves the LP from scratch, and its certificate is checked by the
same function.  No LP result leaves this module unchecked (proofs/exact_lp_verification.md).

``Builder`` writes an LP by named variables and labelled rows; the trusted form and checks
(``LP``, ``LPResult``, ``check_*``) are those of ``softrank.exact.lp``, re-exported here so that a
search module reaches the whole LP interface through one name.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from softrank.advisors import highs, simplex
from softrank.exact.lp import LP, LPResult, check_farkas, check_primal, check_result, entries
from softrank.exact.rational import ONE, ZERO

__all__ = ["LP", "LPResult", "Builder", "Feasibility", "LPVerificationError", "STATS", "check_farkas",
           "check_primal", "check_result", "feasibility", "solve"]


class LPVerificationError(ArithmeticError):
    """No route produced a certificate that checks (a bug: the exact simplex always should)."""


def _result(proposal) -> LPResult:
    """An advisor's proposal as an (as yet unchecked) LPResult; only ``check_result`` accepts it."""
    return LPResult(proposal.status, x=proposal.x, y=proposal.y, z=proposal.z, ray=proposal.ray,
                    value=proposal.value, route=proposal.route)


#: counters for tests and the benchmark: how often each route produced the checked answer
STATS = {"highs-basis": 0, "exact-simplex": 0, "highs-failed": 0}


def solve(lp: LP, method: str = "auto") -> LPResult:
    """Exact optimum / Farkas / ray of ``lp``, checked by ``softrank.exact.lp.check_result``.

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
    neg = -ONE
    rows = [{**dict(entries(r)), n: neg} for r in lp.A_ub]
    rows += [{**dict(entries(r)), n: neg} for r in lp.A_eq]
    rows += [{**{j: -a for j, a in entries(r)}, n: neg} for r in lp.A_eq]
    rows.append({n: neg})
    rhs = list(lp.b_ub) + list(lp.b_eq) + [-b for b in lp.b_eq] + [ZERO]
    elastic = LP(c=[ZERO] * n + [ONE], A_ub=rows, b_ub=rhs)
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

