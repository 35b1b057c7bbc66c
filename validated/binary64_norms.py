"""Proven bounds on norms of exact reals given by binary64 computations, for the lower
certificates (Lemmas E, F, P, D).  Each bound is an exact rational, computed from the floats that
were actually produced, by the rules R1 (sums of non-negative terms), R2 (one rounding) and R3
(dot products), stated and proved in proofs/binary64_error_bounds.md; the functions here are its
bounds N1-N5.

The assumptions are ``softrank.validated.float_bounds.BINARY64_ASSUMPTIONS``.  Every function
returns ``None`` when an intermediate is not finite (a bound is then unavailable, never small).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from softrank.validated.balls import float_at_least, float_at_most
from softrank.validated.float_bounds import UNDERFLOW_ETA, UNIT_ROUNDOFF, gamma

U = UNIT_ROUNDOFF
ETA = UNDERFLOW_ETA


def sqrt_upper(q: Fraction) -> Fraction:
    """An exact rational >= sqrt(q) for q >= 0: one ulp above math.sqrt, checked exactly (so no
    assumption on how sqrt rounds: a failed check is an ``ArithmeticError``, never a wrong bound);
    beyond binary64's range ``isqrt(ceil(q)) + 1``, exact integer arithmetic."""
    f = float_at_least(q) if q > 0 else 0.0
    if not math.isfinite(f):  # beyond binary64: an integer root, exactly
        return Fraction(math.isqrt(math.ceil(q)) + 1)
    r = Fraction(math.nextafter(math.sqrt(f), math.inf)) if q > 0 else Fraction(0)
    if r * r < q:
        raise ArithmeticError("math.sqrt is not correctly rounded here")
    return r


def sqrt_lower(q: Fraction) -> Fraction:
    """An exact rational <= sqrt(q) (0 for q <= 0), checked exactly as above."""
    f = float_at_most(q) if q > 0 else 0.0
    r = Fraction(math.nextafter(math.sqrt(f), 0.0)) if f > 0 else Fraction(0)
    if r * r > max(q, 0):
        raise ArithmeticError("math.sqrt is not correctly rounded here")
    return r


def _sum_sq(x: np.ndarray) -> float | None:
    """Binary64 evaluation of sum of x_ij^2 (a dot product of length x.size); None if not finite."""
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is the None below, not a warning
        s = float(np.dot(x.ravel(), x.ravel()))
    return s if math.isfinite(s) else None


def _max_row_sq(x: np.ndarray) -> float | None:
    """Binary64 evaluation of max_j ||X_j||_2^2 (dot products of length x.shape[1])."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = float(np.max(np.einsum("ij,ij->i", x, x)))
    return s if math.isfinite(s) else None


def _dot_upper(s: float | None, n: int) -> Fraction | None:
    """R3 for a non-negative dot product of length n computed as s: exact <= (s + n eta)/(1 - gamma_n)."""
    return None if s is None else (Fraction(s) + n * ETA) / (1 - gamma(n))


def _dot_lower(s: float | None, n: int) -> Fraction | None:
    """R3: exact >= (s - n eta)/(1 + gamma_n), and >= 0."""
    return None if s is None else max(Fraction(0), (Fraction(s) - n * ETA) / (1 + gamma(n)))


def frobenius_sq_upper(x: np.ndarray) -> Fraction | None:
    """``>= ||X||_F^2`` for the exact binary64 entries of X (R3 on the dot product x^T x)."""
    return Fraction(0) if x.size == 0 else _dot_upper(_sum_sq(x), x.size)


def frobenius_upper(x: np.ndarray) -> Fraction | None:
    """``>= ||X||_F``."""
    q = frobenius_sq_upper(x)
    return None if q is None else sqrt_upper(q)


def frobenius_sq_lower(x: np.ndarray) -> Fraction | None:
    """``<= ||X||_F^2`` (R3)."""
    return Fraction(0) if x.size == 0 else _dot_lower(_sum_sq(x), x.size)


def max_row_sq_upper(x: np.ndarray) -> Fraction | None:
    """``>= max_j ||X_j||_2^2`` over the rows X_j of X."""
    return Fraction(0) if x.size == 0 else _dot_upper(_max_row_sq(x), x.shape[1])


def max_row_sq_lower(x: np.ndarray) -> Fraction | None:
    """``<= max_j ||X_j||_2^2``."""
    return Fraction(0) if x.size == 0 else _dot_lower(_max_row_sq(x), x.shape[1])


def max_abs_rowsum(x: np.ndarray) -> float:
    """Binary64 evaluation of ``max_i sum_j |X_ij|`` (|x| is exact; 0 for an empty X; inf or NaN on
    overflow): the float that the two bounds below charge, and the producer's own value."""
    return float(np.max(np.abs(x).sum(axis=1))) if x.size else 0.0


def _rowsum_bound(x: np.ndarray, up: bool) -> Fraction | None:
    """R1 on ``max_abs_rowsum``: the exact value is within a factor ``1 -+ gamma_N`` of it."""
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is the None below, not a warning
        s = max_abs_rowsum(x)
    return None if not math.isfinite(s) else Fraction(s) / (1 - gamma(x.shape[1]) if up else 1 + gamma(x.shape[1]))


def max_abs_rowsum_upper(x: np.ndarray) -> Fraction | None:
    """``>= max_i sum_j |X_ij|``; None on overflow."""
    return _rowsum_bound(x, up=True)


def max_abs_rowsum_lower(x: np.ndarray) -> Fraction | None:
    """``<= max_i sum_j |X_ij|``; None on overflow."""
    return _rowsum_bound(x, up=False)


def nonneg_product_rowsum_upper(x: np.ndarray, y: np.ndarray) -> Fraction | None:
    """``>= max_i sum_j (X Y)_ij`` for non-negative X (a x b) and Y (b x c), exact products.

    ``(X Y) 1 = X (Y 1)``: c_exact <= fl(Y 1) / (1 - gamma_c) (R1), then
    ``X fl(Y 1) <= (fl(X fl(Y 1)) + b eta) / (1 - gamma_b)`` (R3, non-negative products)."""
    a, b = x.shape
    c = y.shape[1]
    if a == 0 or b == 0 or c == 0:
        return Fraction(0)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is the None below, not a warning
        v = float(np.max(x @ y.sum(axis=1)))
    if not math.isfinite(v):
        return None
    return (Fraction(v) + b * ETA) / ((1 - gamma(b)) * (1 - gamma(c)))


def product_error_frobenius_upper(x_frob: Fraction, y_frob: Fraction, inner: int, rows: int,
                                  cols: int) -> Fraction:
    """``>= ||fl(X Y) - X Y||_F`` for X (rows x inner), Y (inner x cols) with ``||X||_F <= x_frob``,
    ``||Y||_F <= y_frob``: entrywise R3 gives ``gamma_inner |X||Y| + inner eta``, and
    ``|| |X| |Y| ||_F <= ||X||_F ||Y||_F``."""
    if inner == 0:
        return Fraction(0)
    return gamma(inner) * x_frob * y_frob + sqrt_upper(Fraction(rows * cols)) * inner * ETA
