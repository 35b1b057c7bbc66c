"""Reading a record folder: every field type-, shape-, range- and hash-checked.

Reading never trusts the producer: a problem raises ``InputError`` naming the record and the
field.  Every array file is re-hashed (SHA-256) against the manifest before it is parsed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import stat
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from softrank.replay.record import (RECORD_ID_RE, SCHEMA, SCHEMA_VERSIONS_READ, STOCHASTIC_ROW_TOL, VERDICTS,
                                    LowerCertificate, Record, Tolerance, UpperWitness)
from softrank.exact.rational import parse_rational
from softrank.validated.errors import InputError

MAX_INT = 2**63 - 1  # integer fields end up in int64 table columns
MAX_TOLERANCES = 256  # tolerances per record, and lower certificates per tolerance: every one is
MAX_LOWER = 256  # checked, so a record may not ask for unbounded work (honest ones: a few of each)
NPY_HEADER_BYTES = 1 << 16  # an array file may exceed its data by at most this (the .npy header)
MANIFEST_BYTES = 1 << 26  # record.json: 64 MiB at most (real ones hold a few kB)


class _Reader:
    """Reads one record folder; every failure names the record and the field."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.where = str(self.folder)
        self._resolved: Path | None = None

    @property
    def resolved(self) -> Path:
        """The record folder with every link resolved (once per record)."""
        if self._resolved is None:
            self._resolved = self.folder.resolve()
        return self._resolved

    def fail(self, field_name: str, message: str):
        raise InputError(self.where, field_name, message)

    # -- primitive fields --
    def get(self, obj: dict, key: str, path: str, types, optional: bool = False):
        if not isinstance(obj, dict):
            self.fail(path, "expected an object")
        if key not in obj or (optional and obj[key] is None):
            if optional:
                return None
            self.fail(f"{path}.{key}".lstrip("."), "missing field")
        value = obj[key]
        if types is int and isinstance(value, bool):
            self.fail(f"{path}.{key}".lstrip("."), f"expected an integer, got {value!r}")
        if not isinstance(value, types):
            self.fail(f"{path}.{key}".lstrip("."), f"expected {_typename(types)}, got {type(value).__name__}")
        return value

    def finite_float(self, value, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, f"expected a number, got {_short(value)}")
        try:
            value = float(value)
        except OverflowError:
            self.fail(path, f"number too large for binary64: {_short(value)}")
        if not math.isfinite(value):
            self.fail(path, f"must be finite, got {value!r}")
        return value

    def bounded_int(self, value: int, path: str, *, low: int = 0) -> int:
        """An integer field of a table column: ``low <= value <= MAX_INT`` (int64 range)."""
        if not low <= value <= MAX_INT:
            self.fail(path, f"must be an integer in [{low}, {MAX_INT}], got {_short(value)}")
        return value

    def eps(self, value, path: str) -> tuple[Fraction, str]:
        if isinstance(value, bool):
            self.fail(path, f"expected a number or a string 'p/q', got {value!r}")
        if isinstance(value, int):
            text, exact = _short(value), Fraction(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                self.fail(path, f"must be finite, got {value!r}")
            text, exact = str(value), Fraction(value)  # exact value of the binary64 number
        elif isinstance(value, str):
            text = value
            exact = parse_rational(value, self.where, path)  # bounded size; InputError names the field
        else:
            self.fail(path, f"expected a number or a string 'p/q', got {type(value).__name__}")
        if not (0 < exact < 1):
            self.fail(path, f"eps must lie in (0, 1), got {text}")
        return exact, text

    def regular_file_bytes(self, file: Path, field_name: str, shown: str, max_bytes: int | None = None) -> bytes:
        """The bytes of a regular file (never a pipe, device, socket or folder: those could block forever)
        of at most ``max_bytes`` bytes (a larger file is refused before it is read)."""
        try:  # opened without blocking (a FIFO would wait for a writer), then checked on the open file
            fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK)
        except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
            self.fail(field_name, f"cannot read {shown}: {getattr(err, 'strerror', None) or err}")
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked before fdopen, which refuses a folder
            os.close(fd), self.fail(field_name, f"{shown} is not a regular file")
        size = os.fstat(fd).st_size
        if max_bytes is not None and size > max_bytes:  # e.g. a huge file behind a small declared shape
            os.close(fd), self.fail(field_name, f"{shown} holds {size} bytes, more than the {max_bytes} allowed")
        with os.fdopen(fd, "rb") as fh:
            try:
                return fh.read()
            except OSError as err:
                self.fail(field_name, f"cannot read {shown}: {err.strerror or err}")

    # -- arrays --
    def array(self, ref, path: str, *, dtype: str = "float64", ndim: int = 2) -> np.ndarray:
        if not isinstance(ref, dict):
            self.fail(path, "expected an array reference {path, dtype, shape, sha256}")
        rel = self.get(ref, "path", path, str)
        declared_dtype = self.get(ref, "dtype", path, str)
        shape = self.get(ref, "shape", path, list)
        digest = self.get(ref, "sha256", path, str)
        if declared_dtype != dtype:
            self.fail(f"{path}.dtype", f"expected {dtype}, got {declared_dtype!r}")
        if len(shape) != ndim or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_INT
                                         for s in shape):
            self.fail(f"{path}.shape", f"expected {ndim} non-negative integers, got {shape!r}")
        file = Path(os.path.realpath(self.folder / rel)) if "\0" not in rel else None  # a link loop: ELOOP on open
        if file is None or self.resolved not in file.parents:  # a NUL byte, or a path out of the folder
            self.fail(f"{path}.path", f"array path is not a file name inside the record folder: {rel!r}")
        size = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize + NPY_HEADER_BYTES
        raw = self.regular_file_bytes(file, f"{path}.path", rel, max_bytes=size)
        if hashlib.sha256(raw).hexdigest() != digest.lower():
            self.fail(f"{path}.sha256", f"hash mismatch for {rel} (file altered or truncated)")
        arr = _plain_npy(raw)
        if arr is None:
            try:
                arr = np.load(io.BytesIO(raw), allow_pickle=False)
            except Exception as err:  # a corrupt .npy: numpy raises several types
                self.fail(f"{path}.path", f"not a readable .npy file ({type(err).__name__})")
        if arr.dtype != np.dtype(dtype).newbyteorder("<") and arr.dtype != np.dtype(dtype):
            self.fail(f"{path}.dtype", f"file holds {arr.dtype}, manifest says {dtype}")
        if list(arr.shape) != shape:
            self.fail(f"{path}.shape", f"file holds shape {list(arr.shape)}, manifest says {shape}")
        arr = np.ascontiguousarray(arr, dtype=np.dtype(dtype))
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(arr))[0].tolist()
            self.fail(path, f"non-finite entry (NaN or inf) at {bad}")
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


def _typename(types) -> str:
    if isinstance(types, tuple):
        return " or ".join(t.__name__ for t in types)
    return types.__name__


def _short(value, limit: int = 60, quote: bool = True) -> str:
    """A value as shown in an error message: ``repr`` (or ``str``), cut to ``limit`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    text = repr(value) if quote else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_record(folder: str | os.PathLike) -> Record:
    """Read and validate one record folder. Raises ``InputError`` naming the field on any defect."""
    r = _Reader(Path(folder))
    doc = _manifest(r)
    version, record_id = _header(r, doc)
    provenance = r.get(doc, "provenance", "", dict)
    op = _operator(r, r.get(doc, "operator", "", dict))
    m, n = op.pop("shape")
    a_hat = _a_hat(r, doc, m, n)
    tolerances = []
    listed = r.get(doc, "tolerances", "", list)
    if len(listed) > MAX_TOLERANCES:  # each entry is checked: a bound on the work one record can ask for
        r.fail("tolerances", f"{len(listed)} entries, more than the {MAX_TOLERANCES} a record may hold")
    for t_index, tol in enumerate(listed):
        tolerances.append(_read_tolerance(r, tol, f"tolerances[{t_index}]", m, n))
    return Record(record_id=record_id, path=r.folder, schema_version=version, provenance=provenance,
                  a_hat=a_hat, tolerances=tolerances, **op)


def _manifest(r: _Reader) -> dict:
    raw = r.regular_file_bytes(r.folder / "record.json", "record.json", "record.json", MANIFEST_BYTES)
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
        r.fail("record.json", f"unreadable number in JSON: {_short(str(err))}")
    if not isinstance(doc, dict):
        r.fail("record.json", "top level must be an object")
    return doc


def _unique_keys(r: _Reader, pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose keys are all distinct (a repeated key would silently hide a value)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            r.fail("record.json", f"duplicate JSON key {_short(key)}")
        out[key] = value
    return out


def _header(r: _Reader, doc: dict) -> tuple[int, str]:
    schema = r.get(doc, "schema", "", str)
    if schema != SCHEMA:
        r.fail("schema", f"expected {SCHEMA!r}, got {_short(schema)}")
    version = r.get(doc, "schema_version", "", int)
    if version not in SCHEMA_VERSIONS_READ:
        r.fail("schema_version", f"unknown schema version {_short(version)} (this reader knows "
                                 f"{list(SCHEMA_VERSIONS_READ)})")
    record_id = r.get(doc, "record_id", "", str)
    if not RECORD_ID_RE.match(record_id):
        r.fail("record_id", f"invalid record id {_short(record_id)}")
    if record_id != r.folder.name:
        r.fail("record_id", f"record id {_short(record_id)} differs from its folder name {r.folder.name!r}")
    r.where = f"{r.folder} [{record_id}]"
    return version, record_id


def _operator(r: _Reader, op: dict) -> dict[str, Any]:
    """The operator's fields (form, logits or queries/keys/scale/bias) and its shape (m, N)."""
    form = r.get(op, "form", "operator", str)
    out: dict[str, Any] = {"form": form, "logits": None, "queries": None, "keys": None, "scale": None, "bias": None}
    if form == "logits":
        out["logits"] = r.array(r.get(op, "logits", "operator", dict), "operator.logits")
        m, n = out["logits"].shape
    elif form == "qk":
        queries = out["queries"] = r.array(r.get(op, "queries", "operator", dict), "operator.queries")
        keys = out["keys"] = r.array(r.get(op, "keys", "operator", dict), "operator.keys")
        if queries.shape[1] != keys.shape[1]:
            r.fail("operator.keys", f"head dimension {keys.shape[1]} disagrees with queries' {queries.shape[1]}")
        out["scale"] = r.finite_float(r.get(op, "scale", "operator", (int, float)), "operator.scale")
        m, n = queries.shape[0], keys.shape[0]
        bias_ref = r.get(op, "bias", "operator", dict, optional=True)
        if bias_ref is not None:
            out["bias"] = r.array(bias_ref, "operator.bias")
            if out["bias"].shape != (m, n):
                r.fail("operator.bias", f"shape {list(out['bias'].shape)} disagrees with operator shape [{m}, {n}]")
    else:
        r.fail("operator.form", f"expected 'logits' or 'qk', got {_short(form)}")
    if m < 1 or n < 1:
        r.fail("operator", f"empty operator shape [{m}, {n}]")
    out["shape"] = (m, n)
    return out


def _a_hat(r: _Reader, doc: dict, m: int, n: int) -> np.ndarray:
    a_hat = r.array(r.get(doc, "a_hat", "", dict), "a_hat")
    if a_hat.shape != (m, n):
        r.fail("a_hat", f"shape {list(a_hat.shape)} disagrees with operator shape [{m}, {n}]")
    if np.any(a_hat < 0):
        r.fail("a_hat", "not row-stochastic: negative entry")
    row_err = np.abs(a_hat.sum(axis=1) - 1.0)
    if np.any(row_err > STOCHASTIC_ROW_TOL):
        i = int(np.argmax(row_err))
        r.fail("a_hat", f"not row-stochastic: row {i} sums to {a_hat[i].sum():.9g}")
    return a_hat


def _nonneg_int(r: _Reader, obj: dict, key: str, path: str, optional: bool = False) -> int | None:
    value = r.get(obj, key, path, int, optional=optional)
    if value is not None:
        r.bounded_int(value, f"{path}.{key}")
    return value


def _read_tolerance(r: _Reader, tol, path: str, m: int, n: int) -> Tolerance:
    if not isinstance(tol, dict):
        r.fail(path, "expected an object")
    if "eps" not in tol:
        r.fail(f"{path}.eps", "missing field")
    eps, eps_text = r.eps(tol["eps"], f"{path}.eps")
    up = r.get(tol, "upper", path, dict, optional=True)
    upper = None if up is None else _read_upper(r, up, f"{path}.upper", m, n)
    certs = r.get(tol, "lower", path, list, optional=True) or []
    if len(certs) > MAX_LOWER:
        r.fail(f"{path}.lower", f"{len(certs)} certificates, more than the {MAX_LOWER} a tolerance may hold")
    lower = [_read_lower(r, cert, f"{path}.lower[{c}]") for c, cert in enumerate(certs)]
    f64 = r.get(tol, "float64", path, dict, optional=True) or {}
    f_lower = _nonneg_int(r, f64, "lower", f"{path}.float64", optional=True)
    f_upper = _nonneg_int(r, f64, "upper", f"{path}.float64", optional=True)
    verdicts = _read_verdicts(r, r.get(f64, "verdicts", f"{path}.float64", dict, optional=True) or {},
                              f"{path}.float64.verdicts")
    return Tolerance(eps=eps, eps_text=eps_text, upper=upper, lower=lower,
                     float64_lower=f_lower, float64_upper=f_upper, float64_verdicts=verdicts)


def _read_upper(r: _Reader, up: dict, path: str, m: int, n: int) -> UpperWitness:
    rank = _nonneg_int(r, up, "rank", path)
    X = r.array(r.get(up, "X", path, dict), f"{path}.X")
    Y = r.array(r.get(up, "Y", path, dict), f"{path}.Y")
    if X.shape != (m, rank):
        r.fail(f"{path}.X", f"shape {list(X.shape)} disagrees with [m, rank] = [{m}, {rank}]")
    if Y.shape != (n, rank):
        r.fail(f"{path}.Y", f"shape {list(Y.shape)} disagrees with [N, rank] = [{n}, {rank}]")
    construction = up.get("construction", "")
    return UpperWitness(rank=rank, X=X, Y=Y, construction=_short(construction, 200, quote=False))


def _read_lower(r: _Reader, cert, cpath: str) -> LowerCertificate:
    kind = r.get(cert, "kind", cpath, str)
    claimed = _nonneg_int(r, cert, "lower", cpath)
    data: dict[str, Any] = {}
    for key, value in cert.items():
        if key in ("kind", "lower"):
            continue
        if isinstance(value, dict) and "sha256" in value:
            dtype = value.get("dtype", "float64")
            if dtype not in ("float64", "int64"):
                r.fail(f"{cpath}.{key}.dtype", f"expected float64 or int64, got {_short(dtype)}")
            shape = value.get("shape")
            ndim = len(shape) if isinstance(shape, list) else 2
            data[key] = r.array(value, f"{cpath}.{key}", dtype=dtype, ndim=ndim)
        else:
            data[key] = value
    return LowerCertificate(kind=_short(kind, 100, quote=False), lower=claimed, data=data)


def _read_verdicts(r: _Reader, raw: dict, path: str) -> dict[int, str]:
    verdicts = {}
    for budget, verdict in raw.items():
        if not re.fullmatch(r"-?\d{1,40}", str(budget), re.ASCII):
            r.fail(path, f"budget {_short(budget)} is not an integer")
        k = r.bounded_int(int(budget), f"{path}.{budget}")
        if verdict not in VERDICTS:
            r.fail(f"{path}.{budget}", f"expected one of {VERDICTS}, got {_short(verdict)}")
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
