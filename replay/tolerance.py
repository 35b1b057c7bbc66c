"""One tolerance eps in (0, 1): its exact value, its text and its nearest binary64 number.

The package's one ``Tolerance`` class, and the one place where anything becomes a tolerance.  It
is built once, where a tolerance enters, and travels unchanged to every table:

- ``value``: the exact rational (equality, hashing and order are by this value only);
- ``text``: how tables print it and the producer stores it (``exact_text``: ``"0.15"``, or
  ``"1/3"`` when the decimal expansion is infinite or too long; a tolerance read from a record
  keeps its written text when that text is exact, else ``binary64(0.1)`` for a binary64 JSON number);
- ``binary64``: the nearest binary64 number, with which the float64 producer computes.

Where a tolerance enters, and what reads it:

- ``Tolerance.parse`` (``parse_list`` for several): a user's text or Python number (the command
  line, the Python api, the studies).  Text is the exact rational it spells (``"0.15"``,
  ``"3/20"`` and ``"1.5e-1"`` are one tolerance, 3/20); a Python float means the decimal it prints
  as (``0.15`` is 3/20, as on the command line); an int or a ``Fraction`` is itself.
- ``Tolerance.from_record``: a record's JSON ``eps`` field, as the trusted record reader
  (``softrank.replay.reader``) reads it: a JSON number is the exact value of that binary64 number.
- ``Tolerance.from_table``: the ``eps`` column of a table file read back (``softrank report``,
  ``softrank regress``, a study's input), as the table printed it.

One printer: ``exact_text``.  Within one run nothing turns printed text back into a tolerance: the
``Tolerance`` itself travels (tests/repository/test_tolerance_names.py keeps the other parsers out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Rational, Real

from softrank.exact.scalar import MAX_DIGITS, _shown, parse_rational
from softrank.errors import InputError

BINARY64 = "binary64("


def short(value, limit: int = 60, quote: bool = True) -> str:
    """A value as shown in an error message: ``repr`` (or ``str``), cut to ``limit`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    text = repr(value) if quote else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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

    @property
    def json_field(self):
        """The ``eps`` field a record holds: the text, or the JSON number of a ``binary64(...)``."""
        return self.binary64 if self.text.startswith(BINARY64) else self.text

    @classmethod
    def exact(cls, value: Fraction) -> "Tolerance":
        """The tolerance of an exact rational, printed by ``exact_text``."""
        value = Fraction(value)
        return cls(value, exact_text(value), float(value))

    @classmethod
    def parse(cls, obj, field: str = "eps", where: str = "arguments", keep_text: bool = False) -> "Tolerance":
        """The one parser of a user's tolerance (module docstring), strictly inside (0, 1); printed
        by ``exact_text``, or with ``keep_text`` as given when that text is exact (``Tolerance.stored``)."""
        if isinstance(obj, Tolerance):
            return obj
        if isinstance(obj, str):
            value, shown = parse_rational(obj, where, field), obj
        else:
            value, shown = _value_of_number(obj, where, field)
        if not 0 < value < 1:
            raise InputError(where, field, f"eps must lie in (0, 1), got {shown}")
        return cls.stored(value, shown) if keep_text else cls.exact(value)

    @classmethod
    def parse_list(cls, items, field: str = "eps", where: str = "arguments", most: int | None = None,
                   keep_text: bool = False, ordered: bool = False) -> list["Tolerance"]:
        """Several tolerances (``parse`` each; ``items`` may be text, its items separated by commas):
        equal values once, sorted; none at all, more than ``most``, or two whose nearest binary64
        numbers coincide (or round to 0 or 1) is an ``InputError``: a float64 bracket could not tell
        them apart.  ``ordered``: in the given order instead, without the binary64 separation (a
        choice among stored tolerances)."""
        if isinstance(items, str):
            items = [part.strip() for part in items.split(",") if part.strip()]
        parsed = [cls.parse(item, field, where, keep_text) for item in items]
        values = list(dict.fromkeys(parsed)) if ordered else sorted(set(parsed))
        if not values:
            raise InputError(where, field, "no tolerance given")
        if most is not None and len(values) > most:
            raise InputError(where, field, f"{len(values)} tolerances, more than the {most} a record may hold")
        if not ordered:
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
        """A record's ``eps`` field, strictly inside (0, 1), as the record reader reads it: a float
        (a JSON number) is its exact binary64 value, an integer or a ``Fraction`` itself, a string
        ``"p/q"`` or ``"0.25"`` that exact rational (bounded size); printed as ``stored``."""
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str, Fraction)):
            raise InputError(where, field, f"expected a number or a string 'p/q', got {short(raw)}")
        if isinstance(raw, float) and not math.isfinite(raw):
            raise InputError(where, field, f"must be finite, got {raw!r}")
        written = (f"{raw.numerator}/{raw.denominator}" if isinstance(raw, Fraction)
                   else short(raw) if isinstance(raw, int) else str(raw))
        value = parse_rational(raw, where, field)
        if not 0 < value < 1:
            raise InputError(where, field, f"eps must lie in (0, 1), got {written}")
        return cls.stored(value, written)

    @classmethod
    def from_table(cls, text: str, where: str = "table", field: str = "eps") -> "Tolerance":
        """A table file's ``eps`` cell as the table printed it (``text``: exact text or
        ``binary64(...)``); the text is kept as printed."""
        if not isinstance(text, str):
            raise InputError(where, field, f"expected text, got {type(text).__name__}")
        if text.startswith(BINARY64) and text.endswith(")"):
            try:
                x = float(parse_rational(text[len(BINARY64):-1], where, field))
            except OverflowError:
                raise InputError(where, field, f"not a finite binary64 number: {_shown(text)}") from None
            return cls(Fraction(x), text, x)
        value = parse_rational(text, where, field)
        try:
            return cls(value, text, float(value))
        except OverflowError:
            raise InputError(where, field, f"not a finite binary64 number: {_shown(text)}") from None


def check_binary64(tolerances, field: str = "eps", where: str = "arguments") -> None:
    """``InputError`` when a tolerance's nearest binary64 number is 0 or 1 or two coincide."""
    floats = [t.binary64 for t in tolerances]
    for t, f in zip(tolerances, floats):
        if not 0 < f < 1:
            raise InputError(where, field, f"eps {t.value} rounds to {f!r} in binary64")
    if len(set(floats)) < len(floats):
        raise InputError(where, field, "two tolerances have the same nearest binary64 number")
