"""Validated replay of a store: every upper witness and lower certificate of every record, at
every tolerance, re-checked by the trusted kernels in ``softrank.validated``.

Output (written atomically into OUT):

- ``replay.parquet`` / ``replay.csv``: one row per (record, eps): float64 and validated
  brackets, chi, the route and outcome of the upper witness, the kind that proved the lower end,
  and the assumptions of each acceptance.  Malformed records get one row with status
  ``malformed`` and the error.
- ``verdicts.parquet`` / ``verdicts.csv``: one row per (record, eps, budget k): float64 verdict
  versus validated verdict.

Records are independent, so they are replayed in a process pool (``jobs``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from softrank.errors import InputError
from softrank.replay.lower import LowerContext, check_lower_certificate
from softrank.replay.store import Record, list_records, read_record
from softrank.validated.outcome import Outcome
from softrank.validated.softmax_enclosure import chi_upper, logits_balls, rowsoftmax_enclosure
from softrank.validated.upper_witness import check_upper_witness

DEFAULT_BUDGETS = (8, 16, 32)

REPLAY_COLUMNS = [
    ("record_id", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("model", pa.string()), ("family", pa.string()), ("layer", pa.int64()), ("head", pa.int64()),
    ("m", pa.int64()), ("N", pa.int64()), ("eps", pa.string()), ("eps_value", pa.float64()),
    ("float64_lower", pa.int64()), ("float64_upper", pa.int64()),
    ("validated_lower", pa.int64()), ("validated_upper", pa.int64()),
    ("chi", pa.float64()),
    ("upper_rank", pa.int64()), ("upper_construction", pa.string()), ("upper_outcome", pa.string()),
    ("upper_route", pa.string()), ("upper_bound", pa.string()), ("upper_reason", pa.string()),
    ("lower_kind", pa.string()), ("lower_outcomes", pa.string()), ("lower_reasons", pa.string()),
    ("assumptions", pa.string()), ("seconds", pa.float64()),
]
VERDICT_COLUMNS = [
    ("record_id", pa.string()), ("family", pa.string()), ("eps", pa.string()), ("k", pa.int64()),
    ("float64_verdict", pa.string()), ("validated_verdict", pa.string()),
]


@dataclass
class ReplaySummary:
    records: int = 0
    malformed: int = 0
    tolerances: int = 0
    upper_proved: int = 0
    upper_refuted: int = 0
    upper_unresolved: int = 0
    lower_proved: int = 0
    lower_rejected: int = 0
    upper_agree: int = 0  # float64 upper == validated upper
    lower_agree: int = 0
    errors: list[str] = field(default_factory=list)
    out: str = ""

    def line(self) -> str:
        return (f"replayed {self.records} records ({self.malformed} malformed), {self.tolerances} tolerances: "
                f"upper witnesses proved {self.upper_proved}, refuted {self.upper_refuted}, unresolved "
                f"{self.upper_unresolved}; lower certificates proved {self.lower_proved}, not accepted "
                f"{self.lower_rejected}; validated = float64 at {self.upper_agree}/{self.tolerances} upper "
                f"and {self.lower_agree}/{self.tolerances} lower ends; table: {self.out}")


def validated_verdict(k: int, lower: int | None, upper: int | None) -> str:
    """Verdict for budget k from validated ends: feasible if U <= k, impossible if L > k."""
    if upper is not None and upper <= k:
        return "feasible"
    if lower is not None and lower > k:
        return "impossible"
    return "unresolved"


def _enclosure(record: Record):
    h = logits_balls(logits=record.logits, queries=record.queries, keys=record.keys,
                     scale=record.scale, bias=record.bias)
    return rowsoftmax_enclosure(h)


def replay_record(record: Record, strict: bool = False) -> tuple[list[dict], list[dict]]:
    """Replay one (already validated) record; returns (replay rows, verdict rows)."""
    prov = record.provenance
    m, n = record.shape
    base = {"record_id": record.record_id, "status": "ok", "error": "", "model": str(prov.get("model", "")),
            "family": str(prov.get("family", "")), "layer": _int_or_none(prov.get("layer")),
            "head": _int_or_none(prov.get("head")), "m": m, "N": n}
    t0 = time.perf_counter()
    try:
        enc = _enclosure(record)
        chi = chi_upper(enc, record.a_hat)
    except (ArithmeticError, ValueError) as err:
        enc, chi = None, None
        enclosure_error = f"no enclosure of A: {err}"
    rows, verdicts = [], []
    for tol in record.tolerances:
        t1 = time.perf_counter()
        row = dict(base, eps=tol.eps_text, eps_value=float(tol.eps), float64_lower=tol.float64_lower,
                   float64_upper=tol.float64_upper, chi=None if chi is None else float(chi))
        assumptions = set()
        v_upper = None
        if tol.upper is not None:
            row.update(upper_rank=tol.upper.rank, upper_construction=tol.upper.construction)
            if enc is None:
                row.update(upper_outcome=Outcome.UNRESOLVED.value, upper_reason=enclosure_error)
            else:
                chk = check_upper_witness(enc, tol.upper.X, tol.upper.Y, tol.eps, strict=strict, chi=chi,
                                          a_hat=record.a_hat, operator_assumption=record.operator_assumption)
                row.update(upper_outcome=chk.outcome.value, upper_route=chk.route, upper_bound=chk.value,
                           upper_reason=chk.reason)
                if chk.proved:
                    v_upper = tol.upper.rank
                    assumptions.update(chk.assumptions)
        # A lower end of 1 needs no certificate when eps < 1: ||A||_inf = 1 > eps rules out B = 0.
        v_lower, lower_kind, outcomes, reasons = (1 if m >= 1 else 0), "trivial(||A||_inf=1>eps)", [], []
        for cert in tol.lower:
            if enc is None:
                outcomes.append(f"{cert.kind}:unresolved")
                reasons.append(enclosure_error)
                continue
            chk = check_lower_certificate(LowerContext(record=record, enclosure=enc, chi=chi, eps=tol.eps, cert=cert,
                                                       strict=strict, operator_assumption=record.operator_assumption))
            outcomes.append(f"{cert.kind}>={cert.lower}:{chk.outcome.value}")
            if chk.reason:
                reasons.append(f"{cert.kind}: {chk.reason}")
            if chk.proved and cert.lower > v_lower:
                v_lower, lower_kind = cert.lower, cert.kind
                assumptions.update(chk.assumptions)
        row.update(validated_lower=v_lower, validated_upper=v_upper, lower_kind=lower_kind,
                   lower_outcomes="; ".join(outcomes), lower_reasons="; ".join(reasons),
                   assumptions="; ".join(sorted(a for a in assumptions if a)),
                   seconds=time.perf_counter() - t1 + (t1 - t0 if not rows else 0.0))
        rows.append(row)
        budgets = sorted(set(DEFAULT_BUDGETS) | set(tol.float64_verdicts))
        for k in budgets:
            verdicts.append({"record_id": record.record_id, "family": base["family"], "eps": tol.eps_text, "k": k,
                             "float64_verdict": tol.float64_verdicts.get(k, ""),
                             "validated_verdict": validated_verdict(k, v_lower, v_upper)})
    return rows, verdicts


def _int_or_none(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _replay_folder(args: tuple[str, bool]) -> tuple[list[dict], list[dict], str | None]:
    folder, strict = args
    try:
        record = read_record(folder)
    except InputError as err:
        return [{"record_id": Path(folder).name, "status": "malformed", "error": err.one_line()}], [], err.one_line()
    return (*replay_record(record, strict=strict), None)


def replay_store(store: str | os.PathLike, out: str | os.PathLike, *, strict: bool = False, jobs: int = 1,
                 progress: Callable[[int, int], None] | None = None) -> ReplaySummary:
    """Replay every record of STORE and write the tables into OUT. Malformed records are reported
    (``summary.errors``, one line each) and the others are still replayed and written."""
    folders = [str(f) for f in list_records(store)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    verdicts: list[dict] = []
    summary = ReplaySummary(records=len(folders))
    tasks = [(f, strict) for f in folders]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = pool.map(_replay_folder, tasks)
            for i, res in enumerate(results):
                _collect(res, rows, verdicts, summary)
                if progress:
                    progress(i + 1, len(tasks))
    else:
        for i, task in enumerate(tasks):
            _collect(_replay_folder(task), rows, verdicts, summary)
            if progress:
                progress(i + 1, len(tasks))
    _write_table(out / "replay", rows, REPLAY_COLUMNS)
    _write_table(out / "verdicts", verdicts, VERDICT_COLUMNS)
    summary.out = str(out / "replay.parquet")
    return summary


def _collect(res, rows, verdicts, summary: ReplaySummary) -> None:
    r_rows, r_verdicts, error = res
    rows.extend(r_rows)
    verdicts.extend(r_verdicts)
    if error:
        summary.malformed += 1
        summary.errors.append(error)
        return
    for row in r_rows:
        summary.tolerances += 1
        outcome = row.get("upper_outcome")
        if outcome == Outcome.PROVED.value:
            summary.upper_proved += 1
        elif outcome == Outcome.REFUTED.value:
            summary.upper_refuted += 1
        elif outcome == Outcome.UNRESOLVED.value:
            summary.upper_unresolved += 1
        for item in filter(None, (row.get("lower_outcomes") or "").split("; ")):
            if item.endswith(":" + Outcome.PROVED.value):
                summary.lower_proved += 1
            else:
                summary.lower_rejected += 1
        summary.upper_agree += row.get("validated_upper") == row.get("float64_upper")
        summary.lower_agree += row.get("validated_lower") == row.get("float64_lower")


def _write_table(stem: Path, rows: list[dict], columns) -> None:
    """Write STEM.parquet and STEM.csv atomically (temp file + rename)."""
    schema = pa.schema(columns)
    table = pa.table({name: [row.get(name) for row in rows] for name, _ in columns}, schema=schema)
    for suffix, writer in ((".parquet", pq.write_table), (".csv", pacsv.write_csv)):
        fd, tmp = tempfile.mkstemp(prefix=f".{stem.name}-", suffix=suffix, dir=stem.parent)
        os.close(fd)
        try:
            writer(table, tmp)
            os.replace(tmp, stem.with_suffix(suffix))
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def summary_json(summary: ReplaySummary) -> str:
    d = dict(summary.__dict__)
    return json.dumps(d, indent=1)

