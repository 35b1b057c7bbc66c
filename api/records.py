"""Records made in memory (producer side): from logits, from queries and keys, with a user's witness.

:class:`Record` is the checker's record (``softrank.replay.record.Record``, the same fields and
the same meaning) with constructors that need no store on disk.  ``A_hat`` is the producer's
float64 row softmax (``softrank.fastpath.float64.rowsoftmax64``); the checker never trusts it
(it charges ``chi``, a proven bound on ``||A - A_hat||_inf``).  Every constructor checks what the
store reader checks (shapes, finiteness, eps in (0, 1)) and raises ``InputError`` naming the field.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from softrank.fastpath.float64 import rowsoftmax64
from softrank.replay import record as core
from softrank.errors import InputError
from softrank.replay.support import support_mask, support_of_mask
from softrank.replay.tolerance import Tolerance

MEMORY_ID = "memory"


def _matrix(value, where: str, field: str, empty_columns: bool = False) -> np.ndarray:
    """A finite 2-d float64 copy of ``value`` (at least one row; at least one column unless
    ``empty_columns``)."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(where, field, f"not a numeric matrix: {err}") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or (arr.shape[1] < 1 and not empty_columns):
        raise InputError(where, field, f"expected a non-empty 2-d array, got shape {list(arr.shape)}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0].tolist()
        raise InputError(where, field, f"non-finite entry (NaN or inf) at {bad}")
    return arr


def _scale(scale, rid: str) -> float:
    """A finite scale that binary64 holds exactly (an integer that it would round is refused, as
    the store reader refuses it)."""
    exact = isinstance(scale, (int, np.integer)) and not isinstance(scale, bool)
    if not exact and not isinstance(scale, (float, np.floating)):
        raise InputError(rid, "scale", f"expected a finite number, got {scale!r}")
    try:
        beta = float(scale)
    except OverflowError:
        beta = math.inf
    if not math.isfinite(beta) or beta != (int(scale) if exact else scale):  # compared exactly
        raise InputError(rid, "scale", f"expected a finite number that binary64 holds exactly, got {scale!r}")
    return beta


def _support(mask, shape: tuple[int, int], rid: str):
    """(support, bool mask or None) of a user's m x N mask (True: the query sees the key; None: all)."""
    if mask is None:
        return None, None
    arr = np.asarray(mask)
    if arr.shape != shape or not (arr.dtype == bool or np.isin(arr, (0, 1)).all()):
        raise InputError(rid, "mask", f"expected an m x N = {list(shape)} array of booleans, got "
                                      f"{arr.dtype} with shape {list(arr.shape)}")
    support = support_of_mask(arr.astype(bool))
    return support, support_mask(support, *shape, rid)


def _masked_softmax(h: np.ndarray, mask) -> np.ndarray:
    """The producer's float64 A_hat: the row softmax over the visible keys, exact 0 elsewhere."""
    return rowsoftmax64(h if mask is None else np.where(mask, h, -np.inf))


def _record_id(record_id: str) -> str:
    if not isinstance(record_id, str) or not core.RECORD_ID_RE.match(record_id):
        raise InputError(str(record_id), "record_id", "a record id is 1-200 characters [A-Za-z0-9._-], "
                                                      "starting with a letter or digit")
    return record_id


class Record(core.Record):
    """A record (``softrank.replay.record.Record``) built in memory.

    ``Record.from_logits(H)``: ``A = rowsoftmax(H)``; ``Record.from_qk(Q, K, scale, bias)``:
    ``A = rowsoftmax(scale Q K^T + bias)``; either with ``mask=M`` (m x N bool): the softmax over
    the keys each query sees, 0 elsewhere (``record.mask``: None when nothing is hidden, else M);
    ``record.with_upper(eps=..., X=..., Y=...)`` adds a
    witness ``X Y^T`` claimed to be within eps of A.  ``path`` is None (no folder)."""

    @classmethod
    def from_logits(cls, H, record_id: str = MEMORY_ID, provenance: dict | None = None, mask=None) -> Record:
        """The operator ``rowsoftmax(H)`` of binary64 logits ``H`` (m x N), no tolerances; with
        ``mask`` (m x N bool, True where query i sees key j), the softmax over the visible keys,
        0 elsewhere (the hidden logits are kept but never used)."""
        rid = _record_id(record_id)
        h = _matrix(H, rid, "logits")
        support, seen = _support(mask, h.shape, rid)
        return cls(record_id=rid, path=None, schema_version=core.SCHEMA_VERSION_WRITTEN,
                   provenance=dict(provenance or {}), form="logits", logits=h, queries=None, keys=None,
                   scale=None, bias=None, a_hat=_masked_softmax(h, seen), tolerances=[], support=support)

    @classmethod
    def from_qk(cls, Q, K, scale, bias=None, record_id: str = MEMORY_ID, provenance: dict | None = None,
                mask=None) -> Record:
        """The operator ``rowsoftmax(scale * Q K^T + bias)``: queries ``Q`` (m x d), keys ``K``
        (N x d), a finite ``scale``, an optional additive ``bias`` (m x N), an optional ``mask`` as
        for :meth:`from_logits`."""
        rid = _record_id(record_id)
        q, k = _matrix(Q, rid, "queries"), _matrix(K, rid, "keys")
        if q.shape[1] != k.shape[1]:
            raise InputError(rid, "keys", f"head dimension {k.shape[1]} disagrees with queries' {q.shape[1]}")
        beta = _scale(scale, rid)
        b = None if bias is None else _matrix(bias, rid, "bias")
        if b is not None and b.shape != (q.shape[0], k.shape[0]):
            raise InputError(rid, "bias", f"shape {list(b.shape)} disagrees with operator shape "
                                          f"[{q.shape[0]}, {k.shape[0]}]")
        support, seen = _support(mask, (q.shape[0], k.shape[0]), rid)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            h = beta * (q @ k.T)
            h = h if b is None else h + b
            h = h if seen is None else np.where(seen, h, 0.0)  # hidden logits are never used
        if not np.all(np.isfinite(h)):
            bad = np.argwhere(~np.isfinite(h))[0].tolist()
            raise InputError(rid, "scale", f"the logits scale * Q K^T{' + bias' if b is not None else ''} overflow "
                                           f"binary64 at {bad}, so A_hat cannot be computed (scale down Q, K or scale)")
        return cls(record_id=rid, path=None, schema_version=core.SCHEMA_VERSION_WRITTEN,
                   provenance=dict(provenance or {}), form="qk", logits=None, queries=q, keys=k,
                   scale=beta, bias=b, a_hat=_masked_softmax(h, seen), tolerances=[], support=support)

    @classmethod
    def from_record(cls, record: core.Record) -> Record:
        """The same record as this class (e.g. one read from a store)."""
        if isinstance(record, cls):
            return record
        return cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(core.Record)})

    def with_upper(self, eps, X, Y, construction: str = "user") -> Record:
        """A copy carrying the witness ``B = X Y^T`` at tolerance eps (claim: ``||A - B||_inf <= eps``,
        hence ``r_eps(A) <= rank``); it replaces a witness already held at the same eps."""
        tol = Tolerance.parse(eps, "eps", self.record_id, keep_text=True)  # a float: the decimal it prints as
        m, n = self.shape
        x = _matrix(X, self.record_id, "X", empty_columns=True)
        y = _matrix(Y, self.record_id, "Y", empty_columns=True)
        if x.shape[0] != m or y.shape[0] != n or x.shape[1] != y.shape[1]:
            raise InputError(self.record_id, "X", f"witness factors X {list(x.shape)}, Y {list(y.shape)} do not "
                                                  f"fit the operator [{m}, {n}] (X: m x r, Y: N x r)")
        witness = core.UpperWitness(rank=int(x.shape[1]), X=x, Y=y, construction=str(construction))
        return self.with_tolerance(core.ToleranceEntry(tolerance=tol, upper=witness, lower=[], float64_lower=None,
                                                       float64_upper=None, float64_verdicts={}), keep_lower=True)

    def with_tolerance(self, tol: core.ToleranceEntry, keep_lower: bool = False) -> Record:
        """A copy with ``tol`` in place of the tolerance at the same eps (appended if none);
        ``keep_lower`` keeps that tolerance's lower certificates and float64 results."""
        tols = list(self.tolerances)
        for i, old in enumerate(tols):
            if old.eps == tol.eps:
                if keep_lower:
                    tol = dataclasses.replace(old, upper=tol.upper)
                tols[i] = tol
                break
        else:
            tols.append(tol)
        return dataclasses.replace(self, tolerances=tols)
