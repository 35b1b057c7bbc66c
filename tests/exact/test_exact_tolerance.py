"""``exact/tolerance.py`` (the former name of ``replay/tolerance.py``, re-exported): the exact text
of a rational at the edges of its decimal form, the one parser of a user's tolerance, a record's
and a table's tolerance read back as written, and the binary64 separation of several tolerances."""

from __future__ import annotations

from fractions import Fraction
from fractions import Fraction as F

import numpy as np
import pytest

from softrank.exact.tolerance import BINARY64, MAX_DIGITS, Tolerance, _shown, check_binary64, exact_text
from softrank.errors import InputError


@pytest.mark.parametrize("q, text", [
    (F(3, 20), "0.15"), (F(1, 3), "1/3"), (F(-3, 20), "-0.15"), (F(7), "7"), (F(-7), "-7"), (F(0), "0"),
    (F(1, 8), "0.125"), (F(1, 5), "0.2"), (F(1, 2 ** 10), "0.0009765625"), (F(5, 2), "2.5"),
    (F(-1, 1000), "-0.001"), (F(1, 6), "1/6"), (F(123, 10), "12.3"), (F(1, 2 ** 4 * 5 ** 7), "0.0000008"), (F(3, 2 ** 7 * 5), "0.0046875"),
])
def test_exact_text(q, text):
    assert exact_text(q) == text and F(text) == q


def test_exact_text_at_the_digit_limits():
    at = F(1, 2 ** MAX_DIGITS)  # MAX_DIGITS decimals: still a decimal
    assert "/" not in exact_text(at) and len(exact_text(at)) == MAX_DIGITS + 2 and F(exact_text(at)) == at
    assert exact_text(F(1, 2 ** (MAX_DIGITS + 1))) == f"1/{2 ** (MAX_DIGITS + 1)}"
    big = F(10 ** MAX_DIGITS - 1)  # MAX_DIGITS integer digits
    assert exact_text(big) == str(10 ** MAX_DIGITS - 1)
    assert exact_text(F(10 ** MAX_DIGITS)) == f"{10 ** MAX_DIGITS}/1"
    assert exact_text(F(10 ** MAX_DIGITS - 1, 10)) == "9" * (MAX_DIGITS - 1) + ".9"
    over = F(10 ** (MAX_DIGITS + 1) + 1, 10)  # MAX_DIGITS + 1 integer digits, one decimal
    assert exact_text(over) == f"{over.numerator}/10"


def test_shown_cuts_long_text():
    assert _shown("a" * 60) == repr("a" * 60)
    assert _shown("a" * 61) == repr("a" * 57) + "..."
    assert _shown("abc", limit=3) == repr("abc") and _shown("abcd", limit=3) == repr("") + "..."


@pytest.mark.parametrize("bad", ["", "x", "1/0", "0x1", "1e1000", "1" * (MAX_DIGITS + 1), "1/2/3", "nan"])
def test_text_that_is_no_rational_is_refused(bad):
    with pytest.raises(InputError) as err:
        Tolerance.parse(bad, "eps", "file.json")
    assert str(err.value).startswith("file.json") and "eps" in str(err.value)


def test_parse_reads_text_numbers_and_rationals_alike():
    a = Tolerance.parse("0.15")
    assert a == Tolerance.parse("3/20") == Tolerance.parse(" 1.5e-1 ") == Tolerance.parse(0.15)
    assert a == Tolerance.parse(F(3, 20)) == Tolerance.parse(np.float64(0.15)) and a.text == "0.15"
    assert a.binary64 == 0.15 and a.value == F(3, 20) and str(a) == "0.15"
    assert Tolerance.parse(a) is a
    assert Tolerance.parse(F(1, 3)).text == "1/3" and Tolerance.parse(F(1, 3)).binary64 == 1 / 3


@pytest.mark.parametrize("bad, needle", [
    (0, "(0, 1)"), (1, "(0, 1)"), ("1", "(0, 1)"), ("0", "(0, 1)"), (-0.5, "(0, 1)"), (F(3, 2), "(0, 1)"),
    (True, "not a rational"), (None, "not a rational"), ([0.1], "not a rational"), (float("nan"), "non-finite"),
    (float("inf"), "non-finite"), ("abc", "not a rational"),
])
def test_parse_refuses(bad, needle):
    with pytest.raises(InputError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        Tolerance.parse(bad, "eps", "arguments")


def test_parse_list_sorts_merges_and_separates():
    got = Tolerance.parse_list(["0.35", "0.15", "3/20", 0.25])
    assert [t.text for t in got] == ["0.15", "0.25", "0.35"]
    with pytest.raises(InputError, match="no tolerance"):
        Tolerance.parse_list([])
    close = F(1, 4) + F(1, 2 ** 80)  # different rationals, the same binary64 number
    with pytest.raises(InputError, match="same nearest binary64"):
        Tolerance.parse_list([F(1, 4), close])
    with pytest.raises(InputError, match="rounds to"):
        Tolerance.parse_list([F(1, 2 ** 1100)])
    with pytest.raises(InputError, match="rounds to"):
        check_binary64([Tolerance.exact(1 - F(1, 2 ** 60))])
    check_binary64([Tolerance.exact(F(1, 4)), Tolerance.exact(F(1, 3))])  # distinct, inside: nothing raised


def test_stored_keeps_the_written_text_when_it_is_exact():
    assert Tolerance.stored(F(1, 4), "0.25").text == "0.25"
    assert Tolerance.stored(F(1, 4), "1/4").text == "1/4"
    tenth = F(0.1)  # the binary64 number 0.1, not 1/10
    t = Tolerance.stored(tenth, "0.1")
    assert t.text == BINARY64 + "0.1)" and t.value == tenth and t.binary64 == 0.1
    assert Tolerance.stored(F(1, 3), "0.3").text == "1/3"  # neither exact nor its binary64 number
    assert Tolerance.stored(F(1, 3), "x").text == "1/3" and Tolerance.stored(F(1, 3), "1/0").text == "1/3"
    assert Tolerance.stored(F(1, 3), "1e999").text == "1/3"


def test_from_record_and_from_table_read_back_what_was_written():
    assert Tolerance.from_record("1/4").value == F(1, 4) and Tolerance.from_record("1/4").text == "1/4"
    assert Tolerance.from_record(0.25).text == "0.25" and Tolerance.from_record(0.1).value == F(0.1)
    assert Tolerance.from_record(0.1).text == "binary64(0.1)"
    with pytest.raises(InputError, match=r"eps must lie in \(0, 1\), got 3"):
        Tolerance.from_record(3)  # the reader's rule: strictly inside (0, 1)
    for bad in (True, None, [0.25]):
        with pytest.raises(InputError, match="expected a number"):
            Tolerance.from_record(bad, "r.json", "eps")
    with pytest.raises(InputError, match="must be finite, got nan"):
        Tolerance.from_record(float("nan"), "r.json", "eps")
    printed = Tolerance.from_table("binary64(0.1)")
    assert printed.value == F(0.1) and printed.text == "binary64(0.1)" and printed.binary64 == 0.1
    assert Tolerance.from_table("3/20").value == F(3, 20) and Tolerance.from_table("0.15").text == "0.15"
    with pytest.raises(InputError, match="finite binary64"):
        Tolerance.from_table("binary64(1e400)")
    with pytest.raises(InputError, match="expected text"):
        Tolerance.from_table(0.25)
    with pytest.raises(InputError):
        Tolerance.from_table("binary64(0.1")


def test_tolerances_of_equal_value_are_equal_whatever_their_text():
    """Equality, order and hashing use the exact value only: "1/4", "0.25" and 0.25 are one tolerance."""
    a, b, c = Tolerance.stored(Fraction(1, 4), "1/4"), Tolerance.parse("0.25"), Tolerance.parse(0.25)
    assert a.text != b.text and a == b == c and hash(a) == hash(b) == hash(c) and len({a, b, c}) == 1
    assert not a < b and not b < a


def test_stored_text_is_kept_only_when_it_reads_back_as_the_value():
    """A written text whose binary64 number is another value is not printed as binary64(...):
    the value is printed exactly instead."""
    assert Tolerance.stored(Fraction(1, 10), "0.2").text == "1/10"
    assert Tolerance.stored(Fraction(3, 10), "0.2").text == "3/10"
    assert Tolerance.stored(Fraction(0.1), "0.1").text == "binary64(0.1)"


def test_short_text_in_a_message_is_shown_whole():
    from softrank.exact.tolerance import _shown

    assert _shown("abc") == "'abc'" and _shown("x" * 60) == repr("x" * 60)
    assert _shown("x" * 61) == repr("x" * 57) + "..."
