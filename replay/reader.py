"""Reading a record folder: every field type-, shape-, range- and hash-checked.

Reading never trusts the producer: a problem raises ``InputError`` naming the record and the
field.  Every array file is re-hashed (SHA-256) against the manifest before it is parsed.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from softrank.errors import InputError
from softrank.replay.record import (SCHEMA, SCHEMA_VERSIONS_READ, VERDICTS, LowerCertificate, Record, ToleranceEntry,
                                    UpperWitness, check_record, short)
from softrank.replay.support import FIELDS, Support
from softrank.replay.tolerance import Tolerance

MAX_INT = 2**63 - 1  # integer fields end up in int64 table columns
MAX_TOLERANCES = 256  # tolerances per record, and lower certificates per tolerance: every one is
MAX_LOWER = 256  # checked, so a record may not ask for unbounded work (honest ones: a few of each)
NPY_HEADER_BYTES = 1 << 16  # an array file may exceed its data by at most this (the .npy header)
MANIFEST_BYTES = 1 << 26  # record.json: 64 MiB at most (real ones hold a few kB)


def read_regular_file(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes, opened without blocking and checked
    on the open descriptor (what is read is what was checked): anything else is an ``OSError`` naming
    the path before anything is read.  The project's one safe reader (``fastpath.store.files`` too)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"file larger than allowed ({info.st_size} bytes, more than the "
                                       f"{max_bytes} allowed)", str(path))
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        return fh.read()


class _Reader:
    """Reads one record folder; every failure names the record and the field."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.where = str(self.folder)
        self._resolved: Path | None = None

    @property
    def resolved(self) -> Path:
        """The record folder with every link resolved (once per record, when an array is read)."""
        self._resolved = self._resolved or self.folder.resolve()
        return self._resolved

    def fail(self, field_name: str, message: str):
        raise InputError(self.where, field_name, message)

    # -- primitive fields --
    def get(self, obj: dict, key: str, path: str, types, optional: bool = False):
        if not isinstance(obj, dict):
            self.fail(path, "expected an object")
        name = f"{path}.{key}".lstrip(".")
        if key not in obj or (optional and obj[key] is None):
            return None if optional else self.fail(name, "missing field")
        value = obj[key]
        if types is int and isinstance(value, bool):
            self.fail(name, f"expected an integer, got {value!r}")
        if not isinstance(value, types):
            wanted = " or ".join(t.__name__ for t in types) if isinstance(types, tuple) else types.__name__
            self.fail(name, f"expected {wanted}, got {type(value).__name__}")
        return value

    def count(self, obj: dict, key: str, path: str, optional: bool = False) -> int | None:
        """An integer field of a table column: ``0 <= value <= MAX_INT`` (int64 range)."""
        value = self.get(obj, key, path, int, optional=optional)
        if value is not None and not 0 <= value <= MAX_INT:
            self.fail(f"{path}.{key}", f"must be an integer in [0, {MAX_INT}], got {short(value)}")
        return value

    def scale(self, value, path: str) -> float:
        """A JSON number meaning exactly what it says: a finite float, or an integer that binary64 holds
        exactly (any other integer is refused, never rounded)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, f"expected a number, got {short(value)}")
        if isinstance(value, int):
            try:
                exact = float(value)
            except OverflowError:
                exact = math.inf
            if exact != value:  # Python compares an int and a float exactly
                self.fail(path, f"the JSON integer {short(value)} in record.json is not exactly a binary64 "
                                "number (write a number binary64 holds exactly)")
            return exact
        if not math.isfinite(value):
            self.fail(path, f"must be finite, got {value!r}")
        return value

    def file_bytes(self, file: Path, field_name: str, shown: str, max_bytes: int | None = None) -> bytes:
        """``read_regular_file``, with any failure an ``InputError`` naming the field."""
        try:
            return read_regular_file(file, max_bytes)
        except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
            self.fail(field_name, f"cannot read {shown}: {getattr(err, 'strerror', None) or err}")

    # -- arrays --
    def array(self, ref, path: str, *, dtype: str = "float64", ndim: int = 2) -> np.ndarray:
        """The array ``ref`` points to, of ``dtype`` and ``ndim`` axes, finite, hash-checked."""
        if not isinstance(ref, dict):
            self.fail(path, "expected an array reference {path, dtype, shape, sha256}")
        rel, declared_dtype = self.get(ref, "path", path, str), self.get(ref, "dtype", path, str)
        declared, digest = self.get(ref, "shape", path, list), self.get(ref, "sha256", path, str)
        if declared_dtype != dtype:
            self.fail(f"{path}.dtype", f"expected {dtype}, got {declared_dtype!r}")
        if len(declared) != ndim or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_INT
                                            for s in declared):
            self.fail(f"{path}.shape", f"expected {ndim} non-negative integers, got {declared!r}")
        file = Path(os.path.realpath(self.folder / rel)) if "\0" not in rel else None  # a link loop: ELOOP on open
        if file is None or self.resolved not in file.parents:  # a NUL byte, or a path out of the folder
            self.fail(f"{path}.path", f"array path is not a file name inside the record folder: {rel!r}")
        size = int(np.prod(declared, dtype=object)) * np.dtype(dtype).itemsize + NPY_HEADER_BYTES
        raw = self.file_bytes(file, f"{path}.path", rel, max_bytes=size)  # e.g. a huge file, small shape
        if hashlib.sha256(raw).hexdigest() != digest.lower():
            self.fail(f"{path}.sha256", f"hash mismatch for {rel} (file altered or truncated)")
        try:
            arr = _plain_npy(raw)
            if arr is None:
                arr = np.load(io.BytesIO(raw), allow_pickle=False)
        except Exception as err:  # a corrupt .npy, or more axes than numpy holds: several types
            self.fail(f"{path}.path", f"not a readable .npy file ({type(err).__name__})")
        if arr.dtype != np.dtype(dtype).newbyteorder("<") and arr.dtype != np.dtype(dtype):
            self.fail(f"{path}.dtype", f"file holds {arr.dtype}, manifest says {dtype}")
        if list(arr.shape) != declared:
            self.fail(f"{path}.shape", f"file holds shape {list(arr.shape)}, manifest says {declared}")
        arr = np.require(arr, dtype=np.dtype(dtype), requirements="C")  # C order, 0-d kept 0-d
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            self.fail(path, f"non-finite entry (NaN or inf) at {np.argwhere(~np.isfinite(arr))[0].tolist()}")
        return arr


_NPY_V1 = re.compile(r"\{'descr': '(<f8|<i8)', 'fortran_order': False, 'shape': \(((?:\d+, )*\d*,?)\), \} *\n")


def _plain_npy(raw: bytes) -> np.ndarray | None:
    """A version-1.0 .npy file of little-endian float64 or int64 in C order, the form every writer
    of this project produces, read without numpy's general header parser (a read-only view of
    ``raw``); None for any other form, which ``np.load`` then reads or rejects."""
    if raw[:8] != b"\x93NUMPY\x01\x00" or len(raw) < 10:
        return None
    end = 10 + int.from_bytes(raw[8:10], "little")
    match = _NPY_V1.fullmatch(raw[10:end].decode("latin-1"))
    if match is None:
        return None
    shape = tuple(int(s) for s in match.group(2).replace(" ", "").split(",") if s)
    count = math.prod(shape)
    if len(raw) != end + 8 * count:
        return None
    return np.frombuffer(raw, dtype=match.group(1), count=count, offset=end).reshape(shape)


def read_record(folder: str | os.PathLike) -> Record:
    """Read and validate one record folder (every field, then ``check_record``). Raises ``InputError``
    naming the field on any defect."""
    r = _Reader(Path(folder))
    doc = _manifest(r)
    version, record_id = _header(r, doc)
    provenance = r.get(doc, "provenance", "", dict)
    op = _operator(r, r.get(doc, "operator", "", dict))
    a_hat = r.array(r.get(doc, "a_hat", "", dict), "a_hat")
    listed = r.get(doc, "tolerances", "", list)
    if len(listed) > MAX_TOLERANCES:  # each entry is checked: a bound on the work one record can ask for
        r.fail("tolerances", f"{len(listed)} entries, more than the {MAX_TOLERANCES} a record may hold")
    tolerances = [_read_tolerance(r, tol, f"tolerances[{t}]") for t, tol in enumerate(listed)]
    record = Record(record_id=record_id, path=r.folder, schema_version=version, provenance=provenance,
                    a_hat=a_hat, tolerances=tolerances, **op)
    check_record(record, r.where)
    return record


def _manifest(r: _Reader) -> dict:
    raw = r.file_bytes(r.folder / "record.json", "record.json", "record.json", MANIFEST_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        r.fail("record.json", "not UTF-8 text")
    try:
        doc = json.loads(text, parse_constant=lambda c: r.fail("record.json", f"non-finite JSON constant {c}"),
                         object_pairs_hook=lambda pairs: _unique_keys(r, pairs))
    except json.JSONDecodeError as err:
        r.fail("record.json", f"not valid JSON (truncated?): {err.msg} at line {err.lineno}")
    except RecursionError:
        r.fail("record.json", "JSON nested too deeply")
    except ValueError as err:  # e.g. an integer beyond Python's digit limit for int conversion
        r.fail("record.json", f"unreadable number in JSON: {short(str(err))}")
    if not isinstance(doc, dict):
        r.fail("record.json", "top level must be an object")
    return doc


def _unique_keys(r: _Reader, pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose keys are all distinct (a repeated key would silently hide a value)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            r.fail("record.json", f"duplicate JSON key {short(key)}")
        out[key] = value
    return out


def _header(r: _Reader, doc: dict) -> tuple[int, str]:
    schema = r.get(doc, "schema", "", str)
    if schema != SCHEMA:
        r.fail("schema", f"expected {SCHEMA!r}, got {short(schema)}")
    version = r.get(doc, "schema_version", "", int)
    if version not in SCHEMA_VERSIONS_READ:
        r.fail("schema_version", f"unknown schema version {short(version)} (this reader knows "
                                 f"{list(SCHEMA_VERSIONS_READ)})")
    record_id = r.get(doc, "record_id", "", str)
    if record_id != r.folder.name:  # its form is checked by check_record
        r.fail("record_id", f"record id {short(record_id)} differs from its folder name {r.folder.name!r}")
    r.where = f"{r.folder} [{record_id}]"
    return version, record_id


def _operator(r: _Reader, op: dict) -> dict[str, Any]:
    """The operator's fields: form, logits or queries/keys/scale/bias."""
    form = r.get(op, "form", "operator", str)
    out: dict[str, Any] = {"form": form, "logits": None, "queries": None, "keys": None, "scale": None, "bias": None}
    if form == "logits":
        out["logits"] = r.array(r.get(op, "logits", "operator", dict), "operator.logits")
    elif form == "qk":
        out["queries"] = r.array(r.get(op, "queries", "operator", dict), "operator.queries")
        out["keys"] = r.array(r.get(op, "keys", "operator", dict), "operator.keys")
        out["scale"] = r.scale(r.get(op, "scale", "operator", (int, float)), "operator.scale")
        bias_ref = r.get(op, "bias", "operator", dict, optional=True)
        out["bias"] = None if bias_ref is None else r.array(bias_ref, "operator.bias")
    else:
        r.fail("operator.form", f"expected 'logits' or 'qk', got {short(form)}")
    out["support"] = _support(r, r.get(op, "support", "operator", dict, optional=True))
    return out


def _support(r: _Reader, raw: dict | None) -> Support | None:
    """``operator.support``: absent or null (every key visible), or one form with exactly its keys;
    the ranges and the rows are checked by ``check_record``."""
    if raw is None:
        return None
    path = "operator.support"
    form = r.get(raw, "form", path, str)
    if form not in FIELDS:
        r.fail(f"{path}.form", f"expected one of {sorted(FIELDS)}, got {short(form)}")
    extra = sorted(set(raw) - {"form", *FIELDS[form]})
    if extra:
        r.fail(path, f"unexpected key {short(extra[0])} for the {form} form")
    if form == "packed":
        return Support(form, bits=r.array(r.get(raw, "bits", path, dict), f"{path}.bits", dtype="uint8", ndim=1))
    return Support(form, **{key: r.count(raw, key, path) for key in FIELDS[form]})


def _read_tolerance(r: _Reader, tol, path: str) -> ToleranceEntry:
    eps = Tolerance.from_record(r.get(tol, "eps", path, object), r.where, f"{path}.eps")
    up = r.get(tol, "upper", path, dict, optional=True)
    upper = None if up is None else _read_upper(r, up, f"{path}.upper")
    certs = r.get(tol, "lower", path, list, optional=True) or []
    if len(certs) > MAX_LOWER:
        r.fail(f"{path}.lower", f"{len(certs)} certificates, more than the {MAX_LOWER} a tolerance may hold")
    lower = [_read_lower(r, cert, f"{path}.lower[{c}]") for c, cert in enumerate(certs)]
    f64 = r.get(tol, "float64", path, dict, optional=True) or {}
    f_lower, f_upper = (r.count(f64, key, f"{path}.float64", optional=True) for key in ("lower", "upper"))
    verdicts = _read_verdicts(r, r.get(f64, "verdicts", f"{path}.float64", dict, optional=True) or {},
                              f"{path}.float64.verdicts")
    return ToleranceEntry(tolerance=eps, upper=upper, lower=lower,
                          float64_lower=f_lower, float64_upper=f_upper, float64_verdicts=verdicts)


def _read_upper(r: _Reader, up: dict, path: str) -> UpperWitness:
    rank = r.count(up, "rank", path)
    X, Y = r.array(r.get(up, "X", path, dict), f"{path}.X"), r.array(r.get(up, "Y", path, dict), f"{path}.Y")
    construction = up.get("construction", "")
    return UpperWitness(rank=rank, X=X, Y=Y, construction=short(construction, 200, quote=False))


def _read_lower(r: _Reader, cert, cpath: str) -> LowerCertificate:
    kind = r.get(cert, "kind", cpath, str)
    claimed = r.count(cert, "lower", cpath)
    data: dict[str, Any] = {}
    for key, value in ((k, v) for k, v in cert.items() if k not in ("kind", "lower")):
        if isinstance(value, dict) and "sha256" in value:
            dtype = value.get("dtype", "float64")
            if dtype not in ("float64", "int64"):
                r.fail(f"{cpath}.{key}.dtype", f"expected float64 or int64, got {short(dtype)}")
            shape = value.get("shape")
            data[key] = r.array(value, f"{cpath}.{key}", dtype=dtype, ndim=len(shape) if isinstance(shape, list) else 2)
        else:
            data[key] = value
    return LowerCertificate(kind=short(kind, 100, quote=False), lower=claimed, data=data)


def _read_verdicts(r: _Reader, raw: dict, path: str) -> dict[int, str]:
    verdicts = {}
    for budget, verdict in raw.items():
        if not re.fullmatch(r"-?\d{1,40}", str(budget), re.ASCII):
            r.fail(path, f"budget {short(budget)} is not an integer")
        k = int(budget)
        if not 0 <= k <= MAX_INT:
            r.fail(f"{path}.{budget}", f"must be an integer in [0, {MAX_INT}], got {short(k)}")
        if verdict not in VERDICTS:
            r.fail(f"{path}.{budget}", f"expected one of {VERDICTS}, got {short(verdict)}")
        verdicts[k] = verdict
    return verdicts


def list_records(store: str | os.PathLike) -> list[Path]:
    """Record folders of a store, sorted by id. Raises ``InputError`` if STORE is not a store."""
    root = Path(store) / "records"
    if not root.is_dir():
        raise InputError(str(store), "records", "not a SoftRank store (no records/ folder)")
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def stray_entries(store: str | os.PathLike) -> list[Path]:
    """Entries of ``records/`` that ``list_records`` leaves out although they are not hidden: files,
    pipes, links to nothing or to themselves (a record folder replaced by one of these)."""
    root = Path(store) / "records"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".") and not p.is_dir())


def record_entries(store: str | os.PathLike) -> list[Path]:
    """Every non-hidden entry of ``records/``, sorted: the record folders and the stray entries
    (``read_record`` reports each of those as a malformed record, naming it, without opening a
    FIFO).  Raises ``InputError`` if STORE is not a store."""
    return sorted(list_records(store) + stray_entries(store))
