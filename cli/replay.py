"""``softrank replay STORE --out DIR``: validated replay of every certificate in a store.

Output (each file written atomically into OUT):

- ``replay.parquet`` / ``replay.csv``: one typed row per (record, eps) (``softrank.cli.replay_tables``):
  float64 and validated brackets, ``chi_upper``, the route, outcome and lemma of the upper witness,
  every lower certificate's outcome, the kind that proved the lower end, and the assumptions each
  accepted check rests on; the parquet metadata holds the softrank version, strict flag and store.  A malformed record gets one row with status
  ``malformed`` and the error; a contradiction (validated L > validated U) status
  ``contradiction``, no verdict, and exit code 3.
- ``verdicts.parquet`` / ``verdicts.csv``: one row per (record, eps, budget k) (``--budgets``):
  float64 verdict versus validated verdict.

Exit codes: 0; 1 when an outcome named in ``--fail-on`` occurred; 2 on a malformed record (the
others are still replayed and written); 3 on a contradiction.

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

from softrank import __version__
from softrank.cli.common import check_count, output_dir, parse_int_list, progress as progress_bar
from softrank.cli.replay_tables import DEFAULT_BUDGETS, REPLAY_COLUMNS, VERDICT_COLUMNS, result_rows
from softrank.cli.tables import write_table
from softrank.replay.engine import RecordResult, replay_record
from softrank.replay.reader import list_records, read_record
from softrank.validated.errors import InputError
from softrank.validated.outcome import Outcome

FAIL_ON = ("refuted", "unresolved", "malformed", "contradiction")


def configure(parser) -> None:
    parser.add_argument("store", help="store folder (records/ + index.csv)")
    parser.add_argument("--out", default=None, help="output folder for replay.{parquet,csv} (default: STORE/replay)")
    parser.add_argument("--strict", action="store_true", help="Arb balls throughout (no binary64 error-bound route)")
    parser.add_argument("--jobs", type=int, default=1, help="records replayed in parallel (processes, >= 1)")
    parser.add_argument("--quiet", action="store_true", help="only the summary line")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)),
                        help="rank budgets k of the verdict table (default 8,16,32)")
    parser.add_argument("--fail-on", default="", metavar="OUTCOMES",
                        help="exit 1 when any of these occurs: " + ",".join(FAIL_ON) + " (default: none; "
                             "malformed records exit 2 and contradictions 3 regardless)")


def run(args) -> int:
    jobs = check_count(args.jobs, "jobs")
    budgets = tuple(parse_int_list(args.budgets, "budgets", minimum=0))
    fail_on = _fail_on(args.fail_on)
    out = args.out or str(Path(args.store) / "replay")
    shown = not args.quiet and sys.stderr.isatty()
    total = len(list_records(args.store)) if shown else 0
    with progress_bar(shown, total, "replay") as update:
        summary = replay_store(args.store, out, strict=args.strict, jobs=jobs, budgets=budgets,
                               progress=lambda done, _: update(done))
    for line in summary.errors:
        print(f"softrank replay: error: {line}", file=sys.stderr)
    print(json.dumps(summary.as_json(fail_on)) if args.json else summary.line())
    return summary.exit_code(fail_on)


def _fail_on(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for name in names:
        if name not in FAIL_ON:
            raise InputError("arguments", "fail-on", f"unknown outcome {name!r} (known: {', '.join(FAIL_ON)})")
    return names


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
    lower_refuted: int = 0
    lower_unresolved: int = 0
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

    def as_json(self, fail_on: tuple[str, ...] = ()) -> dict:
        """The counts, the error lines, the table path and the exit code, as one JSON object."""
        return dict(asdict(self), exit_code=self.exit_code(fail_on))

    def occurred(self) -> set[str]:
        """Which of the ``--fail-on`` outcomes happened."""
        counts = {"refuted": self.upper_refuted + self.lower_refuted, "malformed": self.malformed,
                  "unresolved": self.upper_unresolved + self.lower_unresolved, "contradiction": self.contradictions}
        return {name for name, n in counts.items() if n}

    def exit_code(self, fail_on: tuple[str, ...] = ()) -> int:
        """3 on a contradiction, 2 on a malformed record, 1 when a ``fail_on`` outcome occurred, else 0."""
        if self.contradictions:
            return 3
        if self.malformed:
            return 2
        return 1 if self.occurred() & set(fail_on) else 0

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
            self.lower_refuted += sum(lr.check.outcome is Outcome.REFUTED for lr in t.lowers)
            self.lower_unresolved += sum(lr.check.outcome is Outcome.UNRESOLVED for lr in t.lowers)
            self.upper_agree += t.validated_upper == tol.float64_upper
            self.lower_agree += t.validated_lower == tol.float64_lower
            if t.contradiction:
                self.contradictions += 1
                self.errors.append(f"{result.record.path} [{result.record.record_id}]: {t.contradiction}")


def _replay_folder(args: tuple[str, bool, tuple[int, ...]]):
    """(rows, verdict rows, record result or None, error line or None) for one record folder."""
    folder, strict, budgets = args
    try:
        record = read_record(folder)
    except InputError as err:
        return [{"record_id": Path(folder).name, "status": "malformed", "error": err.one_line()}], [], None, err.one_line()
    t0 = time.perf_counter()
    result = replay_record(record, strict=strict)
    rows, verdicts = result_rows(result, time.perf_counter() - t0, budgets)
    return rows, verdicts, result, None


def replay_store(store, out, *, strict: bool = False, jobs: int = 1, budgets: tuple[int, ...] = DEFAULT_BUDGETS,
                 progress: Callable[[int, int], None] | None = None) -> ReplaySummary:
    """Replay every record of STORE and write the tables into OUT. Malformed records are reported
    (``summary.errors``, one line each) and the others are still replayed and written."""
    folders = [str(f) for f in list_records(store)]
    out = output_dir(out)
    rows: list[dict] = []
    verdicts: list[dict] = []
    summary = ReplaySummary(records=len(folders))
    tasks = [(f, strict, tuple(budgets)) for f in folders]
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            _collect_all(pool.map(_replay_folder, tasks), len(tasks), rows, verdicts, summary, progress)
    else:
        _collect_all(map(_replay_folder, tasks), len(tasks), rows, verdicts, summary, progress)
    meta = {"softrank_version": __version__, "strict": str(bool(strict)).lower(), "store": str(Path(store).resolve()),
            "bounds": "upper_bound rounded up (decimal); chi_upper rounded up (binary64)"}
    write_table(out / "replay", rows, REPLAY_COLUMNS, metadata=meta)
    write_table(out / "verdicts", verdicts, VERDICT_COLUMNS, metadata=meta)
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


__all__ = ["replay_store", "ReplaySummary", "result_rows", "REPLAY_COLUMNS", "VERDICT_COLUMNS"]
