"""Record store: round trip, atomic replacement, index, and the reader's checks."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from softrank.validated.errors import InputError
from softrank.fastpath.store.writer import RecordWriter, write_index
from softrank.replay.reader import list_records, read_record, record_entries


def softmax64(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make(store, rid="r1", eps=0.25, **kw):
    rng = np.random.default_rng(0)
    h = rng.normal(size=(4, 3))
    w = RecordWriter(store, rid, {"model": "m", "family": "synthetic", "layer": 1, "head": 2})
    w.set_logits(h)
    w.set_a_hat(softmax64(h))
    x, y = rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    w.add_tolerance(eps, upper=(x, y, "tsvd"),
                    lower=[{"kind": "decoder", "lower": 2, "rows": np.array([0, 3]), "W": rng.normal(size=(3, 2))}],
                    float64={"lower": 2, "upper": 2, "verdicts": {8: "feasible"}})
    return w.commit(), h, x, y


def test_round_trip_is_exact(tmp_path):
    folder, h, x, y = make(tmp_path)
    rec = read_record(folder)
    assert rec.record_id == "r1" and rec.form == "logits" and rec.shape == (4, 3)
    assert np.array_equal(rec.logits, h)
    tol = rec.tolerances[0]
    assert tol.eps == Fraction(0.25) and np.array_equal(tol.upper.X, x) and np.array_equal(tol.upper.Y, y)
    assert tol.lower[0].kind == "decoder" and tol.lower[0].lower == 2
    assert tol.lower[0].data["rows"].dtype == np.int64 and list(tol.lower[0].data["rows"]) == [0, 3]
    assert tol.float64_verdicts == {8: "feasible"} and tol.float64_upper == 2


def test_rational_eps_is_read_exactly(tmp_path):
    folder, *_ = make(tmp_path, eps="3/20")
    assert read_record(folder).tolerances[0].eps == Fraction(3, 20)


def test_rewrite_is_atomic_and_leaves_no_temporaries(tmp_path):
    make(tmp_path)
    folder, h, *_ = make(tmp_path)  # replace the same id
    assert [p.name for p in (tmp_path / "records").iterdir()] == ["r1"]
    assert np.array_equal(read_record(folder).logits, h)
    w = RecordWriter(tmp_path, "r2", {})
    w.abort()
    assert [p.name for p in list_records(tmp_path)] == ["r1"]


def test_uncommitted_writer_is_invisible(tmp_path):
    make(tmp_path)
    w = RecordWriter(tmp_path, "half", {})
    w.set_logits(np.zeros((2, 2)))
    assert [p.name for p in list_records(tmp_path)] == ["r1"]  # the temporary folder is skipped


def test_index_lists_records(tmp_path):
    make(tmp_path, "a")
    make(tmp_path, "b")
    text = write_index(tmp_path).read_text().splitlines()
    assert text[0].startswith("record_id,model") and len(text) == 3 and text[1].startswith("a,m,synthetic,1,2,4,3,logits")


def test_from_record_keeps_operator_and_drops_tolerances(tmp_path):
    folder, h, *_ = make(tmp_path)
    rec = read_record(folder)
    w = RecordWriter.from_record(tmp_path / "other", rec, {"note": "rebracketed"})
    w.add_tolerance(0.35)
    rec2 = read_record(w.commit())
    assert np.array_equal(rec2.logits, h) and rec2.provenance["note"] == "rebracketed"
    assert len(rec2.tolerances) == 1 and rec2.tolerances[0].upper is None


@pytest.mark.parametrize("edit,field", [
    (lambda d: d.update(schema="other"), "schema"),
    (lambda d: d.update(record_id="bad id!"), "record_id"),
    (lambda d: d["operator"].update(form="weird"), "operator.form"),
    (lambda d: d["tolerances"][0].update(eps="abc"), "tolerances[0].eps"),
    (lambda d: d["tolerances"][0].update(eps=True), "tolerances[0].eps"),
    (lambda d: d["tolerances"][0]["float64"]["verdicts"].update({"8": "maybe"}), "tolerances[0].float64.verdicts.8"),
    (lambda d: d["tolerances"][0]["float64"].update(lower=-1), "tolerances[0].float64.lower"),
    (lambda d: d["tolerances"][0]["lower"][0].pop("kind"), "tolerances[0].lower[0].kind"),
    (lambda d: d["a_hat"].update(dtype="float32"), "a_hat.dtype"),
    (lambda d: d["a_hat"].update(shape=[3, 4]), "a_hat.shape"),
    (lambda d: d.update(tolerances={}), "tolerances"),
    (lambda d: d.update(tolerances=d["tolerances"] * 257), "tolerances"),  # more than MAX_TOLERANCES
    (lambda d: d["tolerances"][0].update(lower=d["tolerances"][0]["lower"] * 257), "tolerances[0].lower"),
])
def test_reader_names_the_field(tmp_path, edit, field):
    folder, *_ = make(tmp_path)
    doc = json.loads((folder / "record.json").read_text())
    edit(doc)
    (folder / "record.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == field
    assert "r1" in err.value.where or "record.json" in err.value.field or err.value.field == "record_id"
    assert "\n" not in err.value.one_line()


def test_not_a_store(tmp_path):
    with pytest.raises(InputError) as err:
        list_records(tmp_path / "nope")
    assert err.value.field == "records"
    with pytest.raises(InputError) as err:
        record_entries(tmp_path / "nope")
    assert err.value.field == "records"


def test_record_entries_are_the_folders_and_the_stray_entries_sorted(tmp_path):
    """``record_entries``: record folders and non-hidden entries that are not folders (a file, a
    FIFO, a dangling link, a link loop), sorted by name; a hidden entry is left out; reading a
    stray entry is an InputError naming it and record.json (a FIFO is never opened)."""
    import os

    make(tmp_path, "b")
    records = tmp_path / "records"
    (records / "a-file").write_text("x")
    os.mkfifo(records / "c-fifo")
    os.symlink(records / "missing", records / "d-dangling")
    os.symlink("e-loop", records / "e-loop")
    (records / ".hidden").write_text("x")
    assert [p.name for p in record_entries(tmp_path)] == ["a-file", "b", "c-fifo", "d-dangling", "e-loop"]
    assert [p.name for p in list_records(tmp_path)] == ["b"]
    for entry in record_entries(tmp_path):
        if entry.name != "b":
            with pytest.raises(InputError) as err:
                read_record(entry)
            assert entry.name in err.value.where and err.value.field == "record.json"


# ----------------------------------------------------------------------------------------------
# Hostile manifests: every one is a one-line InputError naming the field, never a crash or a hang.
# ----------------------------------------------------------------------------------------------


def _edit(folder, change):
    path = folder / "record.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _set_eps(v):
    return lambda d: d["tolerances"][0].__setitem__("eps", v)


@pytest.mark.parametrize("label, change, field", [
    ("eps integer beyond binary64", _set_eps(10**400), "tolerances[0].eps"),
    ("eps with a huge exponent", _set_eps("1e-10000000"), "tolerances[0].eps"),
    ("eps with too many digits", _set_eps("1/" + "7" * 5000), "tolerances[0].eps"),
    ("scale beyond binary64", None, "operator.scale"),
    ("float64 upper beyond int64", lambda d: d["tolerances"][0]["float64"].__setitem__("upper", 2**70),
     "tolerances[0].float64.upper"),
    ("budget key beyond int64", lambda d: d["tolerances"][0]["float64"]["verdicts"].__setitem__(str(2**70), "feasible"),
     "tolerances[0].float64.verdicts." + str(2**70)),
    ("budget key not an integer", lambda d: d["tolerances"][0]["float64"]["verdicts"].__setitem__("8x", "feasible"),
     "tolerances[0].float64.verdicts"),
    ("claimed lower beyond int64", lambda d: d["tolerances"][0]["lower"][0].__setitem__("lower", 2**64),
     "tolerances[0].lower[0].lower"),
    ("array shape beyond int64", lambda d: d["a_hat"].__setitem__("shape", [2**70, 3]), "a_hat.shape"),
])
def test_numbers_out_of_range_are_input_errors(tmp_path, label, change, field):
    if change is None:  # a qk record whose scale is a JSON integer too large for a float
        rng = np.random.default_rng(1)
        q, k = rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
        with RecordWriter(tmp_path, "r1", {}) as w:
            w.set_qk(q, k, 0.5)
            w.set_a_hat(softmax64(0.5 * q @ k.T))
        folder = tmp_path / "records" / "r1"
        change = lambda d: d["operator"].__setitem__("scale", 10**400)  # noqa: E731
    else:
        folder, *_ = make(tmp_path)
    _edit(folder, change)
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == field, (label, err.value.one_line())
    assert len(err.value.one_line()) < 400 and "\n" not in err.value.one_line()


def test_integers_beyond_the_conversion_limit_and_deep_nesting(tmp_path):
    folder, *_ = make(tmp_path)
    path = folder / "record.json"
    text = path.read_text()
    path.write_text(text.replace('"layer": 1', '"layer": ' + "9" * 5000))
    with pytest.raises(InputError, match="unreadable number"):
        read_record(folder)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_record(folder)


def test_special_files_are_refused_without_blocking(tmp_path):
    import os

    folder, *_ = make(tmp_path)
    doc = json.loads((folder / "record.json").read_text())
    target = folder / doc["a_hat"]["path"]
    target.unlink()
    os.mkfifo(target)  # reading a pipe would wait forever for a writer
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "a_hat.path" and "not a regular file" in err.value.message
    manifest = folder / "record.json"
    manifest.unlink()
    os.mkfifo(manifest)
    with pytest.raises(InputError, match="not a regular file"):
        read_record(folder)


def test_folders_link_loops_and_nul_bytes_are_input_errors(tmp_path):
    """A folder where record.json or an array should be, an array path that is a symlink loop or
    holds a NUL byte: each an InputError naming the field (they were an OSError naming a file
    descriptor, a RuntimeError and a ValueError, and stopped a whole replay)."""
    import os

    folder, *_ = make(tmp_path)
    doc = json.loads((folder / "record.json").read_text())
    target = folder / doc["a_hat"]["path"]
    target.unlink()
    target.mkdir()
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "a_hat.path" and "not a regular file" in err.value.message
    target.rmdir()
    os.symlink(target.name, target)  # a link to itself
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "a_hat.path" and "symbolic links" in err.value.message
    doc["a_hat"]["path"] = "arrays/a\u0000b.npy"
    (folder / "record.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "a_hat.path" and "inside the record folder" in err.value.message
    (folder / "record.json").unlink()
    (folder / "record.json").mkdir()
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "record.json" and "not a regular file" in err.value.message


def test_an_array_file_larger_than_its_shape_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A sparse 1 GiB file behind a small declared shape: refused from its size (the old reader
    read and hashed all of it first); the bytes are never read."""
    folder, *_ = make(tmp_path)
    doc = json.loads((folder / "record.json").read_text())
    target = folder / doc["a_hat"]["path"]
    with open(target, "r+b") as fh:
        fh.truncate(1 << 30)  # sparse: no disk used
    import os

    opened = []  # the size of every file the reader opens for reading
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: opened.append(os.fstat(fd).st_size) or real_fdopen(fd, *a, **k))
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "a_hat.path" and "more than the" in err.value.message
    assert opened and max(opened) < 1 << 20  # the big file was never read


def test_a_huge_record_json_is_refused_from_its_size(tmp_path):
    folder, *_ = make(tmp_path)
    with open(folder / "record.json", "r+b") as fh:
        fh.truncate(1 << 30)  # sparse
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == "record.json" and "more than the" in err.value.message


def test_identity_record_id_must_match_its_folder_and_keys_must_be_unique(tmp_path):
    folder, *_ = make(tmp_path)
    copy = folder.parent / "r1-copy"
    import shutil

    shutil.copytree(folder, copy)
    with pytest.raises(InputError, match="differs from its folder name") as err:
        read_record(copy)
    assert err.value.field == "record_id"
    text = (folder / "record.json").read_text()
    (folder / "record.json").write_text(text.replace('"schema_version": 1,', '"schema_version": 1, "schema_version": 1,'))
    with pytest.raises(InputError, match="duplicate JSON key 'schema_version'"):
        read_record(folder)


def test_count_limits_admit_what_the_front_ends_write():
    """The reader's limits on tolerances and certificates are the ones the writers keep to."""
    from softrank.cli.args import parse_tolerances
    from softrank.replay.reader import MAX_TOLERANCES

    many = ",".join(f"{i}/1000" for i in range(1, MAX_TOLERANCES + 1))
    assert len(parse_tolerances(many)) == MAX_TOLERANCES
    with pytest.raises(InputError) as err:
        parse_tolerances(many + ",999/1000")
    assert err.value.field == "eps" and "more than the 256" in err.value.one_line()


def _qk_record(store, scale_json):
    """A qk record whose ``operator.scale`` is then rewritten in record.json as the JSON text given."""
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=(3, 2)), rng.normal(size=(4, 2))
    with RecordWriter(store, "r1", {}) as w:
        w.set_qk(q, k, 0.5)
        w.set_a_hat(softmax64(0.5 * q @ k.T))
    path = store / "records" / "r1" / "record.json"
    text = path.read_text()
    assert text.count('"scale": 0.5') == 1
    path.write_text(text.replace('"scale": 0.5', f'"scale": {scale_json}'))
    return path.parent


@pytest.mark.parametrize("text, value", [("2", 2.0), ("-3", -3.0), (str(2**53), 2.0**53), (str(2**60 + 2**8), 2.0**60 + 2**8),
                                         (str(3 * 2**1022), 3.0 * 2**1022), ("0.1", 0.1)])
def test_a_json_integer_scale_binary64_holds_is_that_number_exactly(tmp_path, text, value):
    rec = read_record(_qk_record(tmp_path, text))
    assert type(rec.scale) is float and rec.scale == value
    if "." not in text:
        assert Fraction(rec.scale) == int(text)  # exactly the integer written


@pytest.mark.parametrize("text", [str(2**53 + 1), str(2**60 + 1), "-" + str(2**64 + 3), str(2**1024), "9" * 400])
def test_a_json_integer_scale_binary64_would_round_is_refused(tmp_path, text):
    folder = _qk_record(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_record(folder)
    line = err.value.one_line()
    assert err.value.field == "operator.scale" and "record.json" in line and str(folder) in line
    assert "not exactly a binary64 number" in line and "\n" not in line and len(line) < 400


def test_the_one_safe_reader_checks_the_open_file_and_the_producer_uses_it(tmp_path, monkeypatch):
    """``read_regular_file`` opens without blocking and decides on the open descriptor (fstat), never
    on a path checked before: a FIFO, a folder, a link loop or a file over the limit is an OSError
    naming the path and nothing is read; the producer's ``fastpath.store.files`` re-uses it."""
    import os

    from softrank.fastpath.store import files
    from softrank.replay.reader import read_regular_file

    assert files.read_regular_file is read_regular_file
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    os.symlink("loop", tmp_path / "loop")
    (tmp_path / "ok").write_bytes(b"12345")
    import inspect

    assert "stat(" not in inspect.getsource(read_regular_file).replace("fstat(", "")  # no path is stat'ed
    stats = []
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: stats.append(fd) or real_fstat(fd))
    for name, why in (("pipe", "not a regular file"), ("folder", "not a regular file"), ("loop", "symbolic links")):
        with pytest.raises(OSError, match=why) as err:
            read_regular_file(tmp_path / name)
        assert err.value.filename == str(tmp_path / name)
    with pytest.raises(OSError, match="more than the 4 allowed"):
        read_regular_file(tmp_path / "ok", max_bytes=4)
    assert read_regular_file(tmp_path / "ok", max_bytes=5) == b"12345" and len(stats) == 4  # the loop fails at open
