"""replay/support.py and the reader's ``operator.support``: the three forms, the compact form of a
bool mask, and every refusal as a one-line ``InputError`` naming the field."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from softrank.api.records import Record
from softrank.api.store import Store
from softrank.replay.reader import read_record
from softrank.replay.support import THEOREM_REFUSAL, Support, refuse_masked, support_mask, support_of_mask
from softrank.errors import InputError


def causal(m, n, k):
    return np.arange(n)[None, :] <= np.arange(m)[:, None] + k


def window(m, n, w, k):
    ahead = np.arange(m)[:, None] + k - np.arange(n)[None, :]
    return (ahead >= 0) & (ahead < w)


@pytest.mark.parametrize("m,n,k", [(1, 1, 0), (5, 5, 0), (3, 8, 5), (8, 3, 0), (4, 9, 2)])
def test_causal_boolean_and_detection(m, n, k):
    mask = causal(m, n, k)
    assert np.array_equal(Support("causal", k).boolean(m, n), mask)
    s = support_of_mask(mask)
    if mask.all():
        assert s is None
    else:
        assert (s.form, s.offset) == ("causal", k)
        assert np.array_equal(support_mask(s, m, n, "w"), mask)


@pytest.mark.parametrize("m,n,w,k", [(40, 40, 16, 0), (6, 10, 3, 4), (10, 10, 1, 0), (5, 12, 4, 7)])
def test_window_boolean_and_detection(m, n, w, k):
    mask = window(m, n, w, k)
    assert np.array_equal(Support("window", k, w).boolean(m, n), mask)
    s = support_of_mask(mask)
    assert (s.form, s.offset, s.size) == ("window", k, w)
    assert np.array_equal(support_mask(s, m, n, "w"), mask)


def test_window_that_never_cuts_is_causal_and_huge_size_is_safe():
    assert support_of_mask(window(5, 9, 50, 1)).form == "causal"
    big = Support("window", 1, 2**63 - 1)
    assert np.array_equal(support_mask(big, 5, 9, "w"), causal(5, 9, 1))


def test_random_mask_is_packed_and_round_trips():
    rng = np.random.default_rng(3)
    for m, n in ((7, 5), (3, 3), (10, 13), (1, 9)):
        mask = rng.random((m, n)) < 0.5
        mask[:, 0] = True
        mask[0, -1] = False
        s = support_of_mask(mask)
        assert s.form == "packed" and s.bits.dtype == np.uint8 and s.bits.shape == (-(-m * n // 8),)
        assert np.array_equal(support_mask(s, m, n, "w"), mask)
        assert np.array_equal(support_of_mask(mask).bits, s.bits)  # the same bytes every time
    assert support_of_mask(np.ones((3, 4), bool)) is None
    empty_first = np.tril(np.ones((4, 6), bool), k=-1)  # row 0 sees nothing: packed (then refused)
    assert support_of_mask(empty_first).form == "packed"


def _refused(support, m, n, field):
    with pytest.raises(InputError) as err:
        support_mask(support, m, n, "rec")
    assert err.value.field == field, err.value.one_line()
    assert "\n" not in err.value.one_line()
    return err.value.one_line()


def test_largest_offset_and_every_padding_bit():
    for support in (Support("causal", 4), Support("window", 4, 3)):  # offset N - 1: row 0 sees key N - 1
        assert support_mask(support, 2, 5, "w")[0, 4]
    mask = np.ones((5, 7), bool)
    mask[0, 3] = False  # 35 bits: the last 5 bits of the last byte are padding
    bits = np.packbits(mask.reshape(-1))
    assert np.array_equal(support_mask(Support("packed", bits=bits), 5, 7, "w"), mask)
    for bit in range(5):
        padded = bits.copy()
        padded[-1] |= np.uint8(1 << bit)
        _refused(Support("packed", bits=padded), 5, 7, "operator.support.bits")


def test_refusals_in_memory():
    assert "past the matrix" in _refused(Support("causal", 5), 3, 5, "operator.support.offset")
    assert "in [0, 5], got 6 (past the matrix)" in _refused(Support("causal", 6), 3, 6, "operator.support.offset")
    assert "in [1, " in _refused(Support("window", 0, -3), 3, 6, "operator.support.size")
    assert "past" not in _refused(Support("causal", -1), 3, 5, "operator.support.offset")
    _refused(Support("causal", True), 3, 5, "operator.support.offset")
    _refused(Support("causal", 1.0), 3, 5, "operator.support.offset")
    _refused(Support("window", 0, 0), 3, 5, "operator.support.size")
    _refused(Support("window", 0, 2**63), 3, 5, "operator.support.size")
    _refused(Support("diagonal", 0), 3, 5, "operator.support.form")
    _refused("causal", 3, 5, "operator.support.form")
    bits = np.packbits(np.ones(15, bool))
    _refused(Support("packed", bits=bits[:1]), 3, 5, "operator.support.bits")  # wrong length
    for dtype in (np.int64, np.int8, bool):  # wrong dtypes
        _refused(Support("packed", bits=bits.astype(dtype)), 3, 5, "operator.support.bits")
    _refused(Support("packed", bits=[255, 254]), 3, 5, "operator.support.bits")  # not an array
    padded = bits.copy()
    padded[-1] |= 1  # bit 16 of 15: padding
    assert "padding" in _refused(Support("packed", bits=padded), 3, 5, "operator.support.bits")
    empty = np.ones((3, 5), bool)
    empty[1] = False
    assert "row 1" in _refused(Support("packed", bits=np.packbits(empty.reshape(-1))), 3, 5, "operator.support")
    assert "row 5" in _refused(Support("window", 1, 2), 6, 5, "operator.support")  # i + 1 - 2 >= N - 1: empty


def _store_record(tmp_path, mask, rid="r"):
    rng = np.random.default_rng(0)
    h = rng.normal(size=mask.shape)
    Store(tmp_path).write(Record.from_logits(h, record_id=rid, mask=mask))
    return tmp_path / "records" / rid


def _rewrite(folder, edit):
    doc = json.loads((folder / "record.json").read_text())
    edit(doc["operator"])
    (folder / "record.json").write_text(json.dumps(doc))


def _read_refused(folder, field):
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == field, err.value.one_line()
    return err.value.one_line()


def test_reader_forms_round_trip(tmp_path):
    for i, mask in enumerate((causal(6, 9, 3), window(9, 9, 4, 0), np.eye(5, dtype=bool) | causal(5, 5, -3))):
        rec = read_record(_store_record(tmp_path, mask, f"r{i}"))
        assert np.array_equal(rec.mask, mask)
        assert rec.support.form in rec.operator_assumption
    unmasked = _store_record(tmp_path, np.ones((4, 4), bool), "full")
    assert "support" not in json.loads((unmasked / "record.json").read_text())["operator"]
    assert read_record(unmasked).mask is None and read_record(unmasked).support is None


@pytest.mark.parametrize("edit,field", [
    (lambda op: op["support"].update(form="band"), "operator.support.form"),
    (lambda op: op["support"].update(form=3), "operator.support.form"),
    (lambda op: op["support"].pop("offset"), "operator.support.offset"),
    (lambda op: op["support"].update(extra=1), "operator.support"),
    (lambda op: op["support"].update(zzz=1, aaa=2), "'aaa'"),
    (lambda op: op["support"].update(size=4), "operator.support"),
    (lambda op: op["support"].update(offset=9), "operator.support.offset"),
    (lambda op: op["support"].update(offset=-1), "operator.support.offset"),
    (lambda op: op["support"].update(offset="1"), "operator.support.offset"),
    (lambda op: op["support"].update(offset=False), "operator.support.offset"),
    (lambda op: op.update(support=[1, 2]), "operator.support"),
])
def test_reader_refuses_structured(tmp_path, edit, field):
    folder = _store_record(tmp_path, causal(6, 9, 3))
    _rewrite(folder, edit)
    if field.startswith("'"):  # the first unexpected key, by name
        assert f"unexpected key {field}" in _read_refused(folder, "operator.support")
    else:
        _read_refused(folder, field)


def test_reader_null_support_is_unmasked(tmp_path):
    folder = _store_record(tmp_path, causal(6, 9, 3))
    _rewrite(folder, lambda op: op.update(support=None))
    assert read_record(folder).mask is None


def _packed(tmp_path):
    mask = np.random.default_rng(1).random((5, 7)) < 0.6
    mask[:, 2] = True
    return _store_record(tmp_path, mask), mask


def _rewrite_bits(folder, bits, shape=None):
    raw_path = folder / "arrays" / "support.npy"
    np.save(raw_path, bits, allow_pickle=False)
    digest = hashlib.sha256(raw_path.read_bytes()).hexdigest()

    def edit(op):
        op["support"]["bits"].update(sha256=digest, shape=list(shape or bits.shape))
    _rewrite(folder, edit)


def test_reader_packed_flipped_bit_hash_then_other_operator(tmp_path):
    folder, mask = _packed(tmp_path)
    raw = bytearray((folder / "arrays" / "support.npy").read_bytes())
    raw[-1] ^= 0x80  # a mask bit, not padding (35 bits: the last byte holds 3)
    (folder / "arrays" / "support.npy").write_bytes(bytes(raw))
    assert "hash mismatch" in _read_refused(folder, "operator.support.bits.sha256")
    bits = np.packbits(mask.reshape(-1))
    bits[-1] ^= 0x80
    _rewrite_bits(folder, bits)
    other = mask.reshape(-1).copy()
    other[32] = ~other[32]
    assert np.array_equal(read_record(folder).mask, other.reshape(mask.shape))


def test_reader_packed_refusals(tmp_path):
    folder, mask = _packed(tmp_path)
    bits = np.packbits(mask.reshape(-1))
    _rewrite_bits(folder, bits[:-1])
    assert "shape" in _read_refused(folder, "operator.support.bits")
    padded = bits.copy()
    padded[-1] |= 0x01
    _rewrite_bits(folder, padded)
    assert "padding" in _read_refused(folder, "operator.support.bits")
    _rewrite_bits(folder, bits.astype(np.int64))
    _read_refused(folder, "operator.support.bits.dtype")
    empty = mask.copy()
    empty[3] = False
    _rewrite_bits(folder, np.packbits(empty.reshape(-1)))
    assert "row 3" in _read_refused(folder, "operator.support")
    _rewrite_bits(folder, np.packbits(np.ones(35, bool)))  # all visible: the unmasked operator
    assert read_record(folder).mask is None


def test_refuse_masked(tmp_path):
    masked = read_record(_store_record(tmp_path, causal(4, 4, 0), "m"))
    with pytest.raises(InputError) as err:
        refuse_masked(masked)
    assert THEOREM_REFUSAL in err.value.one_line() and err.value.field == "operator.support"
    assert err.value.where == str(tmp_path / "records" / "m")  # the record's folder
    with pytest.raises(InputError) as err:
        refuse_masked(Record.from_logits(np.zeros((2, 2)), record_id="mem", mask=np.eye(2, dtype=bool)))
    assert err.value.where == "mem"  # a record in memory: its id
    refuse_masked(read_record(_store_record(tmp_path, np.ones((4, 4), bool), "u")))  # no error
