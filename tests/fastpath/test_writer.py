"""The producer's record writer and atomic file helpers: checks at write time, nothing left
behind on an error, files that follow the umask (a colleague can read a shared store), a record
left half replaced by a killed writer put back (``recover_store``), and exact tolerances stored
as text that reads back as the same rational."""

from __future__ import annotations

import os
import stat
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from softrank.fastpath.store.files import write_csv
from softrank.fastpath.store.writer import RecordWriter, write_index
from softrank.replay.reader import list_records


def softmax64(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_writer_checks_at_write_time_and_leaves_nothing_on_error(tmp_path):
    h = np.zeros((3, 3))
    with pytest.raises(ValueError, match="non-finite"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="disagrees"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(h)
            w.set_a_hat(np.full((3, 4), 0.25))
    with pytest.raises(ValueError, match="do not fit"):
        with RecordWriter(tmp_path, "bad", {}) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(h))
            w.add_tolerance(0.25, upper=(np.zeros((3, 1)), np.zeros((4, 1)), "x"))
    with pytest.raises(ValueError, match="needs an operator"):
        with RecordWriter(tmp_path, "bad", {}):
            pass
    assert list((tmp_path / "records").iterdir()) == []  # no temporary folder, no record
    with RecordWriter(tmp_path, "good", {}) as w:
        w.set_logits(h)
        w.set_a_hat(softmax64(h))
    assert [p.name for p in list_records(tmp_path)] == ["good"]


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_written_files_follow_the_umask(tmp_path, mask, file_mode, dir_mode):
    old = os.umask(mask)
    try:
        h = np.zeros((2, 2))
        with RecordWriter(tmp_path, "r", {}) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(h))
        write_index(tmp_path)
        write_csv(tmp_path / "t.csv", [{"a": 1}])
    finally:
        os.umask(old)
    folder = tmp_path / "records" / "r"
    for path, want in [(folder, dir_mode), (folder / "arrays", dir_mode), (folder / "record.json", file_mode),
                       (folder / "arrays" / "a_hat.npy", file_mode), (tmp_path / "index.csv", file_mode),
                       (tmp_path / "t.csv", file_mode)]:
        assert stat.S_IMODE(path.stat().st_mode) == want, path


def _record(store, rid, h):
    with RecordWriter(store, rid, {"version": float(h[0, 0])}) as w:
        w.set_logits(h)
        w.set_a_hat(softmax64(h))
    return store / "records" / rid / "record.json"


def test_recover_store_puts_back_a_record_left_between_the_two_renames(tmp_path):
    """A writer killed between ``records/ID -> .old-ID-*/old`` and ``tmp -> records/ID`` left the
    record only in the hidden trash folder (the store no longer lists it); a writer killed while
    assembling left a ``.tmp-*`` folder.  ``recover_store`` undoes both."""
    import shutil
    import tempfile

    from softrank.fastpath.store.writer import recover_store
    from softrank.replay.reader import read_record

    records = tmp_path / "records"
    before = _record(tmp_path, "gone", np.zeros((3, 3))).read_bytes()
    _record(tmp_path, "kept", np.zeros((2, 2)))
    trash = Path(tempfile.mkdtemp(prefix=".old-gone-", dir=records))  # the first rename, by hand
    os.rename(records / "gone", trash / "old")
    stale = Path(tempfile.mkdtemp(prefix=".tmp-gone-", dir=records))  # the new version, never moved
    (stale / "arrays").mkdir()
    done = Path(tempfile.mkdtemp(prefix=".old-kept-", dir=records))  # both renames done, trash left
    shutil.copytree(records / "kept", done / "old")
    assert [p.name for p in list_records(tmp_path)] == ["kept"]

    assert recover_store(tmp_path) == ["gone"]
    assert [p.name for p in list_records(tmp_path)] == ["gone", "kept"]
    assert sorted(p.name for p in records.iterdir()) == ["gone", "kept"]  # no trash, no temporary folder
    assert (records / "gone" / "record.json").read_bytes() == before
    assert read_record(records / "gone").shape == (3, 3) and read_record(records / "kept").shape == (2, 2)
    assert recover_store(tmp_path) == [] and recover_store(tmp_path / "nowhere") == []


def test_recover_store_keeps_the_new_record_when_both_exist(tmp_path):
    import tempfile

    from softrank.fastpath.store.writer import recover_store

    records = tmp_path / "records"
    old = _record(tmp_path, "r", np.zeros((2, 2))).read_bytes()
    trash = Path(tempfile.mkdtemp(prefix=".old-r-", dir=records))
    os.rename(records / "r", trash / "old")
    new = _record(tmp_path, "r", np.ones((2, 2))).read_bytes()  # a later writer finished
    assert new != old
    assert recover_store(tmp_path) == []
    assert (records / "r" / "record.json").read_bytes() == new and not trash.exists()


@pytest.mark.parametrize("q, text", [(Fraction(3, 20), "0.15"), (Fraction(1, 4), "0.25"), (Fraction(1, 3), "1/3"),
                                     (Fraction(7, 20), "0.35"), (Fraction(1, 10**30), "0." + "0" * 29 + "1"),
                                     (Fraction(-5, 2), "-2.5"), (Fraction(2), "2"), (Fraction(1, 6), "1/6"),
                                     (Fraction(0.1), "0.1000000000000000055511151231257827021181583404541015625")])
def test_exact_text_is_decimal_when_finite_else_p_over_q(q, text):
    from softrank.exact.rational import parse_rational
    from softrank.fastpath.store.writer import exact_text

    assert exact_text(q) == text
    assert Fraction(text) == q and parse_rational(text) == q


def test_exact_text_round_trips_for_many_rationals():
    from softrank.exact.rational import parse_rational
    from softrank.fastpath.store.writer import exact_text

    rng = np.random.default_rng(0)
    values = [Fraction(int(p), int(q)) for p, q in zip(rng.integers(-10**6, 10**6, 300), rng.integers(1, 10**6, 300))]
    values += [Fraction(int(p), 2**int(a) * 5**int(b)) for p, a, b in
               zip(rng.integers(-10**9, 10**9, 300), rng.integers(0, 80, 300), rng.integers(0, 80, 300))]
    values += [Fraction(float(x)) for x in rng.normal(size=100)] + [Fraction(2, 2**1100)]
    for q in values:
        assert parse_rational(exact_text(q)) == q, q


def test_a_fraction_tolerance_is_stored_as_exact_text_and_read_back_exactly(tmp_path):
    import json

    from softrank.replay.reader import read_record

    h = np.zeros((3, 3))
    with RecordWriter(tmp_path, "r", {}) as w:
        w.set_logits(h)
        w.set_a_hat(softmax64(h))
        for eps in (Fraction(3, 20), Fraction(1, 3), 0.25, "1/5"):
            w.add_tolerance(eps)
    doc = json.loads((tmp_path / "records" / "r" / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == ["0.15", "1/3", 0.25, "1/5"]
    got = [t.eps for t in read_record(tmp_path / "records" / "r").tolerances]
    assert got == [Fraction(3, 20), Fraction(1, 3), Fraction(1, 4), Fraction(1, 5)]


def test_write_index_never_opens_a_fifo_and_a_deep_record_is_one_error(tmp_path):
    """write_index reads each record.json: a FIFO there is listed as unreadable (it waited forever);
    a record nested too deeply to be written is an InputError for that record (a RecursionError)."""
    from softrank.errors import InputError

    h = np.zeros((3, 3))
    with RecordWriter(tmp_path, "good", {}) as w:
        w.set_logits(h)
        w.set_a_hat(softmax64(h))
    (tmp_path / "records" / "pipe").mkdir()
    os.mkfifo(tmp_path / "records" / "pipe" / "record.json")
    text = write_index(tmp_path).read_text()
    assert "pipe" in text and "(unreadable)" in text and "good" in text
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(InputError, match="nested too deeply"):
        with RecordWriter(tmp_path, "deep", {"x": deep}) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(h))
    assert not (tmp_path / "records" / "deep").exists()


def test_output_files_refuse_special_files_and_inputs_are_read_only_when_regular(tmp_path):
    """atomic_write never replaces a FIFO, a folder or a link loop (and names the path asked for);
    read_regular_file never blocks on a FIFO."""
    from softrank.fastpath.store.files import read_regular_file, write_json

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    os.symlink("loop", tmp_path / "loop")
    for name in ("pipe", "folder", "loop"):
        with pytest.raises(OSError) as err:
            write_json(tmp_path / name, {"a": 1})
        assert err.value.filename == str(tmp_path / name)
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode) and (tmp_path / "loop").is_symlink()
    with pytest.raises(OSError) as err:
        write_json(tmp_path / "afile" / "x.json", {})  # a folder that is not there: named as asked
    assert err.value.filename == str(tmp_path / "afile" / "x.json")
    with pytest.raises(OSError, match="not a regular file"):
        read_regular_file(tmp_path / "pipe")
    write_json(tmp_path / "ok.json", [1])
    assert read_regular_file(tmp_path / "ok.json") == b"[\n 1\n]"
    with pytest.raises(OSError, match="larger than"):
        read_regular_file(tmp_path / "ok.json", max_bytes=2)


def test_write_json_writes_standard_json(tmp_path):
    import json
    import math

    from softrank.fastpath.store.files import write_json

    path = write_json(tmp_path / "x.json", {"a": math.nan, "b": [1.0, -math.inf, {"c": math.inf}], "d": "NaN",
                                            "e": [np.float64(math.nan), np.int64(3), np.bool_(True)]})
    text = path.read_text()
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {"a": None, "b": [1.0, None, {"c": None}],
                                                                       "d": "NaN", "e": [None, 3, True]}


def test_the_writer_writes_a_support_only_when_given(tmp_path):
    import json

    from softrank.replay.reader import read_record
    from softrank.replay.support import Support, support_of_mask

    h = np.random.default_rng(0).normal(size=(4, 6))
    mask = np.random.default_rng(1).random((4, 6)) < 0.5
    mask[:, 1] = True
    for rid, support in (("full", None), ("causal", Support("causal", 2)), ("packed", support_of_mask(mask))):
        visible = np.ones(h.shape, bool) if support is None else support.boolean(*h.shape)
        with RecordWriter(tmp_path, rid, {}, support=support) as w:
            w.set_logits(h)
            w.set_a_hat(softmax64(np.where(visible, h, -np.inf)))  # exactly 0 off the support
        op = json.loads((tmp_path / "records" / rid / "record.json").read_text())["operator"]
        assert ("support" in op) == (support is not None)
        rec = read_record(tmp_path / "records" / rid)
        assert (rec.mask is None) == (support is None)
    assert op["support"]["bits"]["dtype"] == "uint8" and np.array_equal(rec.mask, mask)
