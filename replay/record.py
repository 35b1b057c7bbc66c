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

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA = "softrank.record"
SCHEMA_VERSIONS_READ = (1,)
SCHEMA_VERSION_WRITTEN = 1
RECORD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
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
class Tolerance:
    eps: Fraction  # exact value (a binary64 number, or a rational written "p/q")
    eps_text: str  # as written in the record
    upper: UpperWitness | None
    lower: list[LowerCertificate]
    float64_lower: int | None
    float64_upper: int | None
    float64_verdicts: dict[int, str]


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
    tolerances: list[Tolerance]

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.a_hat.shape)  # type: ignore[return-value]

    @property
    def operator_assumption(self) -> str:
        if self.form == "logits":
            return "operator A = rowsoftmax(H) for the stored binary64 logits H, read as exact reals"
        bias = " + bias" if self.bias is not None else ""
        return (
            "operator A = rowsoftmax(scale * Q K^T" + bias + ") for the stored binary64 "
            "queries, keys, scale" + (", bias" if bias else "") + ", read as exact reals"
        )
