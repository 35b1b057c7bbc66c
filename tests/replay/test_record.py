"""The in-memory record model (``softrank.replay.record``): how values are shown in error messages
(``short``), how a record's tolerance is read (``Tolerance.from_record``), the operator assumption a record states, and
``check_record``, the whole-record checks (record id, operator and A_hat shapes and values, eps
range, witness and certificate arrays), each refusal an ``InputError`` naming the field."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from softrank.replay.record import (SCHEMA, SCHEMA_VERSION_WRITTEN, SCHEMA_VERSIONS_READ, STOCHASTIC_ROW_TOL,
                                    VERDICTS, LowerCertificate, Record, Tolerance, ToleranceEntry, UpperWitness,
                                    check_record, short)
from softrank.errors import InputError


def _softmax(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _tolerance(eps=Fraction(1, 4), upper=None, lower=(), text=None):
    tolerance = Tolerance(eps, str(eps) if text is None else text, 0.25)  # unchecked: check_record checks it
    return ToleranceEntry(tolerance=tolerance, upper=upper, lower=list(lower), float64_lower=None,
                          float64_upper=None, float64_verdicts={})


def parse_eps(value, where, field):
    """(exact value, text as written) of a record's tolerance field: ``Tolerance.from_record``, the
    reader's one parser, and the text a record entry shows (``eps_text``)."""
    tol = Tolerance.from_record(value, where, field)
    return tol.value, str(tol.json_field)


def _logits_record(m=2, n=3, tolerances=(), **changes):
    h = np.arange(m * n, dtype=np.float64).reshape(m, n) / 7
    rec = Record(record_id="r1", path=Path("r1"), schema_version=1, provenance={}, form="logits", logits=h,
                 queries=None, keys=None, scale=None, bias=None, a_hat=_softmax(h), tolerances=list(tolerances))
    return dataclasses.replace(rec, **changes)


def _qk_record(with_bias=False, **changes):
    q = np.array([[1.0, 0.5], [0.0, -1.0]])
    k = np.array([[0.25, 1.0], [2.0, 0.0], [-1.0, 1.0]])
    b = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, -0.5]]) if with_bias else None
    logits = 0.5 * q @ k.T + (b if with_bias else 0.0)
    rec = Record(record_id="q1", path=Path("q1"), schema_version=1, provenance={}, form="qk", logits=None,
                 queries=q, keys=k, scale=0.5, bias=b, a_hat=_softmax(logits), tolerances=[])
    return dataclasses.replace(rec, **changes)


def _refusal(record, where=None) -> InputError:
    with pytest.raises(InputError) as err:
        check_record(record, where)
    assert "\n" not in err.value.one_line()
    return err.value


# -- constants of the format ------------------------------------------------------------------------


def test_format_constants_are_the_documented_ones():
    assert SCHEMA == "softrank.record" and SCHEMA_VERSIONS_READ == (1,) and SCHEMA_VERSION_WRITTEN == 1
    assert VERDICTS == ("feasible", "impossible", "unresolved")
    assert STOCHASTIC_ROW_TOL == 1e-6


# -- short: values as shown in error messages ---------------------------------------------------------


def test_short_shows_an_integer_of_200_bits_and_summarizes_one_of_201_bits():
    assert (2**199).bit_length() == 200 and len(repr(2**199)) == 60
    assert short(2**199) == repr(2**199)  # at the limit: shown in full
    assert short(2**200) == "<an integer of about 60 digits>"  # 201 bits: summarized
    assert short(-(2**200)) == "<an integer of about 60 digits>"
    assert short(2**200 - 1) == repr(2**200 - 1)[:57] + "..."  # 200 bits, 61 digits: cut, not summarized
    assert short(2**1000) == "<an integer of about 301 digits>"


def test_short_never_summarizes_a_boolean_or_a_small_integer():
    assert short(True) == "True" and short(False, quote=False) == "False"
    assert short(-5) == "-5" and short(0) == "0"


def test_short_cuts_text_longer_than_the_limit_with_an_ellipsis():
    assert short("a" * 58) == "'" + "a" * 58 + "'"  # 60 characters with the quotes: kept
    cut = short("a" * 59)  # 61 characters: cut to 60
    assert cut == "'" + "a" * 56 + "..." and len(cut) == 60
    assert short("abcdef", 5, quote=False) == "ab..."
    assert short("abcde", 5, quote=False) == "abcde"
    assert short("it's", quote=False) == "it's" and short("x") == "'x'"
    assert short([1, 2]) == "[1, 2]"


# -- parse_eps ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, exact, text", [
    (0.25, Fraction(1, 4), "0.25"),
    (0.1, Fraction(0.1), "0.1"),  # a float is its exact binary64 value, not 1/10
    ("0.1", Fraction(1, 10), "0.1"),
    ("3/20", Fraction(3, 20), "3/20"),
    (Fraction(3, 20), Fraction(3, 20), "3/20"),
    (5e-324, Fraction(5e-324), "5e-324"),  # the smallest positive binary64 number
    (math.nextafter(1.0, 0.0), Fraction(math.nextafter(1.0, 0.0)), repr(math.nextafter(1.0, 0.0))),
    ("1/1000000000000", Fraction(1, 10**12), "1/1000000000000"),
])
def test_parse_eps_reads_a_tolerance_in_the_open_unit_interval_exactly(value, exact, text):
    got, got_text = parse_eps(value, "rec", "tolerances[0].eps")
    assert got == exact and type(got) is Fraction and got_text == text


@pytest.mark.parametrize("value, shown", [
    (0, "got 0"), (1, "got 1"), (0.0, "got 0.0"), (1.0, "got 1.0"), (-0.25, "got -0.25"), ("1/1", "got 1/1"),
    ("5/4", "got 5/4"), (Fraction(0), "got 0/1"), (Fraction(1), "got 1/1"), (Fraction(-1, 4), "got -1/4"),
    (2**300, "got <an integer of about 90 digits>"),
])
def test_parse_eps_refuses_a_value_outside_the_open_unit_interval(value, shown):
    with pytest.raises(InputError) as err:
        parse_eps(value, "rec", "tolerances[2].eps")
    assert err.value.where == "rec" and err.value.field == "tolerances[2].eps"
    assert err.value.message == f"eps must lie in (0, 1), {shown}"


@pytest.mark.parametrize("value", [True, False, None, [0.25], {"eps": 0.25}, b"0.25"])
def test_parse_eps_refuses_a_value_that_is_not_a_number_or_text(value):
    with pytest.raises(InputError) as err:
        parse_eps(value, "rec", "tolerances[0].eps")
    assert err.value.field == "tolerances[0].eps"
    assert err.value.message.startswith("expected a number or a string 'p/q', got ")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_parse_eps_refuses_a_non_finite_float(value):
    with pytest.raises(InputError) as err:
        parse_eps(value, "rec", "tolerances[0].eps")
    assert err.value.field == "tolerances[0].eps" and err.value.message == f"must be finite, got {value!r}"


def test_parse_eps_refuses_text_that_is_not_a_rational():
    with pytest.raises(InputError) as err:
        parse_eps("a quarter", "rec", "tolerances[0].eps")
    assert err.value.field == "tolerances[0].eps" and "not a rational number" in err.value.message


# -- what a record states about its operator -----------------------------------------------------


def test_operator_assumption_of_a_logits_record_names_the_stored_logits():
    assert _logits_record().operator_assumption == (
        "operator A = rowsoftmax(H) for the stored binary64 logits H, read as exact reals")


def test_operator_assumption_of_a_qk_record_names_the_bias_only_when_there_is_one():
    assert _qk_record().operator_assumption == (
        "operator A = rowsoftmax(scale * Q K^T) for the stored binary64 queries, keys, scale, read as exact reals")
    assert _qk_record(with_bias=True).operator_assumption == (
        "operator A = rowsoftmax(scale * Q K^T + bias) for the stored binary64 queries, keys, scale, bias, "
        "read as exact reals")


def test_record_shape_is_the_shape_of_a_hat():
    assert _logits_record(2, 3).shape == (2, 3) and _qk_record().shape == (2, 3)
    assert _logits_record(1, 1).shape == (1, 1)


def test_witness_and_certificate_defaults():
    x = np.zeros((2, 1))
    assert UpperWitness(rank=1, X=x, Y=x).construction == ""
    a, b = LowerCertificate(kind="k", lower=1), LowerCertificate(kind="k", lower=1)
    a.data["x"] = 1
    assert a.data == {"x": 1} and b.data == {}  # each certificate has its own data


# -- check_record: valid records ---------------------------------------------------------------------


def test_check_record_accepts_valid_logits_and_qk_records():
    x, y = np.ones((2, 1)), np.ones((3, 1))
    tol = _tolerance(upper=UpperWitness(1, x, y),
                     lower=[LowerCertificate("decoder", 1, {"rows": np.array([0, 1]), "W": np.ones((3, 2)),
                                                            "note": "kept as is"})])
    assert check_record(_logits_record(tolerances=[tol, _tolerance(Fraction(1, 2))])) is None
    assert check_record(_qk_record()) is None and check_record(_qk_record(with_bias=True)) is None
    assert check_record(_qk_record(scale=np.float64(-2.0))) is None  # a float subclass; any sign
    assert check_record(_qk_record(scale=0.0)) is None


def test_check_record_accepts_a_one_by_one_operator():
    assert check_record(_logits_record(1, 1)) is None


def test_check_record_names_the_record_by_its_id_or_by_the_place_given():
    rec = _logits_record(record_id="r7", form="weird")
    assert _refusal(rec).where == "r7"
    assert _refusal(rec, "store/records/r7 [r7]").where == "store/records/r7 [r7]"


# -- check_record: record id ----------------------------------------------------------------------------


@pytest.mark.parametrize("record_id", ["a", "A", "0", "a" * 200, "r-1.b_2", "9" + "._-" * 66])
def test_check_record_accepts_a_record_id_of_the_documented_form(record_id):
    assert check_record(_logits_record(record_id=record_id)) is None


@pytest.mark.parametrize("record_id", ["", "a" * 201, ".hidden", "-a", "_a", "a b", "a/b", "é", 5, None, "r1\n", "r1\r", "\nr1"])
def test_check_record_refuses_any_other_record_id(record_id):
    err = _refusal(_logits_record(record_id=record_id), "here")
    assert err.field == "record_id" and err.message == f"invalid record id {short(record_id)}"


# -- check_record: operator ---------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["dense", "zeta"])  # names sorting before "logits" and after "qk"
def test_check_record_refuses_an_unknown_operator_form(form):
    err = _refusal(_logits_record(form=form))
    assert err.field == "operator.form" and err.message == f"expected 'logits' or 'qk', got '{form}'"
    err = _refusal(_logits_record(form=form, logits=None))  # named as such, not by a known form's fields
    assert err.field == "operator.form" and err.message == f"expected 'logits' or 'qk', got '{form}'"


class _ArraySubclass(np.ndarray):
    pass


@pytest.mark.parametrize("logits", [
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],  # a list, not an array
    np.zeros((2, 3), dtype=np.float32),
    np.zeros((2, 3), dtype=np.int64),
    np.zeros(6),
    np.zeros((2, 3, 1)),
    np.zeros((2, 3)).view(_ArraySubclass),  # a subclass of ndarray is not a plain array
    np.zeros((2, 3), dtype=np.complex128),  # a dtype that float64 does not safely cast to
    np.zeros((2, 3), dtype=object),
    None,
])
def test_check_record_refuses_logits_that_are_not_a_plain_2d_float64_array(logits):
    err = _refusal(_logits_record(logits=logits))
    assert err.field == "operator.logits" and err.message == "expected a 2-d float64 array"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_check_record_refuses_a_non_finite_logit_and_says_where_it_is(bad):
    rec = _logits_record(m=3)
    rec.logits[1, 2] = rec.logits[2, 0] = bad
    err = _refusal(rec)  # the first in row-major order is named
    assert err.field == "operator.logits" and err.message == "non-finite entry (NaN or inf) at [1, 2]"


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (0, 0)])
def test_check_record_refuses_an_empty_operator(shape):
    err = _refusal(_logits_record(logits=np.zeros(shape), a_hat=np.zeros(shape)))
    assert err.field == "operator" and err.message == f"empty operator shape [{shape[0]}, {shape[1]}]"


def test_check_record_refuses_queries_and_keys_of_different_head_dimension():
    err = _refusal(_qk_record(keys=np.ones((3, 4))))
    assert err.field == "operator.keys" and err.message == "head dimension 4 disagrees with queries' 2"
    err = _refusal(_qk_record(keys=np.ones((3, 1))))  # fewer columns than the queries, too
    assert err.field == "operator.keys" and err.message == "head dimension 1 disagrees with queries' 2"


def test_check_record_accepts_queries_and_keys_of_one_large_head_dimension():
    q, k = np.full((2, 300), 0.01), np.full((3, 300), 0.02)
    assert check_record(_qk_record(queries=q, keys=k, a_hat=np.full((2, 3), 1 / 3))) is None
    err = _refusal(_qk_record(queries=q, keys=np.full((3, 301), 0.02)))
    assert err.message == "head dimension 301 disagrees with queries' 300"


def test_check_record_refuses_queries_or_keys_that_are_not_2d_float64():
    assert _refusal(_qk_record(queries=np.ones(2))).field == "operator.queries"
    assert _refusal(_qk_record(keys=np.ones((3, 2), dtype=np.float32))).field == "operator.keys"


@pytest.mark.parametrize("scale", [True, False, 1, "0.5", None, Fraction(1, 2), math.inf, -math.inf, math.nan])
def test_check_record_refuses_a_scale_that_is_not_a_finite_binary64_number(scale):
    err = _refusal(_qk_record(scale=scale))
    assert err.field == "operator.scale"
    assert err.message == f"expected a finite binary64 number, got {short(scale)}"


def test_check_record_refuses_a_bias_of_another_shape_than_the_operator():
    err = _refusal(_qk_record(bias=np.zeros((3, 2))))
    assert err.field == "operator.bias" and err.message == "shape [3, 2] disagrees with operator shape [2, 3]"
    assert _refusal(_qk_record(bias=np.zeros((2, 3), dtype=np.float32))).field == "operator.bias"
    nan_bias = np.zeros((2, 3))
    nan_bias[0, 1] = math.nan
    assert _refusal(_qk_record(bias=nan_bias)).message == "non-finite entry (NaN or inf) at [0, 1]"


# -- check_record: A_hat ----------------------------------------------------------------------------------


def test_check_record_refuses_an_a_hat_of_another_shape_than_the_operator():
    err = _refusal(_logits_record(a_hat=np.full((3, 2), 0.5)))
    assert err.field == "a_hat" and err.message == "shape [3, 2] disagrees with operator shape [2, 3]"
    assert _refusal(_logits_record(a_hat=np.full((2, 3), 1 / 3, dtype=np.float32))).field == "a_hat"


def test_check_record_refuses_a_negative_a_hat_entry_even_in_a_row_summing_to_one():
    a_hat = np.array([[0.5, 0.5, 0.0], [1.5, -0.5, 0.0]])
    err = _refusal(_logits_record(a_hat=a_hat))
    assert err.field == "a_hat" and err.message == "not row-stochastic: negative entry"
    assert check_record(_logits_record(a_hat=np.array([[0.5, 0.5, -0.0], [1.0, 0.0, 0.0]]))) is None  # -0.0 >= 0


def test_check_record_accepts_row_sums_within_the_tolerance_and_names_the_worst_row_beyond_it():
    ok = np.array([[0.5, 0.5 + 0.9e-6, 0.0], [1.0 - 0.9e-6, 0.0, 0.0]])
    assert check_record(_logits_record(a_hat=ok)) is None
    over = np.array([[0.5, 0.5 + 2e-6, 0.0], [1.0, 0.0, 0.0]])
    err = _refusal(_logits_record(a_hat=over))
    assert err.field == "a_hat" and err.message == "not row-stochastic: row 0 sums to 1.000002"
    under = np.array([[0.5, 0.5 - 2e-6, 0.0], [0.25, 0.25, 0.0]])  # row 1 is the worse one
    err = _refusal(_logits_record(a_hat=under))
    assert err.message == "not row-stochastic: row 1 sums to 0.5"


def test_check_record_refuses_a_non_finite_a_hat_entry():
    a_hat = _softmax(np.zeros((2, 3)))
    a_hat[1, 0] = math.inf
    err = _refusal(_logits_record(a_hat=a_hat))
    assert err.field == "a_hat" and err.message == "non-finite entry (NaN or inf) at [1, 0]"


# -- check_record: tolerances -------------------------------------------------------------------------------


@pytest.mark.parametrize("eps, text", [
    (Fraction(0), "0"), (Fraction(1), "1"), (Fraction(3, 2), "3/2"), (Fraction(-1, 4), "-1/4"),
    (0.25, "0.25"),  # in range but a float, not an exact Fraction
    ("1/4", "1/4"),  # text, not an exact Fraction
])
def test_check_record_refuses_an_eps_that_is_not_a_fraction_in_the_open_unit_interval(eps, text):
    rec = _logits_record(tolerances=[_tolerance(), _tolerance(eps, text=text)])
    err = _refusal(rec)
    assert err.field == "tolerances[1].eps" and err.message == f"eps must lie in (0, 1), got {short(text)}"


def test_check_record_accepts_eps_just_inside_the_open_unit_interval():
    tiny, big = Fraction(1, 10**30), Fraction(10**30 - 1, 10**30)
    assert check_record(_logits_record(tolerances=[_tolerance(tiny), _tolerance(big)])) is None


def test_check_record_refuses_witness_factors_that_do_not_fit_the_operator_and_rank():
    x, y = np.ones((2, 1)), np.ones((3, 1))
    bad_x = _logits_record(tolerances=[_tolerance(upper=UpperWitness(1, np.ones((3, 1)), y))])
    err = _refusal(bad_x)
    assert err.field == "tolerances[0].upper.X" and err.message == "shape [3, 1] disagrees with [m, rank] = [2, 1]"
    bad_y = _logits_record(tolerances=[_tolerance(upper=UpperWitness(1, x, np.ones((2, 1))))])
    err = _refusal(bad_y)
    assert err.field == "tolerances[0].upper.Y" and err.message == "shape [2, 1] disagrees with [N, rank] = [3, 1]"
    wrong_rank = _logits_record(tolerances=[_tolerance(upper=UpperWitness(2, x, y))])
    assert _refusal(wrong_rank).field == "tolerances[0].upper.X"
    nan_y = np.ones((3, 1))
    nan_y[2, 0] = math.nan
    err = _refusal(_logits_record(tolerances=[_tolerance(upper=UpperWitness(1, x, nan_y))]))
    assert err.field == "tolerances[0].upper.Y" and err.message == "non-finite entry (NaN or inf) at [2, 0]"


def test_check_record_refuses_a_non_finite_float_certificate_array_and_names_it():
    w = np.ones((3, 2))
    w[0, 1] = math.inf
    certs = [LowerCertificate("decoder", 1, {"W": np.ones((3, 2))}),
             LowerCertificate("decoder", 1, {"rows": np.array([0, 1]), "W": w})]
    err = _refusal(_logits_record(tolerances=[_tolerance(), _tolerance(lower=certs)]))
    assert err.field == "tolerances[1].lower[1].W" and err.message == "non-finite entry (NaN or inf)"


def test_check_record_leaves_integer_arrays_and_plain_values_of_a_certificate_to_its_checker():
    cert = LowerCertificate("decoder", 1, {"rows": np.array([-1, 2**40]), "note": math.nan, "W": np.ones((1, 1))})
    assert check_record(_logits_record(tolerances=[_tolerance(lower=[cert])])) is None
    # arrays of other dtypes too (the rules refuse every array that is not of their dtype): a complex
    # array with an infinite entry, an object array (np.isfinite would raise on it), a NaT timedelta
    odd = LowerCertificate("decoder", 1, {"W": np.array([[1.0 + 0j, complex(math.inf, 0)]]),
                                          "rows": np.array([None, "0"], dtype=object),
                                          "when": np.array([np.timedelta64("NaT")])})
    assert check_record(_logits_record(tolerances=[_tolerance(lower=[odd])])) is None
