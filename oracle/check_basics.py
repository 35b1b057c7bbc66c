"""Parsing and small exact helpers shared by the re-checkers (``checks``, ``threshold_checks``,
``radon_checks``, ``subcell_checks``): Fraction arithmetic only, no solver.

Malformed numbers raise ``ValueError``; the table in ``softrank.oracle.checks`` turns that into
a rejection.
"""

from __future__ import annotations

from fractions import Fraction

ZERO = Fraction(0)
ONE = Fraction(1)


def as_rational(x) -> Fraction:
    if isinstance(x, bool):
        raise TypeError("bool is not a rational")
    if isinstance(x, (int, Fraction)):
        return Fraction(x)
    if isinstance(x, str):
        return Fraction(x)
    raise TypeError(f"not a rational: {x!r}")


def as_vector(v, n=None) -> list[Fraction]:
    out = [as_rational(x) for x in v]
    if n is not None and len(out) != n:
        raise ValueError("vector of the wrong length")
    return out


def as_matrix(M, rows=None, cols=None) -> list[list[Fraction]]:
    out = [as_vector(r, cols) for r in M]
    if rows is not None and len(out) != rows:
        raise ValueError("matrix with the wrong number of rows")
    return out


def l1(v) -> Fraction:
    return sum((abs(x) for x in v), ZERO)


def dot(u, v) -> Fraction:
    return sum((a * b for a, b in zip(u, v)), ZERO)


def simplex_distance(a) -> Fraction:
    """min over probability vectors p of ||a - p||_1 = |P - 1| + Q (P, Q: positive, negative mass)."""
    P = sum((x for x in a if x > 0), ZERO)
    Q = -sum((x for x in a if x < 0), ZERO)
    return abs(P - 1) + Q
