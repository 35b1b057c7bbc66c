"""Tightening the records of a store (``softrank tighten``): ``tighten_store`` tightens the chosen
records (``fastpath/tighten/records.py``) and copies the others unchanged into a new store, through
the runner (``fastpath/runner.py``: in this process or on Dask), then writes ``tighten.csv`` (one
row per record and tolerance tried) and ``index.csv``.  A record that cannot be read is reported on
one line and not written."""

from __future__ import annotations

import json
from pathlib import Path

from softrank.replay.tolerance import Tolerance
from softrank.fastpath.runner import RecordsJob
from softrank.fastpath.store.files import read_regular_file, write_csv
from softrank.fastpath.store.writer import write_index
from softrank.fastpath.tighten.records import DEFAULT_SETTINGS, copy_record, tighten_record
from softrank.fastpath.upper.minimax import DescentSettings
from softrank.replay.reader import MANIFEST_BYTES, record_entries
from softrank.errors import InputError

TABLE = "tighten.csv"
FIELDS = ["record_id", "model", "eps", "eps_value", "lower_before", "upper_before", "lower_after", "upper_after",
          "resolved_before", "resolved_after", "upper_construction", "seconds_upper", "seconds_lower", "seconds"]


def stored_eps(folders) -> set[float]:
    """The nearest binary64 numbers of the tolerances stored in the records' manifests (read as
    JSON only; ``read_record`` checks every field when a record is tightened)."""
    out: set[float] = set()
    for f in folders:
        try:
            doc = json.loads(read_regular_file(Path(f) / "record.json", MANIFEST_BYTES).decode("utf-8"))
            for t in doc.get("tolerances", []):
                out.add(Tolerance.from_record(t.get("eps")).binary64)
        except (OSError, ValueError, TypeError, AttributeError, ZeroDivisionError, InputError):
            continue  # read_record reports the defect with its field when the record is read
    return out


def check_selection(store, eps_list=None, records=None) -> None:
    """``InputError`` unless every id of ``records`` is a record of ``store`` and every tolerance
    of ``eps_list`` is stored in some record (an entry of ``records/`` that is not a folder counts
    as a record: it is reported as malformed when it is read)."""
    folders = record_entries(store)
    if records is not None:
        known = {f.name for f in folders}
        missing = [r for r in records if r not in known]
        if missing:
            raise InputError(str(store), "records", f"no record {missing[0]!r} in this store")
    if eps_list is not None:
        have = stored_eps(folders if records is None else [f for f in folders if f.name in records])
        absent = [t for t in map(Tolerance.parse, eps_list) if t.binary64 not in have]
        if absent:
            raise InputError(str(store), "eps", f"no record stores the tolerance {absent[0].value}")


def tighten_task(args: tuple) -> dict:
    """One record, ``(folder, out_store, eps_list, budget_seconds, only_unresolved, settings,
    lower_goal, tighten)``: tightened (or, with ``tighten`` false, copied) into ``out_store`` with
    one BLAS thread; returns plain data, ``record_id`` and its table ``rows``, and for a record
    that cannot be read (or copied) its one-line ``error``; such a record is not written to
    ``out_store``."""
    folder, out_store, eps_list, budget_seconds, only_unresolved, settings, lower_goal, tighten = args
    import scipy.linalg  # noqa: F401  (loaded first, so that the limit reaches scipy's BLAS too)
    from threadpoolctl import threadpool_limits

    try:
        if not tighten:
            copy_record(folder, out_store)
            return {"record_id": Path(folder).name, "rows": []}
        with threadpool_limits(limits=1):
            rows = tighten_record(folder, out_store, eps_list, budget_seconds, only_unresolved, settings, lower_goal)
    except InputError as err:  # a malformed record: reported and not written; the others go on
        return {"record_id": Path(folder).name, "rows": [], "error": err.one_line()}
    return {"record_id": Path(folder).name, "rows": rows}


def tighten_store(store, out_store, eps_list=None, budget_seconds: float = 120.0, only_unresolved: bool = False,
                  records=None, progress=None, settings: DescentSettings = DEFAULT_SETTINGS,
                  lower_goal: str = "resolve", jobs: int = 1, scheduler: str | None = None,
                  errors: list | None = None) -> list[dict]:
    """Tighten the records of ``store`` (``records``: ids to tighten, None: all; the others are
    copied unchanged) into ``out_store`` with ``jobs`` workers (or on the Dask ``scheduler``);
    writes ``tighten.csv`` and ``index.csv`` there and returns the table rows (in store order).
    ``progress(done, total)`` is called after each record; the one-line error of each record that
    could not be read (an entry of ``records/`` that is not a folder among them) is appended to
    ``errors``."""
    job = RecordsJob(record_entries(store))
    check_selection(store, eps_list, records)
    eps_list = None if eps_list is None else [Tolerance.parse(e) for e in eps_list]
    task = (str(out_store), eps_list, budget_seconds, only_unresolved, settings, lower_goal)
    payloads = job.run(tighten_task, lambda f: (f, *task, records is None or Path(f).name in records),
                       jobs=jobs, scheduler=scheduler, progress=progress)
    results = [payloads[name] for name in job.names()]
    rows = [row for p in results for row in p["rows"]]
    if errors is not None:
        errors.extend(p["error"] for p in results if p.get("error"))
    write_index(out_store)
    write_csv(Path(out_store) / TABLE, rows, FIELDS)
    return rows
