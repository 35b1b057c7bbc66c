"""Untrusted advisors the oracle's search consults (``softrank.oracle.search``).

Each advisor proposes an answer to a linear program (a basis from float64 HiGHS, a certificate
from an exact rational simplex).  A proposal is never used as a result: the search's LP solve
(``softrank.oracle.search.lp``) re-checks it in rationals (``softrank.exact.lp.check_result``)
and accepts only what checks.  Advisors import
nothing from the trusted core; they read an LP through its fields ``c, A_ub, b_ub, A_eq, b_eq``
(lists of ``Fraction``; a row is a dense list or a sparse dict ``{column: value}``, read through
:func:`entries`) and answer with a :class:`Proposal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass
class Proposal:
    """A candidate LP answer; every field is unverified until the core checks it."""

    status: str  # "optimal" | "infeasible" | "unbounded"
    x: list[Fraction] | None = None
    y: list[Fraction] | None = None
    z: list[Fraction] | None = None
    ray: list[Fraction] | None = None
    value: Fraction | None = None
    route: str = ""


def entries(row):
    """(column, value) pairs of an LP row, dense list or sparse dict."""
    return row.items() if isinstance(row, dict) else enumerate(row)
