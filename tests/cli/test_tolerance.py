"""``softrank.replay.tolerance.Tolerance`` as the command line uses it: one parser (text or a
Python number, one or a comma-separated list), one printer, the exact value, the nearest binary64
number; a record's field and a table file's text read back."""

from __future__ import annotations

import pickle
import random
from fractions import Fraction

import pytest

from softrank.replay.tolerance import Tolerance, exact_text
from softrank.errors import InputError


@pytest.mark.parametrize("given", ["0.15", "3/20", "1.5e-1", " 0.150 ", 0.15, Fraction(3, 20), "15/100"])
def test_one_tolerance_however_it_is_written(given):
    t = Tolerance.parse(given)
    assert (t.value, t.text, t.binary64, str(t)) == (Fraction(3, 20), "0.15", 0.15, "0.15")
    assert t == Tolerance.exact(Fraction(3, 20)) and hash(t) == hash(Tolerance.parse("0.15"))


def test_text_of_an_infinite_decimal_and_order():
    third = Tolerance.parse("1/3")
    assert third.text == "1/3" and third.binary64 == 1 / 3
    assert sorted(map(Tolerance.parse, ["0.35", "1/3", 0.25])) == [Tolerance.parse(x) for x in ("1/4", "1/3", "7/20")]
    assert Tolerance.parse(Tolerance.parse("0.25")).text == "0.25"
    assert pickle.loads(pickle.dumps(third)) == third and pickle.loads(pickle.dumps(third)).text == "1/3"


@pytest.mark.parametrize("bad, message", [
    ("0", "eps must lie in (0, 1), got 0"), ("1", "must lie in"), ("3/2", "got 3/2"), ("-1/4", "got -1/4"),
    ("abc", "not a rational number with"), ("1/0", "not a rational number: '1/0'"), ("nan", "not a rational"),
    (float("nan"), "non-finite value nan"), (True, "not a rational number: True"), (None, "not a rational"),
    (1.5, "got 1.5"), ("1e-9999", "not a rational number with"),
])
def test_bad_tolerances_are_one_line(bad, message):
    with pytest.raises(InputError, match="eps") as err:
        Tolerance.parse(bad)
    assert message in err.value.one_line() and err.value.where == "arguments"


def test_lists_are_sorted_once_and_distinct_in_binary64():
    assert [t.text for t in Tolerance.parse_list(["0.35", 0.15, "3/20", "1/4"])] == ["0.15", "0.25", "0.35"]
    for bad in ([], ["1e-400"], ["0.15", "0.15000000000000000001"]):
        with pytest.raises(InputError, match="eps"):
            Tolerance.parse_list(bad)


def test_parse_list_reads_comma_separated_text():
    tolerances = Tolerance.parse_list("0.35, 0.15,0.25,0.15")
    assert [t.value for t in tolerances] == [Fraction(3, 20), Fraction(1, 4), Fraction(7, 20)]
    assert [t.text for t in tolerances] == ["0.15", "0.25", "0.35"]
    assert [t.binary64 for t in tolerances] == [0.15, 0.25, 0.35]
    for bad in ("", "0", "1", "abc", "0.2,1.5", " , "):
        with pytest.raises(InputError):
            Tolerance.parse_list(bad)


def test_parse_list_in_the_given_order_and_its_limit():
    """``ordered`` (``softrank tighten --eps``): the given order, each value once, no binary64
    separation; ``most`` (``softrank bracket`` and ``run``): at most that many."""
    got = Tolerance.parse_list("0.25, 3/20,1/4,0.15000000000000000001", ordered=True)
    assert [t.value for t in got] == [Fraction(1, 4), Fraction(3, 20), Fraction(3, 20) + Fraction(1, 10**20)]
    with pytest.raises(InputError, match="no tolerance given"):
        Tolerance.parse_list(" , ", ordered=True)
    with pytest.raises(InputError, match="3 tolerances, more than the 2 a record may hold"):
        Tolerance.parse_list("0.1,0.2,0.3", most=2)


def test_parse_value_for_the_exact_commands():
    """``softrank oracle`` and ``softrank families`` take the exact value of ``Tolerance.parse``."""
    assert Tolerance.parse("1/4").value == Fraction(1, 4) and Tolerance.parse("0.1").value == Fraction(1, 10)
    for bad in ("0", "1", "3/2", "-1/4", "abc", "nan", "1/0"):
        with pytest.raises(InputError, match="eps"):
            Tolerance.parse(bad).value


def test_a_record_field_and_a_table_text_are_read_back():
    assert Tolerance.from_record("0.15").text == "0.15" and Tolerance.from_record("3/20").text == "3/20"
    binary = Tolerance.from_record(0.1)
    assert binary.value == Fraction(0.1) and binary.text == "binary64(0.1)" and binary.binary64 == 0.1
    assert Tolerance.from_record(0.25).text == "0.25"
    assert Tolerance.stored(Fraction(1, 10), "0.1").text == "0.1"
    assert Tolerance.stored(Fraction(1, 3), "0.333").text == "1/3"
    for printed in ("0.1", "binary64(0.1)", "1/3"):
        t = Tolerance.from_table(printed)
        assert t.text == printed and t == Tolerance.from_record(0.1 if printed.startswith("b") else printed)
    with pytest.raises(InputError):
        Tolerance.from_table("binary64(1e999)")
    with pytest.raises(InputError):
        Tolerance.from_record(True)


def test_the_printer_and_the_grammar_agree_with_the_writer_and_the_exact_reader():
    """One printer: the writer uses this module's ``exact_text`` itself; the text grammar accepts
    and reads exactly what ``parse_rational`` does."""
    from softrank.exact.rational import parse_rational
    from softrank.fastpath.store import writer

    rng = random.Random(3)
    for _ in range(500):
        q = Fraction(rng.randint(1, 10**6), rng.choice([3, 7, 20, 64, 10**rng.randint(1, 30), 2**rng.randint(1, 60)]))
        assert parse_rational(exact_text(q)) == q
    assert writer.exact_text is exact_text
    for text in ("0.25", " 1/4 ", "1e-3", "+.5", "2.", "1e-999", "1/0", "0x1", "1_0", "1e-1000", "1 / 3", "-0.5"):
        try:
            expected = parse_rational(text, "arguments", "eps")
        except InputError as err:
            with pytest.raises(InputError) as mine:
                Tolerance.parse(text)
            assert mine.value.message.split(":")[0] in (err.message.split(":")[0], "eps must lie in (0, 1), got " + text)
            continue
        if 0 < expected < 1:
            assert Tolerance.parse(text).value == expected
