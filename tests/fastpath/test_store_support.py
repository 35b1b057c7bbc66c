"""Producer-side supports of masked operators (``fastpath/store/support.py``) and the record
writer's ``support=``: the compact form of a boolean mask (causal, window, packed), the bytes
written (``operator.support``, ``arrays/support.npy``), hidden logits as 0.0, a_hat exactly 0 off
the support, and nothing at all for a full operator (existing records' bytes unchanged)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from softrank.fastpath.store.support import (
    causal_mask,
    masked_rowsoftmax64,
    support_boolean,
    support_of_mask,
    window_mask,
)
from softrank.fastpath.store.writer import RecordWriter


def test_compact_forms_are_detected_causal_first():
    assert support_of_mask(np.ones((4, 6), dtype=bool)) is None
    assert support_of_mask(causal_mask(5, 5, 0)) == {"form": "causal", "offset": 0}
    assert support_of_mask(causal_mask(3, 8, 5)) == {"form": "causal", "offset": 5}  # queries at N-m..N-1
    assert support_of_mask(window_mask(40, 40, 16, 0)) == {"form": "window", "size": 16, "offset": 0}
    assert support_of_mask(window_mask(6, 9, 2, 3)) == {"form": "window", "size": 2, "offset": 3}
    assert support_of_mask(window_mask(5, 5, 5, 0)) == {"form": "causal", "offset": 0}  # the window never binds
    odd = causal_mask(4, 4, 0)
    odd[3, 1] = False
    assert support_of_mask(odd) == {"form": "packed"}


def test_window_semantics_match_a_sliding_window_of_w_keys():
    w = window_mask(6, 6, 3, 0)
    assert w[5].tolist() == [False, False, False, True, True, True]  # itself and the 2 before
    assert w[0].tolist() == [True, False, False, False, False, False]


def test_bad_masks_are_refused():
    with pytest.raises(ValueError, match="no visible key"):
        support_of_mask(np.array([[True, False], [False, False]]))
    with pytest.raises(ValueError, match="boolean"):
        support_of_mask(np.ones((2, 2)))
    with pytest.raises(ValueError, match="disagrees"):
        support_boolean({"form": "causal", "offset": 0}, 3, 3, np.ones((3, 3), dtype=bool))
    with pytest.raises(ValueError, match="out of range"):
        support_boolean({"form": "causal", "offset": 3}, 3, 3)
    with pytest.raises(ValueError, match="unknown support form"):
        support_boolean({"form": "diagonal"}, 3, 3)
    with pytest.raises(ValueError, match="keys"):
        support_boolean({"form": "causal"}, 3, 3)


def test_masked_softmax_is_exactly_zero_off_the_support():
    h = np.random.default_rng(0).normal(size=(5, 5))
    mask = causal_mask(5, 5, 0)
    a = masked_rowsoftmax64(h, mask)
    assert np.all(a[~mask] == 0.0)
    assert np.allclose(a.sum(axis=1), 1.0)
    assert a[0, 0] == 1.0
    e = np.exp(h[2, :3] - h[2, :3].max())
    assert np.allclose(a[2, :3], e / e.sum(), rtol=1e-15)


def _write(tmp_path, rid, h, mask, support, given=True):
    with RecordWriter(tmp_path, rid, {"model": "t"}, support=support, mask=mask if given else None) as w:
        w.set_logits(h)
        w.set_a_hat(masked_rowsoftmax64(h, mask))
    folder = tmp_path / "records" / rid
    return json.loads((folder / "record.json").read_text()), folder


def test_the_writer_writes_the_compact_support_and_zero_hidden_logits(tmp_path):
    h = np.random.default_rng(1).normal(size=(6, 6)) + 5.0
    mask = window_mask(6, 6, 2, 0)
    doc, folder = _write(tmp_path, "win", h, mask, {"form": "window", "size": 2, "offset": 0}, given=False)
    assert doc["operator"]["support"] == {"form": "window", "size": 2, "offset": 0}
    logits = np.load(folder / "arrays" / "logits.npy")
    assert np.all(logits[~mask] == 0.0) and np.array_equal(logits[mask], h[mask])
    a_hat = np.load(folder / "arrays" / "a_hat.npy")
    assert np.all(a_hat[~mask] == 0.0) and np.allclose(a_hat.sum(axis=1), 1.0)
    assert not (folder / "arrays" / "support.npy").exists()


def test_the_writer_packs_an_irregular_support(tmp_path):
    mask = causal_mask(3, 5, 2)
    mask[1, 2] = False  # a hole: neither causal nor a window
    h = np.zeros((3, 5))
    doc, folder = _write(tmp_path, "pk", h, mask, support_of_mask(mask))
    ref = doc["operator"]["support"]
    assert ref["form"] == "packed" and ref["bits"]["path"] == "arrays/support.npy"
    assert ref["bits"]["dtype"] == "uint8" and ref["bits"]["shape"] == [2]  # ceil(15 / 8)
    bits = np.load(folder / "arrays" / "support.npy")
    assert bits.dtype == np.uint8
    assert np.array_equal(np.unpackbits(bits)[:15].astype(bool).reshape(3, 5), mask)
    assert not np.any(np.unpackbits(bits)[15:])  # padding bits 0


def test_a_full_operator_writes_no_support_key_and_the_same_bytes(tmp_path):
    h = np.random.default_rng(2).normal(size=(4, 4))
    a = masked_rowsoftmax64(h, None)
    for rid, kw in (("plain", {}), ("none", {"support": None})):
        with RecordWriter(tmp_path, rid, {"model": "t"}, **kw) as w:
            w.set_qk(h, h, 0.5)
            w.set_a_hat(a)
    plain = (tmp_path / "records" / "plain" / "record.json").read_text()
    none = (tmp_path / "records" / "none" / "record.json").read_text()
    assert "support" not in plain
    assert plain.replace('"plain"', '"none"') == none


def test_the_writer_refuses_mass_off_the_support_and_a_mismatched_mask(tmp_path):
    h = np.zeros((3, 3))
    with pytest.raises(ValueError, match="exactly 0"):
        with RecordWriter(tmp_path, "bad", {}, support={"form": "causal", "offset": 0}) as w:
            w.set_logits(h)
            w.set_a_hat(np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="disagrees"):
        with RecordWriter(tmp_path, "bad", {}, support={"form": "causal", "offset": 0},
                          mask=np.ones((3, 3), dtype=bool)) as w:
            w.set_logits(h)
    assert not (tmp_path / "records" / "bad").exists()


def test_qk_records_keep_q_and_k_and_zero_the_hidden_bias(tmp_path):
    rng = np.random.default_rng(3)
    q, k, bias = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 4))
    mask = causal_mask(4, 4, 0)
    with RecordWriter(tmp_path, "qk", {}, support=support_of_mask(mask)) as w:
        w.set_qk(q, k, 0.5, bias)
        w.set_a_hat(masked_rowsoftmax64(0.5 * q @ k.T + bias, mask))
    folder = tmp_path / "records" / "qk"
    assert np.array_equal(np.load(folder / "arrays" / "queries.npy"), q)
    stored = np.load(folder / "arrays" / "bias.npy")
    assert np.all(stored[~mask] == 0.0) and np.array_equal(stored[mask], bias[mask])
    assert json.loads((folder / "record.json").read_text())["operator"]["support"] == {"form": "causal", "offset": 0}


class _CheckerSupport:
    """Shaped as the checker's support object: ``form``, ``offset``, ``size``, ``bits``, ``boolean``."""

    def __init__(self, form, offset=0, size=0, mask=None):
        self.form, self.offset, self.size, self._mask = form, offset, size, mask
        self.bits = None if mask is None else np.packbits(mask.reshape(-1))

    def boolean(self, m, n):
        return self._mask if self.form == "packed" else support_boolean(
            {"form": self.form, "offset": self.offset, **({"size": self.size} if self.form == "window" else {})}, m, n)


def test_the_writer_takes_a_support_object_of_the_checker(tmp_path):
    mask = causal_mask(3, 5, 2)
    mask[1, 2] = False
    h = np.zeros((3, 5))
    doc, folder = _write(tmp_path, "obj", h, mask, _CheckerSupport("packed", mask=mask), given=False)
    assert np.array_equal(np.load(folder / "arrays" / "support.npy"), np.packbits(mask.reshape(-1)))
    doc, _ = _write(tmp_path, "objc", h, causal_mask(3, 5, 2), _CheckerSupport("causal", offset=2), given=False)
    assert doc["operator"]["support"] == {"form": "causal", "offset": 2}


def test_the_description_is_written_in_one_key_order(tmp_path):
    h = np.zeros((6, 6))
    mask = window_mask(6, 6, 2, 1)
    doc, folder = _write(tmp_path, "ordered", h, mask, {"offset": 1, "size": 2, "form": "window"}, given=False)
    text = (folder / "record.json").read_text()
    assert list(doc["operator"]["support"]) == ["form", "size", "offset"]
    _, other = _write(tmp_path, "object", h, mask, _CheckerSupport("window", offset=1, size=2), given=False)
    assert (other / "record.json").read_text().replace('"object"', '"ordered"') == text
