"""The door from binary64 into Arb balls, certain comparisons, and exact float conversions.

Every function here is exact or rounds outward; none of them rounds to nearest in a direction
that could make a bound unsafe.
"""

from __future__ import annotations

import decimal
import math
import sys
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx

from softrank.validated.precision import PRECISION, working_precision


def exact_fraction(x: arb) -> Fraction:
    """The exact value of an exact (zero-radius) ball, e.g. an endpoint from ``x.upper()``."""
    if not x.is_exact() or not x.is_finite():
        raise ValueError("exact_fraction needs a finite exact ball")
    man, exp = (int(v) for v in x.man_exp())
    return man * Fraction(2) ** exp


EXP_LIMIT = 1 << 16  # end points of magnitude outside [2^-(EXP_LIMIT+1), 2^EXP_LIMIT) are rounded outward


def _end_point(ball: arb, up: bool) -> Fraction:
    """The upper (``up``) or lower end point of ``ball``, read at the working precision or
    ``PRECISION["ball_end_points"]`` bits, whichever is more (Arb rounds it outward to that precision), as an
    exact rational; when its magnitude lies outside ``[2^-(EXP_LIMIT+1), 2^EXP_LIMIT)``, a rational
    on its outer side (>= it if ``up``, else <= it): Arb exponents are unbounded (exp(-1e308) is a
    ball near 2^(-1.4e308)), and writing such a number as a Fraction would never finish.  An upper
    end of 2^EXP_LIMIT or more (or a lower end of -2^EXP_LIMIT or less) has no such bound:
    ``OverflowError``."""
    with working_precision(max(ctx.prec, PRECISION["ball_end_points"])):
        x = ball.upper() if up else ball.lower()
    if not x.is_exact() or not x.is_finite():
        raise ValueError("an end point must be a finite exact ball")
    man, exp = (int(v) for v in x.man_exp())
    top = exp + abs(man).bit_length()  # 2^(top - 1) <= |x| < 2^top (man != 0)
    if man != 0 and top < -EXP_LIMIT:  # |x| < 2^-(EXP_LIMIT+1)
        tiny = Fraction(1, 1 << EXP_LIMIT)
        return (tiny if man > 0 else Fraction(0)) if up else (Fraction(0) if man > 0 else -tiny)
    if top > EXP_LIMIT and (man < 0) == up:  # |x| >= 2^EXP_LIMIT on the inner side of the bound
        return Fraction(-(1 << EXP_LIMIT) if up else 1 << EXP_LIMIT)
    if top > EXP_LIMIT:
        raise OverflowError(f"a ball end point beyond 2^{EXP_LIMIT}")
    return exact_fraction(x)  # 2^-(EXP_LIMIT+1) <= |x| < 2^EXP_LIMIT, or 0: exact (the mantissa may be long)


def upper_fraction(x: arb) -> Fraction:
    """An exact rational >= every point of the ball ``x`` (``_end_point``)."""
    return _end_point(x, up=True)


def lower_fraction(x: arb) -> Fraction:
    """An exact rational <= every point of the ball ``x`` (``_end_point``)."""
    return _end_point(x, up=False)


def float_at_least(q: Fraction) -> float:
    """The least binary64 number >= the rational ``q`` (overflow gives inf, still >= q)."""
    try:
        f = float(q)  # rounds to nearest; step up if it fell below
    except OverflowError:
        return math.inf if q > 0 else -sys.float_info.max
    if math.isfinite(f) and Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def float_at_most(q: Fraction) -> float:
    """The greatest binary64 number <= the rational ``q`` (overflow gives -inf, still <= q)."""
    try:
        f = float(q)
    except OverflowError:
        return -math.inf if q < 0 else sys.float_info.max
    if math.isfinite(f) and Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def decimal_at_least(q: Fraction, digits: int = 17) -> str:
    """A decimal with ``digits`` significant digits whose exact value is >= ``q`` (rounded up): how
    an upper bound is printed, so that the printed number never claims more than was proved."""
    return _decimal(q, digits, decimal.ROUND_CEILING)


def decimal_at_most(q: Fraction, digits: int = 17) -> str:
    """A decimal with ``digits`` significant digits whose exact value is <= ``q`` (rounded down)."""
    return _decimal(q, digits, decimal.ROUND_FLOOR)


def scientific_text(q: Fraction) -> str:
    """``q`` for a message (a margin, not a bound): ``+1.234e-05``; beyond binary64's range, where
    ``float(q)`` would raise, the decimal rounded toward zero (``-5.000e+308``)."""
    try:
        return f"{float(q):+.3e}"
    except OverflowError:
        text = _decimal(q, 4, decimal.ROUND_DOWN)
        return text if text.startswith("-") else "+" + text


def _decimal(q: Fraction, digits: int, rounding: str) -> str:
    with decimal.localcontext() as dc:
        dc.prec, dc.rounding, dc.Emax, dc.Emin = digits, rounding, decimal.MAX_EMAX, decimal.MIN_EMIN
        d = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)  # correctly rounded
    return f"{d:g}" if d != 0 else "0"


def arb_mat_from_floats(x: np.ndarray) -> arb_mat:
    """Zero-radius ball matrix with the exact binary64 entries of the 2-d array ``x``."""
    return arb_mat(x.shape[0], x.shape[1], np.ascontiguousarray(x).ravel().tolist())


def arb_max(balls) -> arb:
    """A ball containing the largest of the (non-empty) reals contained in ``balls``."""
    balls = list(balls)
    best = balls[0]
    for b in balls[1:]:
        best = best.max(b)
    return best


def certainly_le(x: arb, bound: Fraction) -> bool:
    """True only when every point of ``x`` is <= ``bound``. False means *not certain*."""
    return x.is_finite() and upper_fraction(x) <= bound


def certainly_gt(x: arb, bound: Fraction) -> bool:
    """True only when every point of ``x`` is > ``bound``. False means *not certain*."""
    return x.is_finite() and lower_fraction(x) > bound
