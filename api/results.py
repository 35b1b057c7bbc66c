"""Validated results of many records as one table, and the HTML report, from Python (docs/python.md).

- :func:`results` replays records (in memory, a :class:`~softrank.api.store.Store`, a store folder)
  with the trusted checker, as ``softrank replay`` does, or reads the tables a replay wrote, and
  returns :class:`Results`: one row per (record, eps) with the columns of ``replay.parquet`` and
  one row per (record, eps, budget k) with those of ``verdicts.parquet``.
- :func:`report` writes the self-contained HTML page of ``softrank report`` from a
  :class:`Results` or a replay folder.

The rows are built by the code that builds those of ``softrank replay`` (the results room,
``softrank.findings``: ``result_rows``), so ``Results.to_arrow()`` of a store and ``replay.parquet``
of ``softrank replay`` of that store hold the same values (the ``seconds`` column apart).  Nothing here decides anything: the verdicts are the engine's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from softrank.replay import record as core
from softrank.errors import InputError

DEFAULT_BUDGETS = (8, 16, 32)
IN_MEMORY = "(in memory: softrank.results)"


def _tables():
    """The replay tables' schema and row builder (the results room's, ``softrank.findings.replay_rows``)."""
    from softrank.findings.replay_rows import REPLAY_COLUMNS, VERDICT_COLUMNS, result_rows

    return REPLAY_COLUMNS, VERDICT_COLUMNS, result_rows


class Results:
    """Validated results of many records.

    ``rows``: one dict per (record, eps) with every column of ``replay.parquet`` (``record_id``,
    ``status``, ``model``, ``family``, ``attention``, ``source_id``, ``layer``, ``head``,
    ``block_width``, ``m``, ``N``, ``eps``, ``eps_value``, ``float64_lower``, ``float64_upper``,
    ``validated_lower``, ``validated_upper``, ``chi_upper``, the witness's ``upper_*`` columns,
    ``lower_kind``, ``lower_outcomes``, ``assumptions``, ``seconds``; absent values are None);
    ``verdicts``: one dict per (record, eps, budget k) with the columns of ``verdicts.parquet``.
    ``len(results)`` and iteration are over ``rows``."""

    def __init__(self, rows: list[dict], verdicts: list[dict], *, source: str = IN_MEMORY,
                 metadata: dict | None = None):
        replay_columns, verdict_columns, _ = _tables()
        self.rows = [{name: row.get(name, row.get("chi") if name == "chi_upper" else None) for name, _ in replay_columns}
                     for row in rows]  # (older tables named chi_upper chi)
        self.verdicts = [{name: v.get(name) for name, _ in verdict_columns} for v in verdicts]
        self.source = source
        self.metadata = dict(metadata or {})

    def __repr__(self) -> str:
        records = len({r["record_id"] for r in self.rows})
        return f"<Results: {records} records, {len(self.rows)} rows, {len(self.verdicts)} verdicts; {self.source}>"

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    @property
    def columns(self) -> list[str]:
        """The columns of ``rows``, in the order of ``replay.parquet``."""
        return [name for name, _ in _tables()[0]]

    def to_arrow(self, verdicts: bool = False):
        """The rows (``verdicts=True``: the verdict rows) as a ``pyarrow.Table`` with the typed
        schema of ``replay.parquet`` (``verdicts.parquet``) and its metadata."""
        import pyarrow as pa

        replay_columns, verdict_columns, _ = _tables()
        columns, rows = (verdict_columns, self.verdicts) if verdicts else (replay_columns, self.rows)
        meta = {k: str(v) for k, v in self.metadata.items()} or None
        return pa.table({name: [r.get(name) for r in rows] for name, _ in columns},
                        schema=pa.schema(columns, metadata=meta))

    def to_pandas(self, verdicts: bool = False):
        """``to_arrow(verdicts).to_pandas()``; needs pandas (an ``ImportError`` naming it otherwise)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise ImportError("Results.to_pandas() needs pandas, which is not installed: pip install pandas "
                              "(or use Results.to_arrow(), or Results.rows)") from None
        return self.to_arrow(verdicts).to_pandas()

    def summary(self) -> list[dict]:
        """Per family and eps (the report's table): ``support`` ("causal" for a decoder's native
        operators, else "full"; a family per attention kind), operators, median L, median U, median U/L,
        ``resolved`` (count) and ``resolved_share`` by the one criterion of the results table
        (U <= 2L, or U - L <= 2, or U - L <= min(m, N)/10, with a proved witness), ``closed_share``."""
        from softrank.findings.report_figures import family_summary

        return family_summary(self.rows)

    def write(self, folder) -> Path:
        """``replay.parquet``/``.csv`` and ``verdicts.parquet``/``.csv`` in FOLDER, as ``softrank
        replay --out FOLDER`` writes them (``softrank report FOLDER`` reads them); returns FOLDER."""
        from softrank.fastpath.store.files import output_folder as output_dir
        from softrank.findings.tables import write_table

        replay_columns, verdict_columns, _ = _tables()
        out = output_dir(folder)
        meta = {k: str(v) for k, v in self.metadata.items()}
        write_table(out / "replay", self.rows, replay_columns, metadata=meta)
        write_table(out / "verdicts", self.verdicts, verdict_columns, metadata=meta)
        return out

    @classmethod
    def read(cls, folder) -> Results:
        """The tables ``softrank replay`` wrote into FOLDER, every row checked as ``softrank report``
        checks it (a damaged table is an ``InputError`` naming the file, row and column)."""
        from softrank.findings.replay_table import read_replay_table
        from softrank.findings.tables import table_metadata

        folder = Path(folder)
        rows, verdicts = read_replay_table(folder, "replay.parquet"), read_replay_table(folder, "verdicts.parquet")
        return cls(rows, verdicts, source=str(folder), metadata=table_metadata(folder / "replay.parquet"))


def _replay(record: core.Record, strict: bool, budgets: tuple[int, ...], checked: bool) -> tuple[list, list]:
    """One record's rows and verdict rows (in-memory records first get the store reader's checks)."""
    from threadpoolctl import threadpool_limits

    from softrank.api.checks import check_record
    from softrank.replay.engine import replay_record

    if not checked:
        check_record(record)
    with threadpool_limits(limits=1):  # one BLAS thread, as softrank replay: the same sums everywhere
        t0 = time.perf_counter()
        result = replay_record(record, strict=strict)
        seconds = time.perf_counter() - t0
    return _tables()[2](result, seconds, budgets)


def _malformed(record_id: str, err: InputError) -> list[dict]:
    from softrank.findings.replay_rows import malformed_row

    return [malformed_row(record_id, err.one_line())]


def _store_folders(path: Path) -> list[Path]:
    from softrank.replay.reader import record_entries

    folders = list(record_entries(path))
    if not folders:
        raise InputError(str(path), "records", "no records in this store (nothing to replay)")
    return folders


def results(source, *, strict: bool = False, budgets: Iterable[int] = DEFAULT_BUDGETS) -> Results:
    """Validated results of ``source``, replayed by the trusted checker (``softrank replay``'s rows):

    - a :class:`Results` is returned as it is;
    - a folder holding ``replay.parquet`` (the output of ``softrank replay``) is read, not replayed;
    - a :class:`Store`, or a store folder (``records/``), is replayed record by record; a record
      the reader refuses is one ``malformed`` row naming the field, and the others are replayed;
    - a record, or an iterable of records (and stores), is replayed in memory.

    ``strict``: Arb balls throughout; ``budgets``: the rank budgets k of the verdict rows."""
    from softrank.api.store import Store

    if isinstance(source, Results):
        return source
    budgets = tuple(int(k) for k in budgets)
    if any(k < 0 for k in budgets):
        raise InputError("arguments", "budgets", f"budgets must be integers >= 0, got {list(budgets)}")
    meta = {"softrank_version": _version(), "strict": str(bool(strict)).lower()}
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if (path / "replay.parquet").exists() and not (path / "records").is_dir():
            return Results.read(path)
        if not (path / "records").is_dir():
            raise InputError(str(path), "", "neither a store (records/) nor a replay folder (replay.parquet)")
        source = Store(path)
    items = [source] if isinstance(source, (core.Record, Store)) else list(source)
    rows: list[dict] = []
    verdicts: list[dict] = []
    stores = []
    for item in items:
        if isinstance(item, Store):
            stores.append(str(item.path.resolve()))
            for folder in _store_folders(item.path):
                from softrank.replay.reader import read_record

                try:
                    record = read_record(folder)
                except InputError as err:
                    rows += _malformed(folder.name, err)
                    continue
                more, vs = _replay(record, strict, budgets, checked=True)
                rows += more
                verdicts += vs
        elif isinstance(item, core.Record):
            more, vs = _replay(item, strict, budgets, checked=False)
            rows += more
            verdicts += vs
        else:
            raise InputError("arguments", "source", f"expected a record, a Store, a store or replay folder, or an "
                                                    f"iterable of records, got {type(item).__name__}")
    if stores:
        meta["store"] = stores[0] if len(stores) == 1 else ", ".join(stores)
    return Results(rows, verdicts, source=meta.get("store", IN_MEMORY), metadata=meta)


def report(source, out="report.html", figures=None) -> Path:
    """The HTML page of ``softrank report`` (self-contained: figures as data URIs) at OUT, from a
    :class:`Results`, a replay folder, or anything :func:`results` takes (replayed first);
    ``figures``: also write every figure as ``FIGURES/NAME.png``.  Returns the path of the page."""
    from softrank.findings.report import write_report, write_report_data

    if isinstance(source, (str, os.PathLike)) and (Path(source) / "replay.parquet").exists() \
            and not (Path(source) / "records").is_dir():
        return write_report(source, out, figures=figures)
    res = results(source)
    return write_report_data(res.rows, res.verdicts, out, figures=figures, folder=IN_MEMORY, meta=res.metadata)


def _version() -> str:
    from softrank import __version__

    return __version__
