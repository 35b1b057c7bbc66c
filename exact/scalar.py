"""Rational scalars: the one door from binary64 and the one reader of a rational written as text
(``parse_rational``), with the bounds on its size.  ``exact/rational.py`` builds its matrices on
them; the record reader needs only these.  Proof of the conversions: ``proofs/exact_rationals.md``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from numbers import Integral

from flint import fmpq

from softrank.errors import InputError

ZERO = Fraction(0)  # the exact zero and one of every exact module (exact/, oracle/)
ONE = Fraction(1)

MAX_DIGITS = 400  # digits accepted in each part of a rational written as text
MAX_EXPONENT = 999  # largest |exponent| accepted in decimal text ("1e-999"); bigger ones are refused
_D = rf"\d{{1,{MAX_DIGITS}}}"
_RATIONAL_TEXT = re.compile(rf"^\s*[+-]?({_D}(\.\d{{0,{MAX_DIGITS}}})?|\.{_D})([eE][+-]?\d{{1,3}})?(\s*/\s*{_D})?\s*$", re.ASCII)
SIZE_LIMIT = f"at most {MAX_DIGITS} digits per part and exponents of at most {MAX_EXPONENT}"


def from_binary64(x: float, where: str = "input", field: str = "") -> Fraction:
    """The one door from binary64 into rationals: the exact value of a finite float.

    NaN and infinities are rejected with ``InputError``.  ``Fraction(x)`` of a finite binary64 is
    exact (every finite binary64 is a dyadic rational).
    """
    if not isinstance(x, float):
        raise InputError(where, field, f"expected a binary64 float, got {type(x).__name__}")
    if not math.isfinite(x):
        raise InputError(where, field, f"non-finite value {x!r}")
    return Fraction(x)


def parse_rational(obj, where: str = "input", field: str = "") -> Fraction:
    """Read one exact rational.

    Accepted: ``int`` (not bool), ``Fraction``, FLINT ``fmpq``, strings such as ``"3/7"``,
    ``"-2"``, ``"0.25"`` or ``"1e-3"`` (read as exact decimals), and finite binary64 floats
    (through :func:`from_binary64`, i.e. their exact binary value).  Anything else is an
    ``InputError``.
    """
    if isinstance(obj, bool):
        raise InputError(where, field, f"not a rational number: {obj!r}")
    if isinstance(obj, Fraction):
        return obj
    if isinstance(obj, Integral):
        return Fraction(int(obj))
    if isinstance(obj, fmpq):
        return Fraction(int(obj.p), int(obj.q))
    if isinstance(obj, float):
        return from_binary64(obj, where, field)
    if isinstance(obj, str):
        if not _RATIONAL_TEXT.match(obj):
            raise InputError(where, field, f"not a rational number with {SIZE_LIMIT}: {_shown(obj)}")
        try:
            value = Fraction(obj.replace(" ", ""))
        except (ValueError, ZeroDivisionError) as err:
            raise InputError(where, field, f"not a rational number: {_shown(obj)} ({err})") from None
        return value
    raise InputError(where, field, f"not a rational number: {obj!r}")


def _shown(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[: limit - 3]) + "..."
