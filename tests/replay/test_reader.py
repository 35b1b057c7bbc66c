"""Record store: round trip, atomic replacement, index, and the reader's checks."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from softrank.errors import InputError
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
    (lambda d: d.update(schema="softrank.records"), "schema"),  # sorts after the right name
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
    from softrank.replay.reader import MAX_TOLERANCES
    from softrank.replay.tolerance import Tolerance

    def parse_tolerances(text):  # as softrank bracket and softrank run read --eps
        return Tolerance.parse_list(text, most=MAX_TOLERANCES)

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


# ----------------------------------------------------------------------------------------------
# Every field at its limits and with each wrong JSON type: a value at a limit is accepted, one past
# it refused, and each refusal is a one-line InputError naming the field by its path.
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _template(tmp_path_factory):
    """One record written by the producer (``make``), copied afresh for each test below."""
    folder, *_ = make(tmp_path_factory.mktemp("template"))
    return folder


@pytest.fixture
def fresh(tmp_path, _template):
    """A function returning a fresh copy of the template record as ``tmp_path/records/r1``."""
    import shutil

    def copy():
        dest = tmp_path / "records" / "r1"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(_template, dest)
        return dest
    return copy


INT64_MAX_TEXT = "9223372036854775807"  # 2**63 - 1: integer fields end up in int64 table columns


def _refused(folder, change=None) -> InputError:
    """The InputError that reading ``folder`` raises (after applying ``change`` to record.json)."""
    if change is not None:
        _edit(folder, change)
    with pytest.raises(InputError) as err:
        read_record(folder)
    line = err.value.one_line()
    assert "\n" not in line and str(folder) in line and (not err.value.field or err.value.field in line)
    return err.value


def _npy(arr) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _put_array(folder, ref, raw: bytes) -> None:
    """Write ``raw`` as the file the array reference ``ref`` names and record its hash in ``ref``."""
    import hashlib

    (folder / ref["path"]).write_bytes(raw)
    ref["sha256"] = hashlib.sha256(raw).hexdigest()


def _tol(d):
    return d["tolerances"][0]


_INTEGER_FIELDS = {  # field path: (where it sits in record.json, how the read record shows it)
    "tolerances[0].float64.lower": (lambda d: _tol(d)["float64"], "lower", lambda rec: rec.tolerances[0].float64_lower),
    "tolerances[0].float64.upper": (lambda d: _tol(d)["float64"], "upper", lambda rec: rec.tolerances[0].float64_upper),
    "tolerances[0].lower[0].lower": (lambda d: _tol(d)["lower"][0], "lower",
                                     lambda rec: rec.tolerances[0].lower[0].lower),
}


@pytest.mark.parametrize("field", sorted(_INTEGER_FIELDS))
def test_an_integer_field_accepts_zero_and_the_int64_maximum(fresh, field):
    parent, key, shown = _INTEGER_FIELDS[field]
    folder = fresh()
    for value in (0, 2**63 - 1):
        _edit(folder, lambda d: parent(d).__setitem__(key, value))
        got = shown(read_record(folder))
        assert got == value and type(got) is int


@pytest.mark.parametrize("value", [-1, 2**63, 2**64 + 1, -(2**63)])
@pytest.mark.parametrize("field", sorted(_INTEGER_FIELDS))
def test_an_integer_field_refuses_a_value_outside_int64_range_naming_the_field(fresh, field, value):
    parent, key, _ = _INTEGER_FIELDS[field]
    folder = fresh()
    err = _refused(folder, lambda d: parent(d).__setitem__(key, value))
    assert err.field == field
    assert err.message == f"must be an integer in [0, {INT64_MAX_TEXT}], got {value}"


@pytest.mark.parametrize("value, message", [
    (True, "expected an integer, got True"), (False, "expected an integer, got False"),
    (2.0, "expected int, got float"), ("2", "expected int, got str"), ([2], "expected int, got list"),
])
@pytest.mark.parametrize("field", sorted(_INTEGER_FIELDS))
def test_an_integer_field_refuses_booleans_floats_and_text(fresh, field, value, message):
    parent, key, _ = _INTEGER_FIELDS[field]
    folder = fresh()
    err = _refused(folder, lambda d: parent(d).__setitem__(key, value))
    assert err.field == field and err.message == message


def test_a_required_integer_may_not_be_null_or_missing(fresh):
    """The claimed lower bound of a certificate and the rank of a witness are required: JSON null is
    a value of the wrong type, and an absent key a missing field (neither is read as "no value")."""
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["lower"][0].__setitem__("lower", None))
    assert err.field == "tolerances[0].lower[0].lower" and err.message == "expected int, got NoneType"
    err = _refused(folder, lambda d: _tol(d)["lower"][0].pop("lower"))
    assert err.field == "tolerances[0].lower[0].lower" and err.message == "missing field"
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["upper"].__setitem__("rank", None))
    assert err.field == "tolerances[0].upper.rank" and err.message == "expected int, got NoneType"
    err = _refused(folder, lambda d: _tol(d)["upper"].__setitem__("rank", True))
    assert err.field == "tolerances[0].upper.rank" and err.message == "expected an integer, got True"
    err = _refused(folder, lambda d: _tol(d)["upper"].pop("rank"))
    assert err.field == "tolerances[0].upper.rank" and err.message == "missing field"


@pytest.mark.parametrize("budget", ["0", "8", INT64_MAX_TEXT, "00012"])
def test_a_verdict_budget_from_zero_to_the_int64_maximum_is_read_as_an_integer(fresh, budget):
    folder = fresh()
    _edit(folder, lambda d: _tol(d)["float64"].__setitem__("verdicts", {budget: "impossible"}))
    assert read_record(folder).tolerances[0].float64_verdicts == {int(budget): "impossible"}


def test_every_documented_verdict_is_accepted(fresh):
    folder = fresh()
    _edit(folder, lambda d: _tol(d)["float64"].__setitem__("verdicts", {"1": "feasible", "2": "impossible",
                                                                        "3": "unresolved"}))
    assert read_record(folder).tolerances[0].float64_verdicts == {1: "feasible", 2: "impossible", 3: "unresolved"}


@pytest.mark.parametrize("budget", ["-1", str(2**63), "9" * 40])
def test_a_verdict_budget_outside_int64_range_is_refused_naming_it(fresh, budget):
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["float64"].__setitem__("verdicts", {budget: "feasible"}))
    assert err.field == f"tolerances[0].float64.verdicts.{budget}"
    assert err.message.startswith(f"must be an integer in [0, {INT64_MAX_TEXT}], got ")


@pytest.mark.parametrize("budget", ["9" * 41, "", "+8", " 8", "8 ", "8.0", "1e3", "\uff18", "\u0668", "0x10"])
def test_a_verdict_budget_that_is_not_plain_ascii_digits_is_refused(fresh, budget):
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["float64"].__setitem__("verdicts", {budget: "feasible"}))
    assert err.field == "tolerances[0].float64.verdicts" and err.message.endswith("is not an integer")


@pytest.mark.parametrize("verdict", ["Feasible", "", None, 1, ["feasible"]])
def test_a_verdict_outside_the_documented_three_is_refused(fresh, verdict):
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["float64"].__setitem__("verdicts", {"8": verdict}))
    assert err.field == "tolerances[0].float64.verdicts.8"
    assert err.message.startswith("expected one of ('feasible', 'impossible', 'unresolved'), got ")


@pytest.mark.parametrize("parent, key, field", [
    (lambda d: d, "schema", "schema"),
    (lambda d: d, "schema_version", "schema_version"),
    (lambda d: d, "record_id", "record_id"),
    (lambda d: d, "provenance", "provenance"),
    (lambda d: d, "operator", "operator"),
    (lambda d: d, "a_hat", "a_hat"),
    (lambda d: d, "tolerances", "tolerances"),
    (lambda d: d["operator"], "form", "operator.form"),
    (lambda d: d["operator"], "logits", "operator.logits"),
    (lambda d: d["a_hat"], "path", "a_hat.path"),
    (lambda d: d["a_hat"], "dtype", "a_hat.dtype"),
    (lambda d: d["a_hat"], "shape", "a_hat.shape"),
    (lambda d: d["a_hat"], "sha256", "a_hat.sha256"),
    (lambda d: _tol(d), "eps", "tolerances[0].eps"),
    (lambda d: _tol(d)["upper"], "X", "tolerances[0].upper.X"),
    (lambda d: _tol(d)["upper"], "Y", "tolerances[0].upper.Y"),
    (lambda d: _tol(d)["upper"]["Y"], "sha256", "tolerances[0].upper.Y.sha256"),
    (lambda d: _tol(d)["lower"][0], "kind", "tolerances[0].lower[0].kind"),
    (lambda d: _tol(d)["lower"][0]["W"], "path", "tolerances[0].lower[0].W.path"),
])
def test_a_missing_required_field_is_refused_by_its_path(fresh, parent, key, field):
    folder = fresh()
    err = _refused(folder, lambda d: parent(d).pop(key))
    assert err.field == field and err.message == "missing field"


@pytest.mark.parametrize("change, field, message", [
    (lambda d: d.__setitem__("schema", 1), "schema", "expected str, got int"),
    (lambda d: d.__setitem__("schema_version", True), "schema_version", "expected an integer, got True"),
    (lambda d: d.__setitem__("schema_version", "1"), "schema_version", "expected int, got str"),
    (lambda d: d.__setitem__("schema_version", 1.0), "schema_version", "expected int, got float"),
    (lambda d: d.__setitem__("schema_version", 2), "schema_version",
     "unknown schema version 2 (this reader knows [1])"),
    (lambda d: d.__setitem__("record_id", None), "record_id", "expected str, got NoneType"),
    (lambda d: d.__setitem__("provenance", []), "provenance", "expected dict, got list"),
    (lambda d: d.__setitem__("operator", "logits"), "operator", "expected dict, got str"),
    (lambda d: d["operator"].__setitem__("form", ["logits"]), "operator.form", "expected str, got list"),
    (lambda d: d["operator"].__setitem__("logits", None), "operator.logits", "expected dict, got NoneType"),
    (lambda d: d.__setitem__("a_hat", [[1.0]]), "a_hat", "expected dict, got list"),
    (lambda d: d["a_hat"].__setitem__("shape", "4x3"), "a_hat.shape", "expected list, got str"),
    (lambda d: d["a_hat"].__setitem__("sha256", None), "a_hat.sha256", "expected str, got NoneType"),
    (lambda d: d["a_hat"].__setitem__("path", 7), "a_hat.path", "expected str, got int"),
    (lambda d: d.__setitem__("tolerances", [0.25]), "tolerances[0]", "expected an object"),
    (lambda d: _tol(d).__setitem__("upper", [1]), "tolerances[0].upper", "expected dict, got list"),
    (lambda d: _tol(d)["upper"].__setitem__("X", "arrays/t0_upper_X.npy"), "tolerances[0].upper.X",
     "expected dict, got str"),
    (lambda d: _tol(d).__setitem__("lower", {"kind": "decoder"}), "tolerances[0].lower", "expected list, got dict"),
    (lambda d: _tol(d).__setitem__("lower", ["decoder"]), "tolerances[0].lower[0]", "expected an object"),
    (lambda d: _tol(d)["lower"][0].__setitem__("kind", 3), "tolerances[0].lower[0].kind", "expected str, got int"),
    (lambda d: _tol(d).__setitem__("float64", [2, 2]), "tolerances[0].float64", "expected dict, got list"),
    (lambda d: _tol(d)["float64"].__setitem__("verdicts", [["8", "feasible"]]), "tolerances[0].float64.verdicts",
     "expected dict, got list"),
    (lambda d: d["operator"].__setitem__("form", "dense"), "operator.form", "expected 'logits' or 'qk', got 'dense'"),
    # an unknown form is named as such, not by the missing fields of a known one
    (lambda d: d["operator"].update(form="dense", logits=None), "operator.form", "expected 'logits' or 'qk', got 'dense'"),
    (lambda d: d["operator"].update(form="sparse", logits=None), "operator.form",
     "expected 'logits' or 'qk', got 'sparse'"),
])
def test_a_field_of_the_wrong_json_type_is_refused_by_its_path(fresh, change, field, message):
    folder = fresh()
    err = _refused(folder, change)
    assert err.field == field and err.message == message


def test_optional_fields_may_be_absent_or_null(fresh):
    folder = fresh()

    def strip(d):
        tol = _tol(d)
        tol["upper"] = None
        tol["lower"] = None
        tol["float64"] = {"lower": None, "verdicts": None}
    _edit(folder, strip)
    tol = read_record(folder).tolerances[0]
    assert tol.upper is None and tol.lower == [] and tol.float64_lower is None and tol.float64_upper is None
    assert tol.float64_verdicts == {}
    _edit(folder, lambda d: d.__setitem__("tolerances", [{"eps": 0.5}, {"eps": 0.5, "float64": None}]))
    for tol in read_record(folder).tolerances:
        assert (tol.upper, tol.lower, tol.float64_lower, tol.float64_upper, tol.float64_verdicts) == (None, [], None,
                                                                                                      None, {})


def test_a_witness_construction_is_optional_and_kept_as_text_of_at_most_200_characters(fresh):
    folder = fresh()
    _edit(folder, lambda d: _tol(d)["upper"].pop("construction"))
    assert read_record(folder).tolerances[0].upper.construction == ""
    _edit(folder, lambda d: _tol(d)["upper"].__setitem__("construction", "c" * 200))
    assert read_record(folder).tolerances[0].upper.construction == "c" * 200
    _edit(folder, lambda d: _tol(d)["upper"].__setitem__("construction", "c" * 201))
    assert read_record(folder).tolerances[0].upper.construction == "c" * 197 + "..."
    _edit(folder, lambda d: _tol(d)["upper"].__setitem__("construction", 7))
    assert read_record(folder).tolerances[0].upper.construction == "7"


def test_a_certificate_kind_is_kept_as_text_of_at_most_100_characters(fresh):
    folder = fresh()
    _edit(folder, lambda d: _tol(d)["lower"][0].__setitem__("kind", "k" * 100))
    assert read_record(folder).tolerances[0].lower[0].kind == "k" * 100
    _edit(folder, lambda d: _tol(d)["lower"][0].__setitem__("kind", "k" * 101))
    assert read_record(folder).tolerances[0].lower[0].kind == "k" * 97 + "..."


def test_tolerances_and_certificates_up_to_the_limit_of_256_are_read(fresh):
    folder = fresh()
    _edit(folder, lambda d: d.__setitem__("tolerances", [{"eps": f"{t + 1}/1000"} for t in range(256)]))
    rec = read_record(folder)
    assert len(rec.tolerances) == 256 and rec.tolerances[255].eps == Fraction(256, 1000)
    _edit(folder, lambda d: d.__setitem__("tolerances", [{"eps": 0.5, "lower": [{"kind": "k", "lower": c}
                                                                                  for c in range(256)]}]))
    certs = read_record(folder).tolerances[0].lower
    assert len(certs) == 256 and certs[255].lower == 255
    err = _refused(folder, lambda d: _tol(d)["lower"].append({"kind": "k", "lower": 1}))
    assert err.field == "tolerances[0].lower"
    assert err.message == "257 certificates, more than the 256 a tolerance may hold"
    err = _refused(folder, lambda d: d.__setitem__("tolerances", [{"eps": 0.5}] * 257))
    assert err.field == "tolerances" and err.message == "257 entries, more than the 256 a record may hold"


def test_a_certificate_keeps_its_plain_fields_and_reads_arrays_of_any_dimension(fresh):
    """Fields of a certificate other than kind and lower: an array reference (an object with a
    sha256) is read with the dimension its shape lists (1-d, 2-d, 3-d), int64 or float64; any other
    value is kept as it is for the kind's checker."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    cert = _tol(doc)["lower"][0]
    cube = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 8
    cert["cube"] = {"path": "arrays/cube.npy", "dtype": "float64", "shape": [2, 3, 4]}
    _put_array(folder, cert["cube"], _npy(cube))
    cert["line"] = {"path": "arrays/line.npy", "dtype": "int64", "shape": [5]}
    _put_array(folder, cert["line"], _npy(np.arange(-2, 3, dtype=np.int64)))
    cert["note"] = {"text": "no hash: not an array"}
    cert["count"] = 3
    (folder / "record.json").write_text(json.dumps(doc))
    data = read_record(folder).tolerances[0].lower[0].data
    assert np.array_equal(data["cube"], cube) and data["cube"].shape == (2, 3, 4) and data["cube"].dtype == np.float64
    assert data["line"].dtype == np.int64 and data["line"].tolist() == [-2, -1, 0, 1, 2]
    assert data["rows"].tolist() == [0, 3] and data["W"].shape == (3, 2)
    assert data["note"] == {"text": "no hash: not an array"} and data["count"] == 3
    assert set(data) == {"rows", "W", "cube", "line", "note", "count"}  # kind and lower are not data


def test_a_certificate_array_of_another_dtype_or_without_one_is_refused(fresh):
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["lower"][0]["W"].__setitem__("dtype", "float32"))
    assert err.field == "tolerances[0].lower[0].W.dtype" and err.message == "expected float64 or int64, got 'float32'"
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["lower"][0]["W"].pop("dtype"))
    assert err.field == "tolerances[0].lower[0].W.dtype" and err.message == "missing field"
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["lower"][0]["W"].pop("shape"))
    assert err.field == "tolerances[0].lower[0].W.shape" and err.message == "missing field"
    folder = fresh()
    err = _refused(folder, lambda d: _tol(d)["lower"][0]["rows"].__setitem__("dtype", "float64"))
    assert err.field == "tolerances[0].lower[0].rows.dtype" and err.message == "file holds int64, manifest says float64"


@pytest.mark.parametrize("shape", [[4], [4, 3, 1], [4, True], [4, -1], [4, 3.0], [4, "3"], [4, None]])
def test_an_array_shape_must_list_one_non_negative_integer_per_axis(fresh, shape):
    folder = fresh()
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("shape", shape))
    assert err.field == "a_hat.shape" and err.message == f"expected 2 non-negative integers, got {shape!r}"


def test_an_array_dtype_must_be_the_one_the_field_needs(fresh):
    folder = fresh()
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("dtype", "int64"))
    assert err.field == "a_hat.dtype" and err.message == "expected float64, got 'int64'"


def test_a_shape_that_differs_from_the_file_is_refused(fresh):
    folder = fresh()
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("shape", [2, 6]))
    assert err.field == "a_hat.shape" and err.message == "file holds shape [4, 3], manifest says [2, 6]"


@pytest.mark.parametrize("stored", [np.float32, np.int64, ">f8", np.complex128])
def test_an_array_file_holding_another_dtype_than_the_manifest_is_refused(fresh, stored):
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    a_hat = np.load(folder / doc["a_hat"]["path"])
    raw = _npy(np.round(a_hat * 4).astype(stored))  # same shape, hash updated: only the dtype is wrong
    _put_array(folder, doc["a_hat"], raw)
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "a_hat.dtype"
    assert err.message == f"file holds {np.dtype(stored)}, manifest says float64"


def test_an_array_file_numpy_reads_in_another_layout_is_read_by_value(fresh):
    """A Fortran-order file and a version 2.0 .npy file (not the writer's own form) are read through
    numpy, as C-order float64 arrays of the same values."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    a_hat = np.load(folder / doc["a_hat"]["path"])
    logits = np.load(folder / doc["operator"]["logits"]["path"])
    _put_array(folder, doc["a_hat"], _npy(np.asfortranarray(a_hat)))
    import io

    buf = io.BytesIO()
    np.lib.format.write_array(buf, logits, version=(2, 0))
    _put_array(folder, doc["operator"]["logits"], buf.getvalue())
    (folder / "record.json").write_text(json.dumps(doc))
    rec = read_record(folder)
    assert np.array_equal(rec.a_hat, a_hat) and rec.a_hat.flags.c_contiguous and rec.a_hat.dtype == np.float64
    assert np.array_equal(rec.logits, logits)


def test_the_hash_is_compared_in_any_letter_case_and_any_other_digest_is_refused(fresh):
    folder = fresh()
    _edit(folder, lambda d: d["a_hat"].__setitem__("sha256", d["a_hat"]["sha256"].upper()))
    read_record(folder)
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("sha256", "0" * 64))
    assert err.field == "a_hat.sha256"
    assert err.message == "hash mismatch for arrays/a_hat.npy (file altered or truncated)"


@pytest.mark.parametrize("cut", [
    lambda raw: raw[:-8],  # one entry short
    lambda raw: raw[:-1],
    lambda raw: raw[:9],  # not even a header length
    lambda raw: b"\x93NUMPY\x01\x00" + b"\xff\xff" + raw[10:],  # a header length past the end
    lambda raw: raw[:8] + raw[8:].replace(b"'descr': '<f8'", b"'descr': 'f8!'"),
    lambda raw: raw[:6] + b"\x00\x09" + raw[8:],  # an unknown format version, 0.9
])
def test_a_corrupt_array_file_with_a_matching_hash_is_refused_as_unreadable(fresh, cut):
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    _put_array(folder, doc["a_hat"], cut((folder / doc["a_hat"]["path"]).read_bytes()))
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "a_hat.path" and err.message.startswith("not a readable .npy file (")


def test_an_array_file_of_pickled_objects_is_refused_without_unpickling_it(fresh):
    """An object array is stored as a pickle, and unpickling can run code: numpy is asked never to
    do it, so such a file is unreadable (the object here would record its own unpickling)."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    cells = np.empty((4, 3), dtype=object)
    cells[...] = 0.25
    cells[0, 0] = _Unpickled()
    _put_array(folder, doc["a_hat"], _pickled_npy(cells))
    (folder / "record.json").write_text(json.dumps(doc))
    _Unpickled.seen.clear()
    err = _refused(folder)
    assert err.field == "a_hat.path" and err.message == "not a readable .npy file (ValueError)"
    assert _Unpickled.seen == []


class _Unpickled:
    seen: list = []

    def __reduce__(self):
        return (_Unpickled._make, ())

    @staticmethod
    def _make():
        _Unpickled.seen.append("unpickled")
        return 0.25


def _pickled_npy(arr) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_array_entry_is_refused_with_its_position(fresh, bad):
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    w = np.load(folder / _tol(doc)["lower"][0]["W"]["path"])
    w[2, 1] = bad
    w = np.vstack([w, np.full((1, w.shape[1]), bad)])  # a later one too: the first is named
    entry = _tol(doc)["lower"][0]["W"]
    entry["shape"] = list(w.shape)
    _put_array(folder, entry, _npy(w))
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "tolerances[0].lower[0].W" and err.message == "non-finite entry (NaN or inf) at [2, 1]"


def test_an_array_file_may_exceed_its_data_by_at_most_a_64_kib_header(fresh):
    """A 4x3 float64 array (96 bytes of data) may lie in a file of 96 + 65536 bytes: a version 1.0
    header padded to that size is read; one more byte of padding is refused from the size."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    a_hat = np.load(folder / doc["a_hat"]["path"])
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (4, 3), }"

    def padded(total):
        length = total - 10 - a_hat.nbytes
        head = header + b" " * (length - len(header) - 1) + b"\n"
        return b"\x93NUMPY\x01\x00" + length.to_bytes(2, "little") + head + a_hat.tobytes()

    _put_array(folder, doc["a_hat"], padded(96 + 65536))
    (folder / "record.json").write_text(json.dumps(doc))
    assert np.array_equal(read_record(folder).a_hat, a_hat)
    _put_array(folder, doc["a_hat"], padded(96 + 65536 + 1))
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "a_hat.path" and "(65633 bytes, more than the 65632 allowed)" in err.message


def test_a_missing_array_file_is_refused_naming_its_path(fresh):
    folder = fresh()
    (folder / "arrays" / "a_hat.npy").unlink()
    err = _refused(folder)
    assert err.field == "a_hat.path" and err.message == "cannot read arrays/a_hat.npy: No such file or directory"


@pytest.mark.parametrize("rel", ["../outside.npy", "/etc/hostname", ".", "", "arrays/../../r1.npy"])
def test_an_array_path_must_name_a_file_inside_the_record_folder(tmp_path, fresh, rel):
    folder = fresh()
    (tmp_path / "records" / "outside.npy").write_bytes(b"x")
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("path", rel))
    assert err.field == "a_hat.path"
    assert err.message == f"array path is not a file name inside the record folder: {rel!r}"


def test_an_array_path_may_wander_if_it_ends_inside_the_record_folder(tmp_path, fresh):
    folder = fresh()
    _edit(folder, lambda d: d["a_hat"].__setitem__("path", "../r1/arrays/./a_hat.npy"))
    assert read_record(folder).shape == (4, 3)
    import os

    os.symlink(folder / "arrays" / "a_hat.npy", tmp_path / "records" / "link.npy")  # a link out, then back in
    _edit(folder, lambda d: d["a_hat"].__setitem__("path", "../link.npy"))
    assert read_record(folder).shape == (4, 3)


def test_a_link_to_a_file_outside_the_record_folder_is_refused(tmp_path, fresh):
    import os

    folder = fresh()
    outside = tmp_path / "outside.npy"
    outside.write_bytes((folder / "arrays" / "a_hat.npy").read_bytes())
    (folder / "arrays" / "a_hat.npy").unlink()
    os.symlink(outside, folder / "arrays" / "a_hat.npy")
    err = _refused(folder)
    assert err.field == "a_hat.path" and "inside the record folder" in err.message


@pytest.mark.parametrize("scale, message", [
    ("true", "expected a number, got True"),
    ("false", "expected a number, got False"),
    ("1e400", "must be finite, got inf"),  # JSON's reader turns an overflowing literal into inf
    ("-1e400", "must be finite, got -inf"),
    ('"0.5"', "expected int or float, got str"),
    ("null", "expected int or float, got NoneType"),
])
def test_a_scale_that_is_not_a_finite_number_is_refused(tmp_path, scale, message):
    err = _refused(_qk_record(tmp_path, scale))
    assert err.field == "operator.scale" and err.message == message


def test_a_qk_record_reads_queries_keys_scale_and_an_optional_bias(tmp_path):
    rng = np.random.default_rng(3)
    q, k, b = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(3, 4))
    with RecordWriter(tmp_path, "qb", {}) as w:
        w.set_qk(q, k, 0.75, bias=b)
        w.set_a_hat(softmax64(0.75 * q @ k.T + b))
    folder = tmp_path / "records" / "qb"
    rec = read_record(folder)
    assert rec.form == "qk" and rec.logits is None and rec.scale == 0.75 and type(rec.scale) is float
    assert np.array_equal(rec.queries, q) and np.array_equal(rec.keys, k) and np.array_equal(rec.bias, b)
    _edit(folder, lambda d: d["operator"].__setitem__("bias", None))
    rec = read_record(folder)  # a null bias is no bias (A_hat is not recomputed by the reader)
    assert rec.bias is None and "bias" not in rec.operator_assumption
    _edit(folder, lambda d: d["operator"].pop("bias"))
    assert read_record(folder).bias is None
    err = _refused(folder, lambda d: d["operator"].pop("keys"))
    assert err.field == "operator.keys" and err.message == "missing field"


@pytest.mark.parametrize("raw, message", [
    (b'{"schema": "softrank.record", "x": "\xff"}', "not UTF-8 text"),
    (b'{"schema": "softrank.record",\n "schema_version": ', "not valid JSON (truncated?): Expecting value at line 2"),
    (b'{"schema": NaN}', "non-finite JSON constant NaN"),
    (b'{"schema": -Infinity}', "non-finite JSON constant -Infinity"),
    (b'[{"schema": "softrank.record"}]', "top level must be an object"),
    (b'"softrank.record"', "top level must be an object"),
    (b'{"a": 1, "b": {"c": 1, "c": 2}}', "duplicate JSON key 'c'"),
])
def test_a_manifest_that_is_not_one_json_object_is_refused(fresh, raw, message):
    folder = fresh()
    (folder / "record.json").write_bytes(raw)
    err = _refused(folder)
    assert err.field == "record.json" and err.message.startswith(message) and err.where == str(folder)


def test_a_missing_manifest_is_refused_naming_it(fresh):
    folder = fresh()
    (folder / "record.json").unlink()
    err = _refused(folder)
    assert err.field == "record.json" and err.message == "cannot read record.json: No such file or directory"


def test_a_manifest_of_64_mib_is_read_and_one_byte_more_is_refused_unread(fresh):
    folder = fresh()
    text = (folder / "record.json").read_bytes()
    limit = 1 << 26
    (folder / "record.json").write_bytes(text + b" " * (limit - len(text)))  # trailing blanks are valid JSON
    assert (folder / "record.json").stat().st_size == limit
    assert read_record(folder).record_id == "r1"
    with open(folder / "record.json", "ab") as fh:
        fh.write(b" ")
    err = _refused(folder)
    assert err.field == "record.json" and "(67108865 bytes, more than the 67108864 allowed)" in err.message


def test_errors_name_the_folder_and_once_read_the_record_id(fresh):
    folder = fresh()
    err = _refused(folder, lambda d: d.__setitem__("schema", "softrank.other"))
    assert err.where == str(folder) and err.message == "expected 'softrank.record', got 'softrank.other'"
    folder = fresh()
    err = _refused(folder, lambda d: d["operator"].__setitem__("form", "dense"))
    assert err.where == f"{folder} [r1]"


def test_reading_a_fifo_with_no_writer_returns_at_once_instead_of_waiting(tmp_path):
    """A pipe is refused as not a regular file without waiting for a writer to open it (if the
    reader did block, the test opens the other end itself to release it, then fails)."""
    import errno
    import os
    import threading

    from softrank.replay.reader import read_regular_file

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = []

    def attempt():
        try:
            outcome.append(read_regular_file(fifo))
        except OSError as err:
            outcome.append(err)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(5)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(5)
        pytest.fail("opening a FIFO waited for a writer")
    assert isinstance(outcome[0], OSError) and outcome[0].errno == errno.EINVAL
    assert outcome[0].strerror == "not a regular file" and outcome[0].filename == str(fifo)


def test_a_refused_file_leaves_no_descriptor_open(tmp_path):
    import errno
    import os
    from pathlib import Path

    from softrank.replay.reader import read_regular_file

    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd to count open descriptors")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    (tmp_path / "big").write_bytes(b"123456")
    before = len(os.listdir(fds))
    for _ in range(5):
        for name, limit, code in (("pipe", None, errno.EINVAL), ("folder", None, errno.EINVAL),
                                  ("big", 5, errno.EFBIG)):
            with pytest.raises(OSError) as err:
                read_regular_file(tmp_path / name, limit)
            assert err.value.errno == code
        assert read_regular_file(tmp_path / "big") == b"123456"  # no limit given: any size
        assert read_regular_file(tmp_path / "big", 6) == b"123456"
    assert len(os.listdir(fds)) == before


@pytest.mark.parametrize("shape", [(), (5,), (0,), (2, 3), (0, 3), (2, 3, 4), (1, 1, 1, 1)])
@pytest.mark.parametrize("dtype", ["<f8", "<i8"])
def test_the_plain_npy_fast_path_reads_what_numpy_reads(shape, dtype):
    import io

    from softrank.replay.reader import _plain_npy

    arr = (np.arange(int(np.prod(shape))) - 3).astype(dtype).reshape(shape)
    raw = _npy(arr)
    got = _plain_npy(raw)
    expected = np.load(io.BytesIO(raw))
    assert got is not None and got.shape == expected.shape == shape and got.dtype == expected.dtype
    assert np.array_equal(got, expected) and not got.flags.writeable  # a view of the bytes read


def test_the_plain_npy_fast_path_reads_a_header_padded_past_256_bytes():
    from softrank.replay.reader import _plain_npy

    arr = np.arange(6, dtype="<f8").reshape(3, 2)
    for length in (255, 256, 1000, 65535):
        header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }"
        head = header + b" " * (length - len(header) - 1) + b"\n"
        raw = b"\x93NUMPY\x01\x00" + length.to_bytes(2, "little") + head + arr.tobytes()
        got = _plain_npy(raw)
        assert got is not None and np.array_equal(got, arr), length


def test_the_plain_npy_fast_path_leaves_any_other_form_to_numpy():
    import io

    from softrank.replay.reader import _plain_npy

    arr = np.arange(6, dtype="<f8").reshape(2, 3)
    raw = _npy(arr)
    assert _plain_npy(raw) is not None
    v2 = io.BytesIO()
    np.lib.format.write_array(v2, arr, version=(2, 0))
    for other in (raw[:-8], raw[:-1], raw + b"\0" * 8, raw[:8], raw[:10], b"", v2.getvalue(),
                  _npy(np.asfortranarray(arr)), _npy(arr.astype(">f8")), _npy(arr.astype("<f4")),
                  _npy(arr.astype("<i4")), b"\x93NUMPY\x01\x01" + raw[8:],
                  b"\x93NUMPY\x00\x09" + raw[8:], b"\x93NUMPX\x01\x00" + raw[8:]):
        assert _plain_npy(other) is None


@pytest.mark.parametrize("extent, message", [
    (0, "file holds shape [4, 3], manifest says [0, 3]"),
    (2**63 - 1, f"file holds shape [4, 3], manifest says [{INT64_MAX_TEXT}, 3]"),
    (2**63, "expected 2 non-negative integers, got [9223372036854775808, 3]"),
])
def test_an_array_extent_from_zero_to_the_int64_maximum_passes_the_shape_check(fresh, extent, message):
    """Extents 0 and 2**63 - 1 are valid numbers (then compared with the file); 2**63 is not."""
    folder = fresh()
    err = _refused(folder, lambda d: d["a_hat"].__setitem__("shape", [extent, 3]))
    assert err.field == "a_hat.shape" and err.message == message


def test_a_record_folder_name_holding_a_nul_byte_is_an_input_error(tmp_path):
    folder = tmp_path / "records" / "r\0one"
    err = _refused(folder)
    assert err.field == "record.json" and err.message == "cannot read record.json: embedded null byte"


def test_whole_record_checks_name_the_folder_and_the_record_id(fresh):
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    a_hat = np.load(folder / doc["a_hat"]["path"])
    _put_array(folder, doc["a_hat"], _npy(a_hat * 2))  # rows now sum to 2
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.where == f"{folder} [r1]" and err.field == "a_hat" and err.message.startswith("not row-stochastic: row ")


def test_a_later_tolerance_or_certificate_is_named_by_its_index(fresh):
    folder = fresh()

    def second(d):
        d["tolerances"].append({"eps": 0.5, "lower": [{"kind": "k", "lower": 1}, {"kind": "k", "lower": -3}]})
    err = _refused(folder, second)
    assert err.field == "tolerances[1].lower[1].lower"
    folder = fresh()
    err = _refused(folder, lambda d: d["tolerances"].append({"eps": 1.5}))
    assert err.field == "tolerances[1].eps" and err.message == "eps must lie in (0, 1), got 1.5"


@pytest.mark.parametrize("folder_name", ["a", "r0", "r10", "z"])
def test_a_record_id_before_or_after_its_folder_name_is_refused(fresh, folder_name):
    folder = fresh()
    other = folder.rename(folder.parent / folder_name)
    err = _refused(other)
    assert err.field == "record_id" and err.message == f"record id 'r1' differs from its folder name {folder_name!r}"


def test_a_certificate_array_declaring_hundreds_of_axes_is_judged_by_its_file(fresh):
    """The number of axes of a certificate array is the length of its shape list, whatever that is
    (here 300 axes of extent 1): the shape passes, and the file (not a .npy file) is what is refused."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    ref = {"path": "arrays/deep.npy", "dtype": "float64", "shape": [1] * 300}
    _put_array(folder, ref, b"not an array file")
    _tol(doc)["lower"][0]["deep"] = ref
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "tolerances[0].lower[0].deep.path" and err.message.startswith("not a readable .npy file")


def test_an_array_of_64_kib_of_data_or_more_is_read_with_its_header_allowance(fresh):
    """The allowance for the .npy header is added to the data size, whatever that size (here 8192
    and 12288 float64 entries: 64 KiB and 96 KiB of data)."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    for name, n in (("flat", 8192), ("wide", 12288)):
        ref = {"path": f"arrays/{name}.npy", "dtype": "float64", "shape": [n]}
        _put_array(folder, ref, _npy(np.linspace(0.0, 1.0, n)))
        _tol(doc)["lower"][0][name] = ref
    (folder / "record.json").write_text(json.dumps(doc))
    data = read_record(folder).tolerances[0].lower[0].data
    assert data["flat"].shape == (8192,) and data["wide"].shape == (12288,) and data["wide"][-1] == 1.0


def test_a_plain_array_file_with_more_axes_than_numpy_holds_is_refused_in_one_line(fresh):
    """A shape of 70 axes of extent 1 in a well-formed version-1.0 header: numpy holds at most 64
    axes, and the reader refuses the file with an InputError naming the field (never a bare
    ValueError escaping from the reshape)."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + "1, " * 70 + "), }"
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin-1") + np.float64(0.5).tobytes()
    ref = {"path": "arrays/deep.npy", "dtype": "float64", "shape": [1] * 70}
    _put_array(folder, ref, raw)
    _tol(doc)["lower"][0]["deep"] = ref
    (folder / "record.json").write_text(json.dumps(doc))
    err = _refused(folder)
    assert err.field == "tolerances[0].lower[0].deep.path" and err.message.startswith("not a readable .npy file")


def test_a_zero_dimensional_certificate_array_is_read_as_zero_dimensional(fresh):
    """An array declared with shape [] is read back with shape () and its one value."""
    folder = fresh()
    doc = json.loads((folder / "record.json").read_text())
    ref = {"path": "arrays/scalar.npy", "dtype": "float64", "shape": []}
    _put_array(folder, ref, _npy(np.array(0.25)))
    _tol(doc)["lower"][0]["scalar"] = ref
    (folder / "record.json").write_text(json.dumps(doc))
    value = read_record(folder).tolerances[0].lower[0].data["scalar"]
    assert value.shape == () and value.dtype == np.float64 and float(value) == 0.25
