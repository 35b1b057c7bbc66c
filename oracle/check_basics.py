"""Parsing and small exact helpers shared by every re-checker (``checks`` and the ``*_checks``
modules): Fraction arithmetic only, no solver.

Malformed numbers raise ``ValueError`` or ``TypeError``; ``softrank.oracle.checks.recheck`` and
``threshold_checks.check_threshold`` turn that into a rejection.  A number written as text is
bounded before it is read: at most ``MAX_TEXT`` characters and an exponent of at most three digits
(``Fraction("1e-999999999")`` alone would build a billion-digit integer); anything else is
refused.  An integer (an index, a sign, a rank) must be a JSON integer: ``as_int`` and ``as_ints``
are the one reader of them.
"""

from __future__ import annotations

import re
from fractions import Fraction

from softrank.exact.rational import ONE, ZERO

MAX_TEXT = 10_000  # characters of a rational as text (two 4,300-digit parts, Python's int limit, fit)
_TEXT = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?(/\d+)?\s*", re.ASCII)


def as_rational(x) -> Fraction:
    if isinstance(x, bool):
        raise TypeError("bool is not a rational")
    if isinstance(x, (int, Fraction)):
        return Fraction(x)
    if isinstance(x, str):
        if len(x) > MAX_TEXT or not _TEXT.fullmatch(x):
            raise ValueError("not a rational of bounded size")
        return Fraction(x)
    raise TypeError(f"not a rational: {x!r}")


def as_int(x) -> int:
    """A JSON integer (row or column index, sign, rank): a Python int that is not a bool.  Anything
    else (1.5, the text "2", true, a dict, a list) raises ``ValueError``; nothing is converted."""
    if isinstance(x, bool) or not isinstance(x, int):
        raise ValueError(f"not a JSON integer: {type(x).__name__}")
    return x


def as_ints(items) -> list[int]:
    """A JSON list of integers (indices or signs).  A text, a dict or any other non-list raises
    ``ValueError``: the text "12" is not the list [1, 2]."""
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"not a JSON list of integers: {type(items).__name__}")
    return [as_int(x) for x in items]


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
