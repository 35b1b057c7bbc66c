"""What the theorem studies share: an operator's float64 logits and logit balls from a record,
the double centring C = P_m H P_N, and the selection of records from stores."""

from __future__ import annotations

import numpy as np

from softrank.replay.reader import list_records, read_record
from softrank.validated.errors import InputError
from softrank.validated.softmax_enclosure import logits_balls


def logits_float(rec) -> np.ndarray:
    if rec.form == "logits":
        return np.asarray(rec.logits, dtype=np.float64)
    h = float(rec.scale) * (rec.queries @ rec.keys.T)
    return h + rec.bias if rec.bias is not None else h


def logits_balls_of(rec):
    if rec.form == "logits":
        return logits_balls(logits=rec.logits)
    return logits_balls(queries=rec.queries, keys=rec.keys, scale=rec.scale, bias=rec.bias)


def double_centre(h: np.ndarray) -> np.ndarray:
    """C = P_m H P_N in float64 (from the logits, never from log A)."""
    return h - h.mean(1, keepdims=True) - h.mean(0, keepdims=True) + h.mean()


def select_records(stores: list[str], ids: str | None = None, limit: int | None = None,
                   max_n: int | None = None):
    """Records of the stores (in order), optionally only the given comma-separated ids, at most
    ``limit`` per store, skipping operators wider than ``max_n``."""
    wanted = None if ids is None else {s.strip() for s in ids.split(",") if s.strip()}
    out = []
    for store in stores:
        taken = 0
        for folder in list_records(store):
            if wanted is not None and folder.name not in wanted:
                continue
            if limit is not None and taken >= limit:
                break
            rec = read_record(folder)
            if max_n is not None and max(rec.shape) > max_n:
                continue
            out.append(rec)
            taken += 1
    if wanted is not None:
        missing = wanted - {r.record_id for r in out}
        if missing:
            raise InputError(",".join(stores), "records", f"not found: {sorted(missing)[:5]}")
    return out
