"""Tightening bracketed records (untrusted, float64): the heavier search of ``softrank tighten``,
kept out of the default ``softrank bracket`` / ``softrank run``.

``tighten_record(folder, out_store, eps_list, budget_seconds)`` reads a bracketed record and, per
tolerance and within a time budget for the whole record,

1. lowers the upper end with the smoothed-minimax optimiser (``fastpath/tighten/upper.py``),
   stepping down from the best checked witness (the stored one, or one from a smaller tolerance);
2. raises the lower end by growing the best decoder (the stored one, or one from a larger
   tolerance) with W from the eps* linear program (``fastpath/tighten/lower.py``), up to the
   least lower end that resolves the bracket (or up to the upper end: ``lower_goal="upper"``);

and writes the record into ``out_store`` with, per tolerance, the better witness and the new
certificate added before the stored ones; a witness or certificate is used only when strictly
better (a lower rank, a larger claim) and only after its float64 check (witness:
``||A - X Y^T||_inf <= eps - MARGIN``; decoder: value ``<= 1 - MARGIN``), so no bracket gets
worse, and the stored certificates stay in the record (a new certificate the replay does not
accept leaves the old lower end).  Every tolerance keeps its stored ``eps`` field exactly (the
JSON number or text of the source record).  A record where nothing improved is copied unchanged.

``fastpath/tighten/store.py`` does that for the records of a store (``tighten_store``) and writes
``tighten.csv`` (one row per record and tolerance tried: L/U before and after, seconds) and
``index.csv``.

Tolerances are ``softrank.replay.tolerance.Tolerance`` values, matched with the stored ones by
their nearest binary64 number (``0.15`` and a stored binary64(0.15) are one tolerance).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from softrank.replay.tolerance import Tolerance
from softrank.fastpath.bracket.matrix import BUDGETS, resolved, verdict
from softrank.fastpath.store.files import make_temp_dir, read_regular_file
from softrank.fastpath.float64 import decoder_value, max_row_l1
from softrank.fastpath.lower.certificates import MARGIN, Certificate
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.minimax import DescentSettings
from softrank.fastpath.upper.rank_search import Witness
from softrank.fastpath.tighten.lower import grow_decoder
from softrank.fastpath.tighten.upper import TIGHTEN_SETTINGS, descend_minimax
from softrank.fastpath.store.writer import RecordWriter
from softrank.replay.reader import MANIFEST_BYTES, MAX_LOWER, read_record
from softrank.errors import InputError

PRODUCER = "softrank.fastpath.tighten 0.1"
UPPER_SHARE = 0.5  # at most this share of a tolerance's time goes to the upper end
DEFAULT_SETTINGS = TIGHTEN_SETTINGS


@dataclass(eq=False)  # identity: states are compared with ``is`` / ``in``
class EpsState:
    """One stored tolerance of the record being tightened."""

    index: int  # position in the record's tolerances
    tol: Tolerance  # its exact value and nearest binary64 number (used in the computation)
    raw: object  # the stored ``eps`` field, written back unchanged
    text: str  # the stored field's text, as tighten.csv prints it
    stored_witness: Witness | None
    stored_lower: int
    witness: Witness | None  # best checked witness so far (the stored one at first)
    lower: int  # best lower end so far
    new_cert: Certificate | None = None
    seconds: dict = field(default_factory=lambda: {"upper": 0.0, "lower": 0.0})

    @property
    def eps(self) -> float:
        return self.tol.binary64

    @property
    def upper(self) -> int | None:
        return None if self.witness is None else self.witness.rank


def _states(record, doc: dict, A: np.ndarray) -> list[EpsState]:
    out = []
    for i, t in enumerate(record.tolerances):
        w = None
        if t.upper is not None:
            w = Witness(t.upper.rank, t.upper.X, t.upper.Y, t.upper.construction or "stored",
                        max_row_l1(A, t.upper.X, t.upper.Y))
        low = t.float64_lower if t.float64_lower is not None else max([1] + [c.lower for c in t.lower])
        out.append(EpsState(i, t.tolerance, doc["tolerances"][i]["eps"], t.eps_text, w, low,
                            w, low))
    return out


def _well_formed(rows, W, A: np.ndarray) -> bool:
    """Distinct in-range integer rows and W of shape (N, |rows|) (else the certificate is not a
    start for growth; the replay judges it as stored)."""
    if not (isinstance(rows, np.ndarray) and isinstance(W, np.ndarray) and rows.ndim == 1 and rows.size):
        return False
    return (rows.dtype.kind in "iu" and W.shape == (A.shape[1], rows.size) and int(rows.min()) >= 0
            and int(rows.max()) < A.shape[0] and len(set(rows.tolist())) == rows.size)


def _stored_decoders(record, A: np.ndarray) -> list[tuple[float, Certificate]]:
    """(eps, certificate) of every stored decoder certificate."""
    out = []
    for t in record.tolerances:
        for c in t.lower:
            rows, W = c.data.get("rows"), c.data.get("W")
            if c.kind == "decoder" and _well_formed(rows, W, A):
                out.append((float(t.eps), Certificate("decoder", len(rows), rows=rows, W=W)))
    return out


def best_witness(states: list[EpsState], s: EpsState) -> Witness | None:
    """The least-rank witness valid at ``s.eps``: its own, or one from another tolerance whose
    float64 error is at most ``s.eps - MARGIN``."""
    cands = [x.witness for x in states if x.witness is not None and x.witness.error <= s.eps - MARGIN]
    return min(cands, key=lambda w: w.rank, default=s.witness)


def best_decoder(A: np.ndarray, pool: list[Certificate], eps: float) -> Certificate | None:
    """The largest decoder of ``pool`` whose float64 value at ``eps`` is <= 1 - MARGIN."""
    ok = [c for c in pool if decoder_value(A, np.asarray(c.rows), c.W, eps) <= 1.0 - MARGIN]
    return max(ok, key=lambda c: c.lower, default=None)


def resolve_goal(lower: int, upper: int | None, p: int) -> int:
    """The least lower end that resolves the bracket (``resolved`` in fastpath/bracket/matrix.py)."""
    top = p if upper is None else upper
    return next((g for g in range(lower, top + 1) if resolved(g, top, p)), top)


def _tighten_eps(op: OperatorCache, states: list[EpsState], s: EpsState, pool: list[Certificate],
                 deadline: float, settings: DescentSettings, lower_goal: str) -> None:
    """Upper then lower end of one tolerance, until ``deadline``."""
    t0 = time.perf_counter()
    shared = best_decoder(op.A, pool, s.eps)
    if shared is not None and shared.lower > s.lower:
        s.lower, s.new_cert = shared.lower, shared
    start = best_witness(states, s)
    if start is not None and start.error <= s.eps - MARGIN:
        w = descend_minimax(op, start, s.eps, s.lower, t0 + UPPER_SHARE * (deadline - t0), settings)
        if s.witness is None or w.rank < s.witness.rank:
            s.witness = w
    t1 = time.perf_counter()
    s.seconds["upper"] += t1 - t0
    cert = best_decoder(op.A, pool, s.eps)
    goal = resolve_goal(s.lower, s.upper, op.p) if lower_goal == "resolve" else (s.upper or op.p)
    if cert is not None and goal > s.lower:
        grown = grow_decoder(op.A, cert, s.eps, goal, deadline)
        if grown.lower > s.lower:
            s.lower, s.new_cert = grown.lower, grown
            pool.append(grown)
    s.seconds["lower"] += time.perf_counter() - t1


def _share(op: OperatorCache, states: list[EpsState], pool: list[Certificate]) -> None:
    """Witnesses valid at a larger tolerance and decoders valid at a smaller one, passed on to
    every stored tolerance (tightened or not)."""
    for s in states:
        w = best_witness(states, s)
        if w is not None and (s.witness is None or w.rank < s.witness.rank):
            s.witness = w
        c = best_decoder(op.A, pool, s.eps)
        if c is not None and c.lower > s.lower:
            s.lower, s.new_cert = c.lower, c


def select_states(states: list[EpsState], eps_list, only_unresolved: bool, p: int) -> list[EpsState]:
    """The tolerances to tighten, in the order of ``eps_list`` (None: all stored), each matched by
    its nearest binary64 number (``0.15`` and the stored binary64(0.15) are one tolerance)."""
    if eps_list is None:
        chosen = list(states)
    else:
        by_value = {s.eps: s for s in states}
        floats = [Tolerance.parse(e).binary64 for e in eps_list]
        picked = dict.fromkeys(f for f in floats if f in by_value)
        chosen = [by_value[e] for e in picked]
    if only_unresolved:
        chosen = [s for s in chosen if not resolved(s.lower, s.upper, p)]
    return chosen


def tighten_record(folder, out_store, eps_list=None, budget_seconds: float = 120.0,
                   only_unresolved: bool = False, settings: DescentSettings = DEFAULT_SETTINGS,
                   lower_goal: str = "resolve") -> list[dict]:
    """Tighten one bracketed record into ``out_store`` (see the module docstring).  ``eps_list``:
    the stored tolerances to tighten (exact values, in the order to do them; None: all), the
    budget split evenly over them (time one leaves passes to the next).  ``lower_goal``:
    ``"resolve"`` grows decoders up to the least lower end that resolves the bracket, ``"upper"``
    up to the upper end.  Returns one row per
    tolerance tried."""
    folder = Path(folder)
    record = read_record(folder)
    doc = json.loads(read_regular_file(folder / "record.json", MANIFEST_BYTES).decode("utf-8"))
    op = OperatorCache(record.a_hat)
    states = _states(record, doc, op.A)
    before = {s.index: (s.lower, s.upper) for s in states}
    chosen = select_states(states, eps_list, only_unresolved, op.p)
    pool = [c for _, c in _stored_decoders(record, op.A)]
    start = time.perf_counter()
    for j, s in enumerate(chosen):
        left = budget_seconds - (time.perf_counter() - start)
        _tighten_eps(op, states, s, pool, time.perf_counter() + left / (len(chosen) - j), settings, lower_goal)
    _share(op, states, pool)
    improved = [s for s in states if s.new_cert is not None or s.witness is not s.stored_witness]
    if improved:
        _write(out_store, record, states)
    elif Path(out_store).resolve() != folder.parent.parent.resolve():
        copy_record(folder, out_store)
    return [_row(record, s, before[s.index], op.p) for s in states if s in chosen or s in improved]


def _write(out_store, record, states: list[EpsState]) -> None:
    with RecordWriter.from_record(out_store, record, provenance_update={"tightened_by": PRODUCER}) as w:
        for s, t in zip(states, record.tolerances):
            upper = None if s.witness is None else (s.witness.X, s.witness.Y, s.witness.construction)
            stored = [{"kind": c.kind, "lower": c.lower, **c.data} for c in t.lower]
            lower = ([s.new_cert.as_record()] if s.new_cert is not None else []) + stored
            if len(lower) > MAX_LOWER:  # many passes: keep the strongest, so that the record stays readable
                lower = sorted(lower, key=lambda c: -c["lower"])[:MAX_LOWER]
            budgets = sorted(t.float64_verdicts) or list(BUDGETS)
            f64 = {"lower": s.lower, "upper": s.upper,
                   "verdicts": {str(k): verdict(k, s.lower, s.upper) for k in budgets}}
            w.add_tolerance(s.raw, upper=upper, lower=lower, float64=f64)


def _row(record, s: EpsState, before: tuple[int, int | None], p: int) -> dict:
    return {"record_id": record.record_id, "model": str(record.provenance.get("model", "")),
            "eps": s.text, "eps_value": s.eps, "lower_before": before[0], "upper_before": before[1],
            "lower_after": s.lower, "upper_after": s.upper,
            "resolved_before": resolved(before[0], before[1], p), "resolved_after": resolved(s.lower, s.upper, p),
            "upper_construction": None if s.witness is None else s.witness.construction,
            "seconds_upper": round(s.seconds["upper"], 3), "seconds_lower": round(s.seconds["lower"], 3),
            "seconds": round(s.seconds["upper"] + s.seconds["lower"], 3)}


def copy_record(folder, out_store) -> Path:
    """Copy a record folder unchanged into ``out_store``: assembled in a temporary folder and
    moved in by one rename (a record already there is replaced by two renames, as
    ``RecordWriter.commit`` does, so ``recover_store`` can undo a kill between them)."""
    folder = Path(folder)
    if not folder.is_dir():  # a file, a FIFO or a dangling link in place of a record folder: never opened
        read_record(folder)  # the reader's InputError names the entry and the field
        raise InputError(str(folder), "record.json", "not a record folder (not copied)")
    _only_regular_files(folder)
    root = Path(out_store) / "records"
    root.mkdir(parents=True, exist_ok=True)
    final = root / folder.name
    tmp = make_temp_dir(f".tmp-{folder.name}-", root)
    try:
        shutil.copytree(folder, tmp / "r")
        if final.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".old-{folder.name}-", dir=root))
            os.rename(final, trash / "old")
            os.rename(tmp / "r", final)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.rename(tmp / "r", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _only_regular_files(folder: Path) -> None:
    """``InputError`` naming the first entry of the record folder that is neither a regular file
    nor a folder (shutil cannot copy a FIFO, device or socket, and a link could point anywhere)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise InputError(str(folder), str(path.relative_to(folder)), "is not a regular file (not copied)")
