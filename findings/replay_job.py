"""The replay of a store into a folder (``softrank replay STORE --out DIR``, ``softrank run``, the
studies and benchmarks): ``ReplayJob`` and its ``ReplaySummary``.

Output (each file written atomically into OUT):

- ``replay.parquet`` / ``replay.csv``: one typed row per (record, eps) (``softrank.findings.replay_rows``):
  float64 and validated brackets, ``chi_upper``, the route, outcome and lemma of the upper witness,
  every lower certificate's outcome, the kind that proved the lower end, and the assumptions each
  accepted check rests on; the parquet metadata holds the softrank version, strict flag and store.  A malformed record gets one row with status
  ``malformed`` and the error; a contradiction (validated L > validated U) status
  ``contradiction``, no verdict, and exit code 3.
- ``verdicts.parquet`` / ``verdicts.csv``: one row per (record, eps, budget k) (``budgets``):
  float64 verdict versus validated verdict.

Exit codes (``ReplaySummary.exit_code``): 0; 1 when an outcome named in ``fail_on`` occurred; 2 on
a malformed record (the others are still replayed and written); 3 on a contradiction.

Records are independent.  With ``jobs=1`` and no ``scheduler`` they are replayed in this
process; otherwise on dask.distributed (``softrank.fastpath.runner``): ``jobs=N`` starts a
local cluster of N worker processes, ``scheduler=ADDRESS`` uses a running one (its workers must
see STORE at the same path), ``scheduler="local"`` forces a local cluster.  The tables are the same
in every case (store order).

Nothing is lost when a run is killed, even by SIGKILL: each record's rows go to a journal in
``OUT/.partial/`` (one file per record, fsync'd, one rename) as soon as they are known; the tables
and ``OUT/manifest.json`` (``"complete": true``) are written only at the end, after which the
journal is removed.  A run starts by removing an old manifest and old tables, so partial output
never looks complete.  ``resume=True`` reads the journal and replays only the records it lacks (or
whose ``record.json`` changed since); the parameters must match the journal's.

The verdicts come from ``softrank.replay.engine``; this module only reads, times and tabulates.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable

from softrank import __version__
from softrank.fastpath.runner import Journal, RecordsJob
from softrank.fastpath.store.files import check_not_input, output_folder, store_records, write_json
from softrank.findings.replay_rows import DEFAULT_BUDGETS, REPLAY_COLUMNS, VERDICT_COLUMNS, malformed_row, result_rows
from softrank.findings.replay_table import REPLAY_FILES
from softrank.findings.tables import write_table
from softrank.replay.engine import RecordResult, replay_record
from softrank.replay.reader import read_record, record_entries
from softrank.errors import InputError
from softrank.validated.outcome import Outcome

FAIL_ON = ("refuted", "unresolved", "malformed", "contradiction")
JOURNAL = ".partial"
OUTPUTS = REPLAY_FILES  # the manifest first


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
    resumed: int = 0  # records taken from the journal of a killed run (--resume)

    def line(self) -> str:
        contra = f", {self.contradictions} contradictions" if self.contradictions else ""
        resumed = f" ({self.resumed} from the journal)" if self.resumed else ""
        return (f"replayed {self.records} records{resumed} ({self.malformed} malformed{contra}), {self.tolerances} tolerances: "
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
        """Count one record's typed result."""
        self.merge(record_counts(result))

    def merge(self, payload: dict) -> None:
        """Count one record's journal payload (``record_counts`` and its error lines)."""
        for name, n in payload["counts"].items():
            setattr(self, name, getattr(self, name) + n)
        self.malformed += bool(payload.get("malformed"))
        self.errors.extend(payload.get("errors", []))


COUNTED = tuple(f.name for f in fields(ReplaySummary) if f.type == "int" and f.name not in ("records", "malformed",
                                                                                                "resumed"))


def record_counts(result: RecordResult) -> dict:
    """The summary's counts for one record, and its contradiction lines (plain data, for the journal)."""
    c = dict.fromkeys(COUNTED, 0)
    errors = []
    for tol, t in zip(result.record.tolerances, result.tolerances):
        c["tolerances"] += 1
        if t.upper is not None:
            c["upper_proved"] += t.upper.outcome is Outcome.PROVED
            c["upper_refuted"] += t.upper.outcome is Outcome.REFUTED
            c["upper_unresolved"] += t.upper.outcome is Outcome.UNRESOLVED
        proved = sum(lr.check.proved for lr in t.lowers)
        c["lower_proved"] += proved
        c["lower_rejected"] += len(t.lowers) - proved
        c["lower_refuted"] += sum(lr.check.outcome is Outcome.REFUTED for lr in t.lowers)
        c["lower_unresolved"] += sum(lr.check.outcome is Outcome.UNRESOLVED for lr in t.lowers)
        c["upper_agree"] += t.validated_upper == tol.float64_upper
        c["lower_agree"] += t.validated_lower == tol.float64_lower
        if t.contradiction:
            c["contradictions"] += 1
            errors.append(f"{result.record.path} [{result.record.record_id}]: {t.contradiction}")
    return {"counts": c, "errors": errors}


def _fingerprint(folder: str) -> str:
    """SHA-256 of a record's manifest (which holds every array's hash): a changed record is redone."""
    from softrank.fastpath.store.files import read_regular_file

    try:  # never a FIFO or a device (those would block or never end); the reader reports them
        return hashlib.sha256(read_regular_file(Path(folder) / "record.json")).hexdigest()
    except (OSError, ValueError):
        return ""


def _replay_folder(args: tuple[str, bool, tuple[int, ...]]) -> dict:
    """One record folder's journal payload: its rows, verdict rows, summary counts and error lines."""
    folder, strict, budgets = args
    fingerprint = _fingerprint(folder)
    try:
        record = read_record(folder)
    except InputError as err:
        line = err.one_line()
        return {"fingerprint": fingerprint, "rows": [malformed_row(Path(folder).name, line)],
                "verdicts": [], "counts": {}, "errors": [line], "malformed": True}
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one BLAS thread: the same sums on any machine, and no oversubscription
        t0 = time.perf_counter()
        result = replay_record(record, strict=strict)
        seconds = time.perf_counter() - t0
    rows, verdicts = result_rows(result, seconds, budgets)
    return dict(record_counts(result), fingerprint=fingerprint, rows=rows, verdicts=verdicts, malformed=False)


class ReplayJob(RecordsJob):
    """One replay of STORE into OUT: the records to do, the journal, and the final tables (kept
    in ``rows`` and ``verdicts`` after ``execute``)."""

    def __init__(self, store, out, *, strict: bool = False, budgets: tuple[int, ...] = DEFAULT_BUDGETS,
                 resume: bool = False, journal=None):
        self.store, self.strict, self.budgets = store, bool(strict), tuple(budgets)
        # entries that are not folders are replayed too: each is then a malformed record on one line
        folders = record_entries(store)
        if not folders:  # before OUT is touched: an empty run would replace OUT's tables
            raise InputError(str(store), "records", "no records in this store (nothing to replay; nothing was written)")
        # never the store itself, nor its records/ (that would add a record), nor an OUT that would hold it
        check_not_input(out, inside=[store_records(store)], equal=[(store, f"the input store {store}")],
                        writes=OUTPUTS + (JOURNAL,))
        self.out = output_folder(out)
        for name in OUTPUTS:  # the manifest first: from here on nothing here looks complete
            (self.out / name).unlink(missing_ok=True)
        params = {"store": str(Path(store).resolve()), "strict": self.strict, "budgets": list(self.budgets),
                  "softrank_version": __version__}
        # a journal folder the caller names (softrank.pipeline) is its to remove
        super().__init__(folders, Journal(journal or self.out / JOURNAL, params, resume=resume,
                                          keep=journal is not None))
        if resume:  # records still in the store, unchanged since they were replayed
            by_name = dict(zip(self.names(), self.folders))
            self.resume_from(lambda name, p: p.get("fingerprint") == _fingerprint(by_name[name]))
        self.rows: list[dict] = []
        self.verdicts: list[dict] = []

    def execute(self, *, jobs: int = 1, scheduler: str | None = None,
                progress: Callable[[int, int], None] | None = None) -> ReplaySummary:
        """Replay the records not yet done (journaling each as it finishes), then write the tables."""
        payloads = self.run(_replay_folder, lambda f: (f, self.strict, self.budgets), jobs=jobs, scheduler=scheduler,
                            progress=progress)
        return self._finish(payloads)

    def _finish(self, payloads: dict[str, dict]) -> ReplaySummary:
        """The tables in store order, then the manifest, then the journal is removed."""
        summary = ReplaySummary(records=self.total, resumed=self.resumed)
        rows, verdicts = self.rows, self.verdicts
        for name in self.names():
            payload = payloads[name]
            rows.extend(payload["rows"])
            verdicts.extend(payload["verdicts"])
            summary.merge(payload)
        meta = {"softrank_version": __version__, "strict": str(self.strict).lower(),
                "store": str(Path(self.store).resolve()),
                "bounds": "upper_bound rounded up (decimal); chi_upper rounded up (binary64)"}
        write_table(self.out / "replay", rows, REPLAY_COLUMNS, metadata=meta)
        write_table(self.out / "verdicts", verdicts, VERDICT_COLUMNS, metadata=meta)
        summary.out = str(self.out / "replay.parquet")
        files = {name: hashlib.sha256((self.out / name).read_bytes()).hexdigest() for name in OUTPUTS[1:]}
        write_json(self.out / "manifest.json", {
            "complete": True, "command": "softrank replay", "softrank_version": __version__,
            "store": meta["store"], "strict": self.strict, "budgets": list(self.budgets), "records": self.total,
            "replay_rows": len(rows), "verdict_rows": len(verdicts), "resumed": self.resumed,
            "sha256": files, "summary": summary.as_json()})
        self.journal.remove()
        return summary


def replay_store(store, out, *, strict: bool = False, jobs: int = 1, budgets: tuple[int, ...] = DEFAULT_BUDGETS,
                 progress: Callable[[int, int], None] | None = None, scheduler: str | None = None,
                 resume: bool = False) -> ReplaySummary:
    """Replay every record of STORE and write the tables into OUT. Malformed records are reported
    (``summary.errors``, one line each) and the others are still replayed and written."""
    job = ReplayJob(store, out, strict=strict, budgets=budgets, resume=resume)
    return job.execute(jobs=jobs, scheduler=scheduler, progress=progress)


__all__ = ["DEFAULT_BUDGETS", "FAIL_ON", "ReplayJob", "ReplaySummary", "record_counts", "replay_store"]
