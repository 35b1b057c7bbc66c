"""What the theorem studies share: an operator's float64 logits and logit balls from a record,
the double centring C = P_m H P_N, and the selection of records from stores."""

from __future__ import annotations

import numpy as np

from softrank.replay.reader import read_record, record_entries
from softrank.errors import InputError
from softrank.replay.support import refuse_masked
from softrank.validated.softmax_enclosure import logits_balls


#: the float64 theory computations (SVDs, SDPs, LPs on C and on products of its factors) square
#: and multiply the logits: outside this range of max |C| they overflow or underflow
THEORY_RANGE = (1e-100, 1e100)


def logits_float(rec) -> np.ndarray:
    """The float64 logits H, refused (one line naming the record and field) where the double
    centring C has max |C| outside ``THEORY_RANGE`` (C = 0, a uniform operator, is accepted)."""
    with np.errstate(all="ignore"):
        if rec.form == "logits":
            h = np.asarray(rec.logits, dtype=np.float64)
        else:
            h = float(rec.scale) * (rec.queries @ rec.keys.T)
            h = h + rec.bias if rec.bias is not None else h
        c_max = float(np.max(np.abs(double_centre(h)))) if h.size else 0.0
    lo, hi = THEORY_RANGE
    if not np.all(np.isfinite(h)) or not c_max <= hi or 0.0 < c_max < lo:
        field = "logits" if rec.form == "logits" else "queries, keys"
        raise InputError(str(rec.path), field, f"the centred logits reach max |C| = {c_max:.3g}, outside the range "
                                               f"[{lo:g}, {hi:g}] of the float64 theory computations")
    return h


def logits_balls_of(rec):
    if rec.form == "logits":
        return logits_balls(logits=rec.logits)
    return logits_balls(queries=rec.queries, keys=rec.keys, scale=rec.scale, bias=rec.bias)


def double_centre(h: np.ndarray) -> np.ndarray:
    """C = P_m H P_N in float64 (from the logits, never from log A)."""
    return h - h.mean(1, keepdims=True) - h.mean(0, keepdims=True) + h.mean()


def select_records(stores: list[str], ids: str | None = None, limit: int | None = None,
                   max_n: int | None = None, errors: list[str] | None = None):
    """Records of the stores (in order), optionally only the given comma-separated ids, at most
    ``limit`` per store, skipping operators wider than ``max_n``.  With an ``errors`` list, a
    malformed record is skipped and its one-line error appended there (the others are still
    selected); without one, it raises."""
    wanted = None if ids is None else {s.strip() for s in ids.split(",") if s.strip()}
    if wanted is not None and not wanted:
        raise InputError("arguments", "records", f"no record id given: {ids!r}")
    out = []
    seen = set()
    for store in stores:
        taken = 0
        for folder in record_entries(store):  # an entry that is not a folder is a malformed record
            if wanted is not None and folder.name not in wanted:
                continue
            if limit is not None and taken >= limit:
                break
            try:
                rec = read_record(folder)
                refuse_masked(rec)  # the theorem assumes one common positive support
            except InputError as err:
                if errors is None:
                    raise
                errors.append(err.one_line())
                seen.add(folder.name)
                continue
            seen.add(rec.record_id)
            if max_n is not None and max(rec.shape) > max_n:
                continue
            out.append(rec)
            taken += 1
    if wanted is not None:
        missing = wanted - seen
        if missing:
            raise InputError(",".join(stores), "records", f"not found: {sorted(missing)[:5]}")
    return out
