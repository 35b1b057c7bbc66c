"""Writing records (producer side, torch-free): assemble in a temporary folder, one rename.

``RecordWriter`` is a context manager: shapes and finiteness are checked as each array is
written, and an exception inside the ``with`` block removes the temporary folder, so a failed
write leaves nothing behind and never touches a record already in the store.  Replacing a record
takes two renames (old -> ``records/.old-ID-*/old``, new -> ``records/ID``); a writer killed
between them leaves the record only in that hidden folder, and ``recover_store`` puts it back.

A tolerance given as a ``Fraction`` is stored as its exact text (``exact_text``: ``"0.15"``,
``"1/3"``), which the record reader reads as that rational; a float is stored as a JSON number
(a binary64 value).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from softrank.exact.tolerance import exact_text  # noqa: F401  (the one printer; writers import it from here too)
from softrank.fastpath.store.files import make_temp_dir, read_regular_file, write_csv
from softrank.replay.reader import list_records
from softrank.replay.record import RECORD_ID_RE, SCHEMA, SCHEMA_VERSION_WRITTEN, Record
from softrank.validated.errors import InputError


class RecordWriter:
    """Assembles one record; ``commit()`` moves it into the store atomically.

    Usage::

        with RecordWriter(store, "minilm-L0-H3-src7", provenance={...}) as w:
            w.set_logits(H)              # or w.set_qk(Q, K, scale, bias=None)
            w.set_a_hat(A_hat)
            w.add_tolerance(0.25, upper=(X, Y, "tsvd"), lower=[...], float64={...})
        # committed on a normal exit; on an exception the temporary folder is removed

    Without ``with``, call ``commit()`` (or ``abort()``) yourself.

    ``overwrite=False``: a record already in the store under this id is kept; committing the
    same record again changes nothing, committing a different one is an ``InputError`` (and the
    new record is discarded).  The default replaces it (bracketing writes a record over itself).
    """

    def __init__(self, store: str | os.PathLike, record_id: str, provenance: dict[str, Any], overwrite: bool = True,
                 support=None):
        if not RECORD_ID_RE.match(record_id):
            raise ValueError(f"invalid record id {record_id!r}")
        self.store = Path(store)
        self.record_id = record_id
        self.overwrite = overwrite
        (self.store / "records").mkdir(parents=True, exist_ok=True)
        self._tmp = make_temp_dir(f".tmp-{record_id}-", self.store / "records")
        (self._tmp / "arrays").mkdir()
        self.doc: dict[str, Any] = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION_WRITTEN,
            "record_id": record_id,
            "provenance": provenance,
            "operator": None,
            "a_hat": None,
            "tolerances": [],
        }
        self._names: set[str] = set()
        self.shape: tuple[int, ...] | None = None  # (m, N) once the operator is set
        self.support = support  # replay.support.Support or None: written as operator.support at commit

    @classmethod
    def from_record(cls, store: str | os.PathLike, record: Record, provenance_update: dict | None = None) -> "RecordWriter":
        """A writer that re-creates ``record`` (provenance, operator, a_hat) with no tolerances,
        e.g. to write a bracketed version of an extracted record."""
        prov = dict(record.provenance)
        prov.update(provenance_update or {})
        w = cls(store, record.record_id, prov)
        if record.form == "logits":
            w.set_logits(record.logits)
        else:
            w.set_qk(record.queries, record.keys, record.scale, record.bias)
        w.set_a_hat(record.a_hat)
        return w

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False

    def array(self, name: str, arr: np.ndarray, dtype: str = "float64", ndim: int | None = None) -> dict[str, Any]:
        """Write ``arrays/<name>.npy`` and return its manifest reference.  A float array must be
        finite and, when ``ndim`` is given, have that many dimensions (else ``ValueError``)."""
        if name in self._names:
            raise ValueError(f"array name {name!r} used twice")
        arr = np.ascontiguousarray(np.asarray(arr, dtype=np.dtype(dtype).newbyteorder("<")))
        if ndim is not None and arr.ndim != ndim:
            raise ValueError(f"array {name!r}: expected {ndim} dimensions, got shape {list(arr.shape)}")
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            raise ValueError(f"array {name!r}: non-finite entry (NaN or inf)")
        self._names.add(name)
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        raw = buf.getvalue()
        rel = f"arrays/{name}.npy"
        with open(self._tmp / rel, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        return {"path": rel, "dtype": dtype, "shape": list(arr.shape), "sha256": hashlib.sha256(raw).hexdigest()}

    def set_logits(self, logits: np.ndarray) -> None:
        self.shape = tuple(np.shape(logits))
        self.doc["operator"] = {"form": "logits", "logits": self.array("logits", logits, ndim=2)}

    def set_qk(self, queries, keys, scale: float, bias=None) -> None:
        q, k = np.asarray(queries), np.asarray(keys)
        if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
            raise ValueError(f"queries {list(q.shape)} and keys {list(k.shape)} must be 2-d with one head dimension")
        if not np.isfinite(float(scale)):
            raise ValueError(f"scale must be finite, got {scale!r}")
        self.shape = (q.shape[0], k.shape[0])
        if bias is not None and tuple(np.shape(bias)) != self.shape:
            raise ValueError(f"bias shape {list(np.shape(bias))} disagrees with the operator's {list(self.shape)}")
        op = {"form": "qk", "queries": self.array("queries", q, ndim=2), "keys": self.array("keys", k, ndim=2),
              "scale": float(scale), "bias": None if bias is None else self.array("bias", bias, ndim=2)}
        self.doc["operator"] = op

    def set_a_hat(self, a_hat: np.ndarray) -> None:
        if self.shape is not None and tuple(np.shape(a_hat)) != self.shape:
            raise ValueError(f"a_hat shape {list(np.shape(a_hat))} disagrees with the operator's {list(self.shape)}")
        self.doc["a_hat"] = self.array("a_hat", a_hat, ndim=2)

    def add_tolerance(self, eps, upper=None, lower=None, float64=None) -> None:
        """``upper``: (X, Y, construction) or None. ``lower``: list of dicts
        ``{"kind", "lower", **fields}`` whose numpy-array fields are written as arrays.
        ``float64``: ``{"lower", "upper", "verdicts": {budget: verdict}}``.  ``eps``: a ``Fraction``
        (stored as its exact text), a string (stored as given) or a number (stored as binary64)."""
        t = len(self.doc["tolerances"])
        entry: dict[str, Any] = {"eps": eps_field(eps)}
        if upper is not None:
            X, Y, construction = upper
            X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
            if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1] or (
                    self.shape is not None and (X.shape[0], Y.shape[0]) != self.shape):
                raise ValueError(f"witness factors X {list(X.shape)}, Y {list(Y.shape)} do not fit the operator")
            entry["upper"] = {"rank": int(X.shape[1]), "X": self.array(f"t{t}_upper_X", X),
                              "Y": self.array(f"t{t}_upper_Y", Y), "construction": construction}
        else:
            entry["upper"] = None
        certs = []
        for c, cert in enumerate(lower or []):
            out = {}
            for key, value in cert.items():
                if isinstance(value, np.ndarray):
                    dtype = "int64" if value.dtype.kind in "iu" else "float64"
                    out[key] = self.array(f"t{t}_lower{c}_{key}", value, dtype=dtype)
                else:
                    out[key] = value
            certs.append(out)
        entry["lower"] = certs
        entry["float64"] = _jsonable(float64 or {})
        self.doc["tolerances"].append(entry)

    def commit(self) -> Path:
        """Move the record into the store (one rename); on any failure the temporary folder goes."""
        try:
            if self.doc["operator"] is None or self.doc["a_hat"] is None:
                raise ValueError("record needs an operator and a_hat before commit")
            if self.support is not None:  # no key at all when every entry is visible
                s = self.support
                self.doc["operator"]["support"] = {"form": s.form, **(
                    {"bits": self.array("support", s.bits, dtype="uint8", ndim=1)} if s.form == "packed"
                    else {"offset": s.offset} if s.form == "causal" else {"size": s.size, "offset": s.offset})}
            try:
                text = json.dumps(_jsonable(self.doc), indent=1, allow_nan=False)
            except RecursionError:  # e.g. a provenance nested deeper than Python can recurse
                raise InputError(str(self.store / "records" / self.record_id), "record.json",
                                 "a field is nested too deeply to be written as JSON") from None
            with open(self._tmp / "record.json", "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        except BaseException:
            self.abort()
            raise
        final = self.store / "records" / self.record_id
        if final.exists() and not self.overwrite:
            same = _same_manifest(final, self._tmp)
            self.abort()
            if same:
                return final
            raise InputError(str(final), "record_id", "the store already holds a different record with this id "
                                                      "(write it with overwrite=True to replace it)")
        if final.exists():  # killed between the two renames: recover_store moves "old" back
            trash = Path(tempfile.mkdtemp(prefix=f".old-{self.record_id}-", dir=self.store / "records"))
            os.rename(final, trash / "old")
            os.rename(self._tmp, final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(self._tmp, final)
        _fsync_dir(self.store / "records")
        return final

    def abort(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)


def _same_manifest(a: Path, b: Path) -> bool:
    """Two record folders with byte-identical ``record.json`` (which holds every array's SHA-256)."""
    try:
        return read_regular_file(a / "record.json") == read_regular_file(b / "record.json")
    except (OSError, ValueError):
        return False


def _fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def eps_field(eps):
    """A tolerance as a record stores it: a ``Fraction`` as its exact text, a string as given,
    any other number as a binary64 JSON number."""
    if isinstance(eps, Fraction):
        return exact_text(eps)
    return eps if isinstance(eps, (str, float)) else float(eps)


def recover_store(store: str | os.PathLike) -> list[str]:
    """Undo what killed writers left in ``STORE/records``: for every ``.old-ID-*`` folder, move
    its ``old`` record back when ``records/ID`` is missing (a kill between the two renames of a
    replacement), else delete it; remove every ``.tmp-*`` folder (a writer killed while
    assembling).  Call it only when no writer is working on the store.  Returns the ids put back."""
    root = Path(store) / "records"
    if not root.is_dir():
        return []
    restored = []
    trashes = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(".old-")]
    trashes.sort(key=_newest_first)
    for trash in trashes:
        rid = trash.name[len(".old-"):-9]  # ".old-" + ID + "-" + 8 characters of mkdtemp
        final = root / rid
        if RECORD_ID_RE.match(rid) and (trash / "old").is_dir() and not final.exists():
            os.rename(trash / "old", final)
            restored.append(rid)
        shutil.rmtree(trash, ignore_errors=True)
    for tmp in root.glob(".tmp-*"):
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
    _fsync_dir(root)
    return restored


def _newest_first(trash: Path) -> float:
    try:
        return -(trash / "old" / "record.json").stat().st_mtime
    except OSError:
        return 0.0


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, Fraction):
        return f"{obj.numerator}/{obj.denominator}"
    return obj


def write_index(store: str | os.PathLike) -> Path:
    """(Re)write ``index.csv`` atomically from the record manifests (no array is loaded)."""
    store = Path(store)
    rows = []
    for folder in list_records(store):
        try:
            doc = json.loads(read_regular_file(folder / "record.json").decode("utf-8"))
            prov = doc.get("provenance", {})
            shape = (doc.get("a_hat") or {}).get("shape", [None, None])
            rows.append({"record_id": doc.get("record_id", folder.name), "model": prov.get("model", ""),
                         "family": prov.get("family", ""), "layer": prov.get("layer", ""),
                         "head": prov.get("head", ""), "m": shape[0], "N": shape[1],
                         "form": (doc.get("operator") or {}).get("form", ""),
                         "tolerances": len(doc.get("tolerances", []))})
        except (OSError, ValueError, AttributeError, TypeError, RecursionError):
            rows.append({"record_id": folder.name, "model": "(unreadable)"})
    fields = ["record_id", "model", "family", "layer", "head", "m", "N", "form", "tolerances"]
    return write_csv(store / "index.csv", rows, fields)
