"""One tolerance eps in (0, 1): its exact value, its text and its nearest binary64 number.

A ``Tolerance`` is built once, where a tolerance first enters (the command line, the Python api,
a record, a replay table), and travels unchanged to every table:

- ``value``: the exact rational (equality, hashing and order are by this value only);
- ``text``: how records store it and tables print it (``exact_text``: ``"0.15"``, or ``"1/3"``
  when the decimal expansion is infinite or too long; a tolerance read from a record keeps its
  written text when that text is exact, else ``binary64(0.1)`` for a binary64 JSON number);
- ``binary64``: the nearest binary64 number, with which the float64 producer computes.

One parser (``Tolerance.parse``) reads the text or Python number a user gives: text is the exact
rational it spells (``"0.15"``, ``"3/20"`` and ``"1.5e-1"`` are one tolerance, 3/20); a Python
float means the decimal it prints as (``0.15`` is 3/20, as on the command line); an int or a
``Fraction`` is itself.  A record's JSON field is read as the record reader reads it
(``Tolerance.from_record``: a JSON number is the exact value of that binary64 number), and a
table's printed text as it was printed (``Tolerance.from_printed``).  One printer:
``exact_text``.

Imports only the standard library and the shared error type, so that every part (the trusted
reader included) may use it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Rational, Real

from softrank.validated.errors import InputError

MAX_DIGITS = 400  # digits per part of a rational written as text (as softrank.exact.rational)
MAX_EXPONENT = 999  # largest |exponent| of decimal text
_D = rf"\d{{1,{MAX_DIGITS}}}"
_TEXT = re.compile(rf"^\s*[+-]?({_D}(\.\d{{0,{MAX_DIGITS}}})?|\.{_D})([eE][+-]?\d{{1,3}})?(\s*/\s*{_D})?\s*$", re.ASCII)
SIZE_LIMIT = f"at most {MAX_DIGITS} digits per part and exponents of at most {MAX_EXPONENT}"
BINARY64 = "binary64("


def exact_text(q) -> str:
    """The exact text of a rational: a decimal when it has a finite decimal expansion of at most
    ``MAX_DIGITS`` digits on each side (3/20 -> ``"0.15"``), else ``"p/q"`` (``"1/3"``).
    ``Fraction(text) == q``, and the record reader reads the text as exactly ``q``."""
    q = Fraction(q)
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    k = max(twos, fives)
    digits = str(abs(q.numerator) * 10**k // q.denominator).rjust(k + 1, "0")
    if d != 1 or k > MAX_DIGITS or len(digits) - k > MAX_DIGITS:
        return f"{q.numerator}/{q.denominator}"
    return ("-" if q < 0 else "") + (f"{digits[:-k]}.{digits[-k:]}" if k else digits)


def _shown(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[: limit - 3]) + "..."


def rational_of_text(text: str, where: str = "arguments", field: str = "eps") -> Fraction:
    """The exact rational that decimal or ``p/q`` text spells (bounded size), else ``InputError``."""
    if not _TEXT.match(text):
        raise InputError(where, field, f"not a rational number with {SIZE_LIMIT}: {_shown(text)}")
    try:
        return Fraction(text.replace(" ", ""))
    except (ValueError, ZeroDivisionError) as err:
        raise InputError(where, field, f"not a rational number: {_shown(text)} ({err})") from None


def _value_of_number(obj, where: str, field: str) -> tuple[Fraction, str]:
    """A Python number given by a user: (exact value, the text shown in messages)."""
    if isinstance(obj, bool):
        raise InputError(where, field, f"not a rational number: {obj!r}")
    if isinstance(obj, Integral):
        return Fraction(int(obj)), str(int(obj))
    if isinstance(obj, Rational):
        return Fraction(obj.numerator, obj.denominator), str(obj)
    if isinstance(obj, Real):  # float, numpy floats: the decimal the number prints as
        x = float(obj)
        if not math.isfinite(x):
            raise InputError(where, field, f"non-finite value {x!r}")
        return Fraction(repr(x)), repr(x)
    raise InputError(where, field, f"not a rational number: {obj!r}")


@dataclass(frozen=True, order=True)
class Tolerance:
    """One tolerance: exact ``value``, ``text`` as stored and printed, nearest ``binary64``."""

    value: Fraction
    text: str = field(compare=False)
    binary64: float = field(compare=False)

    def __str__(self) -> str:
        return self.text

    @classmethod
    def exact(cls, value: Fraction) -> "Tolerance":
        """The tolerance of an exact rational, printed by ``exact_text``."""
        value = Fraction(value)
        return cls(value, exact_text(value), float(value))

    @classmethod
    def parse(cls, obj, field: str = "eps", where: str = "arguments") -> "Tolerance":
        """The one parser of a user's tolerance (module docstring), strictly inside (0, 1)."""
        if isinstance(obj, Tolerance):
            return obj
        if isinstance(obj, str):
            value, shown = rational_of_text(obj, where, field), obj
        else:
            value, shown = _value_of_number(obj, where, field)
        if not 0 < value < 1:
            raise InputError(where, field, f"eps must lie in (0, 1), got {shown}")
        return cls.exact(value)

    @classmethod
    def parse_list(cls, items, field: str = "eps", where: str = "arguments") -> list["Tolerance"]:
        """Several tolerances (``parse`` each): equal values once, sorted.  None at all, or two whose
        nearest binary64 numbers coincide (or round to 0 or 1), is an ``InputError``: a float64
        bracket could not tell them apart."""
        values = sorted(set(cls.parse(item, field, where) for item in items))
        if not values:
            raise InputError(where, field, "no tolerance given")
        check_binary64(values, field, where)
        return values

    @classmethod
    def stored(cls, value: Fraction, written: str) -> "Tolerance":
        """A tolerance as a record holds it: its exact ``value`` and the ``written`` text of its
        field.  Printed as written when that text is exact; a binary64 JSON number whose text is
        not exact prints ``binary64(0.1)``; anything else ``p/q``."""
        value = Fraction(value)
        try:
            if Fraction(written) == value:
                return cls(value, written, float(value))
        except (ValueError, ZeroDivisionError):
            pass
        try:
            if Fraction(float(written)) == value:
                return cls(value, f"{BINARY64}{written})", float(value))
        except (ValueError, OverflowError):
            pass
        return cls(value, f"{value.numerator}/{value.denominator}", float(value))

    @classmethod
    def from_record(cls, raw, where: str = "record", field: str = "eps") -> "Tolerance":
        """A record's JSON ``eps`` field as the record reader reads it: text is the rational it
        spells; a JSON number is the exact value of that binary64 number."""
        if isinstance(raw, str):
            value = rational_of_text(raw, where, field)
        elif isinstance(raw, float) and math.isfinite(raw):
            value = Fraction(raw)
        elif isinstance(raw, int) and not isinstance(raw, bool):
            value = Fraction(raw)
        else:
            raise InputError(where, field, f"expected a number or a string 'p/q', got {type(raw).__name__}")
        return cls.stored(value, raw if isinstance(raw, str) else str(raw))

    @classmethod
    def from_printed(cls, text: str, where: str = "table", field: str = "eps") -> "Tolerance":
        """A tolerance as a table printed it (``text``: exact text or ``binary64(...)``); the text
        is kept as printed."""
        if not isinstance(text, str):
            raise InputError(where, field, f"expected text, got {type(text).__name__}")
        if text.startswith(BINARY64) and text.endswith(")"):
            try:
                x = float(rational_of_text(text[len(BINARY64):-1], where, field))
            except OverflowError:
                raise InputError(where, field, f"not a finite binary64 number: {_shown(text)}") from None
            return cls(Fraction(x), text, x)
        value = rational_of_text(text, where, field)
        return cls(value, text, float(value))


def check_binary64(tolerances, field: str = "eps", where: str = "arguments") -> None:
    """``InputError`` when a tolerance's nearest binary64 number is 0 or 1 or two coincide."""
    floats = [t.binary64 for t in tolerances]
    for t, f in zip(tolerances, floats):
        if not 0 < f < 1:
            raise InputError(where, field, f"eps {t.value} rounds to {f!r} in binary64")
    if len(set(floats)) < len(floats):
        raise InputError(where, field, "two tolerances have the same nearest binary64 number")
