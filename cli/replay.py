"""``softrank replay STORE --out DIR``: validated replay of every certificate in a store.

Output (each file written atomically into OUT):

- ``replay.parquet`` / ``replay.csv``: one row per (record, eps): float64 and validated
  brackets, chi, the route and outcome of the upper witness, the kind that proved the lower end,
  and the assumptions each accepted check rests on.  A malformed record gets one row with status
  ``malformed`` and the error; a contradiction (validated L > validated U) status
  ``contradiction``, no verdict, and exit code 3.
- ``verdicts.parquet`` / ``verdicts.csv``: one row per (record, eps, budget k): float64 verdict
  versus validated verdict.

Records are independent, so they are replayed in a process pool (``--jobs``); the verdicts come
from ``softrank.replay.engine``, this module only reads, times and tabulates.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa

from softrank.cli.common import check_count, progress as progress_bar
from softrank.cli.tables import write_table
from softrank.replay.engine import RecordResult, replay_record
from softrank.replay.reader import list_records, read_record
from softrank.validated.errors import InputError
from softrank.validated.outcome import Outcome

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


def configure(parser) -> None:
    parser.add_argument("store", help="store folder (records/ + index.csv)")
    parser.add_argument("--out", default=None, help="output folder for replay.{parquet,csv} (default: STORE/replay)")
    parser.add_argument("--strict", action="store_true", help="Arb balls throughout (no binary64 error-bound route)")
    parser.add_argument("--jobs", type=int, default=1, help="records replayed in parallel (processes, >= 1)")
    parser.add_argument("--quiet", action="store_true", help="only the summary line")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def run(args) -> int:
    jobs = check_count(args.jobs, "jobs")
    out = args.out or str(Path(args.store) / "replay")
    shown = not args.quiet and sys.stderr.isatty()
    total = len(list_records(args.store)) if shown else 0
    with progress_bar(shown, total, "replay") as update:
        summary = replay_store(args.store, out, strict=args.strict, jobs=jobs, progress=lambda done, _: update(done))
    for line in summary.errors:
        print(f"softrank replay: error: {line}", file=sys.stderr)
    print(json.dumps(summary.as_json()) if args.json else summary.line())
    return summary.exit_code()


@dataclass
class ReplaySummary:
    records: int = 0
    malformed: int = 0
    contradictions: int = 0
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
        contra = f", {self.contradictions} contradictions" if self.contradictions else ""
        return (f"replayed {self.records} records ({self.malformed} malformed{contra}), {self.tolerances} tolerances: "
                f"upper witnesses proved {self.upper_proved}, refuted {self.upper_refuted}, unresolved "
                f"{self.upper_unresolved}; lower certificates proved {self.lower_proved}, not accepted "
                f"{self.lower_rejected}; validated = float64 at {self.upper_agree}/{self.tolerances} upper "
                f"and {self.lower_agree}/{self.tolerances} lower ends; table: {self.out}")

    def as_json(self) -> dict:
        """The counts, the error lines, the table path and the exit code, as one JSON object."""
        return dict(asdict(self), exit_code=self.exit_code())

    def exit_code(self) -> int:
        return 3 if self.contradictions else 2 if self.malformed else 0

    def add(self, result: RecordResult) -> None:
        for tol, t in zip(result.record.tolerances, result.tolerances):
            self.tolerances += 1
            if t.upper is not None:
                self.upper_proved += t.upper.outcome is Outcome.PROVED
                self.upper_refuted += t.upper.outcome is Outcome.REFUTED
                self.upper_unresolved += t.upper.outcome is Outcome.UNRESOLVED
            proved = sum(lr.check.proved for lr in t.lowers)
            self.lower_proved += proved
            self.lower_rejected += len(t.lowers) - proved
            self.upper_agree += t.validated_upper == tol.float64_upper
            self.lower_agree += t.validated_lower == tol.float64_lower
            if t.contradiction:
                self.contradictions += 1
                self.errors.append(f"{result.record.path} [{result.record.record_id}]: {t.contradiction}")


def _int_or_none(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _none_if_empty(text: str) -> str | None:
    return text or None


def result_rows(result: RecordResult, seconds: float) -> tuple[list[dict], list[dict]]:
    """The replay rows and verdict rows of one record's typed result."""
    record = result.record
    prov = record.provenance
    m, n = record.shape
    base = {"record_id": record.record_id, "status": "ok", "error": "", "model": str(prov.get("model", "")),
            "family": str(prov.get("family", "")), "layer": _int_or_none(prov.get("layer")),
            "head": _int_or_none(prov.get("head")), "m": m, "N": n}
    rows, verdicts = [], []
    for tol, t in zip(record.tolerances, result.tolerances):
        row = dict(base, eps=t.eps_text, eps_value=float(t.eps), float64_lower=tol.float64_lower,
                   float64_upper=tol.float64_upper, chi=None if result.chi is None else float(result.chi))
        if t.contradiction:
            row.update(status="contradiction", error=t.contradiction)
        if tol.upper is not None:
            row.update(upper_rank=tol.upper.rank, upper_construction=tol.upper.construction,
                       upper_outcome=t.upper.outcome.value, upper_route=_none_if_empty(t.upper.route),
                       upper_bound=_none_if_empty(t.upper.value), upper_reason=t.upper.reason)
        outcomes = [f"{lr.kind}>={lr.claimed}:{lr.check.outcome.value}" for lr in t.lowers]
        reasons = [f"{lr.kind}: {lr.check.reason}" for lr in t.lowers if lr.check.reason]
        row.update(validated_lower=t.validated_lower, validated_upper=t.validated_upper, lower_kind=t.lower_kind,
                   lower_outcomes="; ".join(outcomes), lower_reasons="; ".join(reasons),
                   assumptions="; ".join(t.assumptions), seconds=seconds)
        rows.append(row)
        for k in sorted(set(DEFAULT_BUDGETS) | set(tol.float64_verdicts)):
            verdicts.append({"record_id": record.record_id, "family": base["family"], "eps": t.eps_text, "k": k,
                             "float64_verdict": tol.float64_verdicts.get(k, ""), "validated_verdict": t.verdict(k)})
    return rows, verdicts


def _replay_folder(args: tuple[str, bool]):
    """(rows, verdict rows, record result or None, error line or None) for one record folder."""
    folder, strict = args
    try:
        record = read_record(folder)
    except InputError as err:
        return [{"record_id": Path(folder).name, "status": "malformed", "error": err.one_line()}], [], None, err.one_line()
    t0 = time.perf_counter()
    result = replay_record(record, strict=strict)
    rows, verdicts = result_rows(result, time.perf_counter() - t0)
    return rows, verdicts, result, None


def replay_store(store, out, *, strict: bool = False, jobs: int = 1,
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
            _collect_all(pool.map(_replay_folder, tasks), len(tasks), rows, verdicts, summary, progress)
    else:
        _collect_all(map(_replay_folder, tasks), len(tasks), rows, verdicts, summary, progress)
    write_table(out / "replay", rows, REPLAY_COLUMNS)
    write_table(out / "verdicts", verdicts, VERDICT_COLUMNS)
    summary.out = str(out / "replay.parquet")
    return summary


def _collect_all(results, total: int, rows: list[dict], verdicts: list[dict], summary: ReplaySummary,
                 progress: Callable[[int, int], None] | None) -> None:
    """Gather each record's rows into the tables and the summary, in store order."""
    for i, (r_rows, r_verdicts, result, error) in enumerate(results):
        rows.extend(r_rows)
        verdicts.extend(r_verdicts)
        if error:
            summary.malformed += 1
            summary.errors.append(error)
        else:
            summary.add(result)
        if progress:
            progress(i + 1, total)


__all__ = ["replay_store", "ReplaySummary", "result_rows"]
