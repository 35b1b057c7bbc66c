"""The record format (schema version 1) in memory: what a record claims, before any check.

A *store* is a folder::

    STORE/
      index.csv                  one row per record (convenience; replay walks records/)
      records/<record_id>/
        record.json              the manifest (schema, provenance, operator, tolerances)
        arrays/<name>.npy        every array, NumPy .npy (little-endian float64 or int64)

Every array is referenced from the manifest as ``{"path", "dtype", "shape", "sha256"}``.  The
reader (``softrank.replay.reader``) checks every field; the producer's writer lives outside the
trusted core (``softrank.fastpath.store.writer``).  The field list is in ``docs/record-format.md``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from softrank.errors import InputError
from softrank.replay.support import Support, support_mask
from softrank.replay.tolerance import Tolerance, short

SCHEMA = "softrank.record"
SCHEMA_VERSIONS_READ = (1,)
SCHEMA_VERSION_WRITTEN = 1
RECORD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")  # \Z: "$" would let a final newline in
VERDICTS = ("feasible", "impossible", "unresolved")
STOCHASTIC_ROW_TOL = 1e-6  # producer's A_hat rows must sum to 1 within this (float64 check)


@dataclass
class UpperWitness:
    """Factors of a claimed witness ``B = X Y^T`` with ``rank(B) <= rank``."""

    rank: int
    X: np.ndarray  # (m, rank) float64
    Y: np.ndarray  # (N, rank) float64
    construction: str = ""


@dataclass
class LowerCertificate:
    """A claimed lower certificate: ``r_eps(A) >= lower``, of a registered ``kind``.

    ``data`` holds the kind's own fields (arrays already loaded and hash-checked); the kind's
    checker validates their meaning.  Kinds: see ``docs/record-format.md``.
    """

    kind: str
    lower: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToleranceEntry:
    """One entry of a record's ``tolerances``: its ``Tolerance`` and what is claimed at it."""

    tolerance: Tolerance  # exact value, text, nearest binary64 (``softrank.replay.tolerance``)
    upper: UpperWitness | None
    lower: list[LowerCertificate]
    float64_lower: int | None
    float64_upper: int | None
    float64_verdicts: dict[int, str]

    @property
    def eps(self) -> Fraction:
        return self.tolerance.value

    @property
    def eps_text(self) -> str:  # as written in the record (a JSON number: its shortest text)
        return str(self.tolerance.json_field)


@dataclass
class Record:
    record_id: str
    path: Path
    schema_version: int
    provenance: dict[str, Any]
    form: str  # "logits" or "qk"
    logits: np.ndarray | None
    queries: np.ndarray | None
    keys: np.ndarray | None
    scale: float | None
    bias: np.ndarray | None
    a_hat: np.ndarray
    tolerances: list[ToleranceEntry]
    support: Support | None = None  # None: every key visible (replay/support.py)

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.a_hat.shape)  # type: ignore[return-value]

    @property
    def mask(self) -> np.ndarray | None:
        """None when every key is visible, else the m x N bool array (True: the query sees the key)."""
        mask = None if self.support is None else self.support.boolean(*self.shape)
        return None if mask is None or mask.all() else mask

    @property
    def operator_assumption(self) -> str:
        masked = "" if self.mask is None else f", over the {self.support.form} support (0 off it)"
        if self.form == "logits":
            return "operator A = rowsoftmax(H) for the stored binary64 logits H, read as exact reals" + masked
        bias = " + bias" if self.bias is not None else ""
        return (
            "operator A = rowsoftmax(scale * Q K^T" + bias + ") for the stored binary64 "
            "queries, keys, scale" + (", bias" if bias else "") + ", read as exact reals" + masked
        )


def check_record(record: Record, where: str | None = None) -> None:
    """The checks that need the record as a whole, made once for every record: by the store reader
    (after each field has its JSON type), before ``softrank.validate`` and before ``Store.write``.
    Plain finite float64 matrices of consistent shapes, a non-empty operator (its support, if any,
    well formed with a visible key in every row: ``support_mask``), a row-stochastic
    A_hat, eps an exact rational in (0, 1), finite certificate arrays; else ``InputError`` naming
    the field (``where``: the record, by default its id)."""
    where = record.record_id if where is None else where

    def fail(field_name: str, message: str):
        raise InputError(where, field_name, message)

    def matrix(arr, field_name: str, shape=None, what: str = "operator shape") -> tuple[int, int]:
        if type(arr) is not np.ndarray or arr.dtype != np.float64 or arr.ndim != 2:
            fail(field_name, "expected a 2-d float64 array")
        if not np.all(np.isfinite(arr)):
            fail(field_name, f"non-finite entry (NaN or inf) at {np.argwhere(~np.isfinite(arr))[0].tolist()}")
        if shape is not None and arr.shape != tuple(shape):
            fail(field_name, f"shape {list(arr.shape)} disagrees with {what} {list(shape)}")
        return arr.shape

    if not isinstance(record.record_id, str) or not RECORD_ID_RE.match(record.record_id):
        fail("record_id", f"invalid record id {short(record.record_id)}")
    if record.form == "logits":
        m, n = matrix(record.logits, "operator.logits")
    elif record.form == "qk":
        (m, d), (n, e) = matrix(record.queries, "operator.queries"), matrix(record.keys, "operator.keys")
        if d != e:
            fail("operator.keys", f"head dimension {e} disagrees with queries' {d}")
        if isinstance(record.scale, bool) or not isinstance(record.scale, float) or not math.isfinite(record.scale):
            fail("operator.scale", f"expected a finite binary64 number, got {short(record.scale)}")
        if record.bias is not None:
            matrix(record.bias, "operator.bias", (m, n))
    else:
        fail("operator.form", f"expected 'logits' or 'qk', got {short(record.form)}")
    if m < 1 or n < 1:
        fail("operator", f"empty operator shape [{m}, {n}]")
    support_mask(record.support, m, n, where)
    matrix(record.a_hat, "a_hat", (m, n))
    if np.any(record.a_hat < 0):
        fail("a_hat", "not row-stochastic: negative entry")
    row_err = np.abs(record.a_hat.sum(axis=1) - 1.0)
    if np.any(row_err > STOCHASTIC_ROW_TOL):
        i = int(np.argmax(row_err))
        fail("a_hat", f"not row-stochastic: row {i} sums to {record.a_hat[i].sum():.9g}")
    for t, tol in enumerate(record.tolerances):
        eps = tol.tolerance
        if not isinstance(eps, Tolerance) or not isinstance(eps.value, Fraction) or not 0 < eps.value < 1:
            fail(f"tolerances[{t}].eps", f"eps must lie in (0, 1), got {short(str(eps))}")
        if tol.upper is not None:
            matrix(tol.upper.X, f"tolerances[{t}].upper.X", (m, tol.upper.rank), "[m, rank] =")
            matrix(tol.upper.Y, f"tolerances[{t}].upper.Y", (n, tol.upper.rank), "[N, rank] =")
        for c, cert in enumerate(tol.lower):
            for key, value in cert.data.items():
                if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.all(np.isfinite(value)):
                    fail(f"tolerances[{t}].lower[{c}].{key}", "non-finite entry (NaN or inf)")
