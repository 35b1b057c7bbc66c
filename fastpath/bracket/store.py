"""Bracketing stored records: ``bracket_record`` brackets one record (``bracket_matrix``) and
rewrites it with ``RecordWriter.from_record`` (only the best witness per eps and the certificates
achieving max L are stored); ``bracket_task`` is that work for one record as plain data (its
table rows and the SHA-256 of the source and the written ``record.json``), with one BLAS thread;
``BracketJob`` does every record of a store through the runner (``fastpath/runner.py``: in this
process or on Dask), journaling each record as it is written (``OUT/.partial/``, ``--resume``),
and writes ``index.csv``, the summary table ``bracket.csv`` and ``bracket-manifest.json`` next to
``records/``.  ``bracket_store`` is that job from Python; ``softrank bracket`` (``cli/bracket.py``)
checks the paths and prints the summary.

Tolerances are ``softrank.replay.tolerance.Tolerance`` values (text such as ``"3/20"``, a
``Fraction``, or a Python float read as the decimal it prints as: 0.15 is 3/20), computed with
their nearest binary64 number and stored as their exact text.  In the rows ``eps`` is that float
and ``eps_text`` the exact text; ``bracket.csv`` prints ``eps`` as that text and ``eps_value`` as
the float."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from softrank import __version__
from softrank.replay.tolerance import Tolerance
from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS, DEFAULT_EPS, EpsBracket, Timer, bracket_matrix, resolved
from softrank.fastpath.capture.labels import record_label
from softrank.fastpath.lower.certificates import tail_lower
from softrank.fastpath.runner import Journal, RecordsJob
from softrank.fastpath.store.files import file_sha256, output_folder, special_manifest, write_csv, write_json
from softrank.fastpath.store.writer import RecordWriter, recover_store, write_index
from softrank.replay.reader import read_record, record_entries
from softrank.errors import InputError

PRODUCER = "softrank.fastpath.bracket 0.1"
JOURNAL = ".partial"
MANIFEST = "bracket-manifest.json"
COMPLETION = (MANIFEST, "bracket.csv")  # outputs that mark a finished run
OUTPUTS = ("records", "index.csv", "bracket.csv", MANIFEST, JOURNAL)  # what a run writes into OUT


def summary_row(record, b: EpsBracket, timer: Timer, seconds: float, tol: Tolerance) -> dict:
    """One row of ``bracket.csv``: the bracket at one eps, its baseline and the time per part."""
    prov = record.provenance
    m, n = record.shape
    row = {"record_id": record.record_id, "model": str(prov.get("model", "")),
           "family": record_label(prov), "layer": prov.get("layer"), "head": prov.get("head"),
           "m": m, "N": n, "eps": b.eps, "eps_text": tol.text,
           "lower": b.lower, "upper": b.upper,
           "lower_kind": "+".join(c.kind for c in b.certificates),
           "upper_construction": None if b.witness is None else b.witness.construction,
           "resolved": resolved(b.lower, b.upper, min(m, n)),
           "baseline_lower": b.baseline_lower, "baseline_upper": b.baseline_upper,
           "baseline_resolved": resolved(b.baseline_lower, b.baseline_upper, min(m, n)),
           "seconds": seconds}
    for name in ALL_CONSTRUCTIONS:
        row[f"rank_{name}"] = b.ranks.get(name)
    for name, ranks in b.failed.items():  # full mode only: the ranks each construction missed
        row[f"failed_{name}"] = " ".join(map(str, ranks))
    for kind in ("frobenius", "projected", "decoder"):
        row[f"lower_{kind}"] = b.lower_by_kind.get(kind)
    for name, s in timer.seconds.items():
        row[f"time_{name}"] = s
    return row


def bracket_record(folder, out_store, eps_list=DEFAULT_EPS, mode: str = "fast") -> list[dict]:
    """Bracket one stored record and write it (with its tolerances) into ``out_store``.
    Returns one summary row per eps."""
    return _bracket_and_write(folder, out_store, Tolerance.parse_list(eps_list), mode)[0]


def _bracket_and_write(folder, out_store, tolerances: list[Tolerance], mode: str) -> tuple[list[dict], Path]:
    """``bracket_record``'s rows and the folder of the written record."""
    t0 = time.perf_counter()
    record = read_record(folder)
    tolerances = sorted(tolerances)  # by exact value: their binary64 numbers are distinct (parse_list)
    timer = Timer()
    result = bracket_matrix(record.a_hat, [t.binary64 for t in tolerances], mode=mode, timer=timer)
    with RecordWriter.from_record(out_store, record, provenance_update={"bracketed_by": PRODUCER}) as writer:
        for t in tolerances:
            b = result[t.binary64]  # the float kernel's result at the tolerance's binary64 number
            upper = None if b.witness is None else (b.witness.X, b.witness.Y, b.witness.construction)
            writer.add_tolerance(t, upper=upper, lower=[c.as_record() for c in b.certificates],
                                 float64={"lower": b.lower, "upper": b.upper, "verdicts": b.verdicts})
    seconds = time.perf_counter() - t0
    rows = [summary_row(record, result[t.binary64], timer, seconds, t) for t in tolerances]
    return rows, Path(out_store) / "records" / record.record_id


def bracket_cost(folder, eps: float) -> float:
    """An estimate of the work of bracketing a record, for the order in which workers take them:
    m N (k + 1), k the least rank whose truncated SVD has Frobenius error <= eps (the ranks the
    searches work at; on the default panel its rank order matches the records' bracketing times
    with Spearman 0.84).  0 for a record that cannot be read (its worker reports it)."""
    try:
        A = read_record(folder).a_hat
        s = np.linalg.svd(A, compute_uv=False)
    except (InputError, OSError, ValueError, np.linalg.LinAlgError):
        return 0.0
    k, _ = tail_lower(s, eps * eps)  # the ranks whose truncation misses eps in Frobenius norm
    return float(A.shape[0] * A.shape[1] * (k + 1))


def bracket_task(args: tuple) -> dict:
    """One record, ``(folder, out_store, tolerances, mode)``, bracketed and written with one BLAS
    thread (scipy's too); returns plain data: ``record_id``, its table ``rows``, and the SHA-256
    of the source ``record.json`` before and of the written one after (``source_sha256``,
    ``written_sha256``); a malformed record gives no rows and its one-line ``error``."""
    folder, out_store, tolerances, mode = args
    import scipy.linalg  # noqa: F401  (loaded first, so that the limit reaches scipy's BLAS too)
    from threadpoolctl import threadpool_limits

    source = file_sha256(Path(folder) / "record.json")
    try:
        with threadpool_limits(limits=1):
            rows, written = _bracket_and_write(folder, out_store, list(tolerances), mode)
    except InputError as err:  # a malformed record: reported, and the others are still bracketed
        return _malformed(folder, err.one_line(), source)
    return {"record_id": written.name, "rows": rows, "source_sha256": source,
            "written_sha256": file_sha256(written / "record.json")}


def _malformed(folder, error: str, source: str = "") -> dict:
    return {"record_id": Path(folder).name, "rows": [], "error": error, "source_sha256": source, "written_sha256": ""}


def table_rows(rows: list[dict]) -> list[dict]:
    """Rows as ``bracket.csv`` prints them: ``eps`` the exact text, ``eps_value`` the float."""
    out = []
    for r in rows:
        row = {}
        for key, value in r.items():
            if key == "eps":
                row["eps"], row["eps_value"] = r.get("eps_text", value), value
            elif key != "eps_text":
                row[key] = value
        out.append(row)
    return out


def start_run(out_store) -> None:
    """Before a run writes into ``out_store``: undo what killed writers left, and remove the
    outputs that mark a finished run (so a partial output never looks complete)."""
    recover_store(out_store)
    for name in COMPLETION:
        (Path(out_store) / name).unlink(missing_ok=True)


def write_tables(out_store, rows: list[dict]) -> Path:
    """``index.csv`` and ``bracket.csv`` (rows sorted by record and eps); returns the table's path."""
    out_store = Path(out_store)
    rows = sorted(rows, key=lambda r: (r["record_id"], r["eps"]))
    write_index(out_store)
    return write_csv(out_store / "bracket.csv", table_rows(rows))


def special_manifest_error(folder: str) -> str | None:
    """The reader's one-line error when FOLDER/record.json exists but is not a regular file (a
    FIFO, a device, a folder): hashing it before reading would block or never end."""
    if not special_manifest(folder):  # a regular file, or one the reader reports at once in the worker
        return None
    try:
        read_record(folder)
    except InputError as err:
        return err.one_line()
    return f"{folder}: field 'record.json' not a regular file"


class BracketJob(RecordsJob):
    """One bracketing of STORE into OUT (default: in place): the records to do, the journal, and
    the final tables.  The caller checks that OUT is no input of the run (``cli/bracket.py``)."""

    def __init__(self, store, out=None, *, eps_list=DEFAULT_EPS, mode: str = "fast", resume: bool = False,
                 journal=None):
        self.store, self.mode = Path(store), mode
        self.eps = Tolerance.parse_list(eps_list)
        recover_store(self.store)  # a record a killed writer left in .old-ID-* is put back first
        # InputError if STORE is not a store; an entry that is not a folder is a malformed record (one line)
        folders = record_entries(self.store)
        if not folders:  # before OUT is touched: an empty run would replace OUT's tables
            raise InputError(str(store), "records", "no records in this store (nothing to bracket; "
                                                    "nothing was written)")
        self.out = output_folder(out) if out is not None else self.store
        self.in_place = self.out.resolve() == self.store.resolve()
        params = {"store": str(self.store.resolve()), "eps": [t.text for t in self.eps], "mode": mode,
                  "softrank_version": __version__}
        # other parameters: InputError; a journal folder the caller names (softrank.pipeline) is its to remove
        super().__init__(folders, Journal(journal or self.out / JOURNAL, params, resume=resume,
                                          keep=journal is not None))
        start_run(self.out)  # from here on nothing in OUT looks complete
        if resume:
            self.resume_from(self._unchanged)
        self.errors: list[str] = []  # one line per malformed record (not bracketed; exit code 2)

    def _unchanged(self, name: str, payload: dict) -> bool:
        """A journal entry whose written record is unchanged (and, with ``--out``, whose source is
        unchanged too)."""
        if not isinstance(payload.get("rows"), list):
            return False
        if payload.get("written_sha256") != file_sha256(self.out / "records" / name / "record.json"):
            return False
        return self.in_place or payload.get("source_sha256") == file_sha256(self.store / "records" / name /
                                                                             "record.json")

    def execute(self, *, jobs: int = 1, scheduler: str | None = None, progress=None) -> list[dict]:
        """Bracket the records not yet done (journaling each as it is written), then write the
        tables; returns the rows (sorted by record, then eps)."""
        payloads = dict(self.done)
        for f in self.folders:  # a FIFO or device as record.json: reported here, never opened by a worker
            error = None if Path(f).name in payloads else special_manifest_error(f)
            if error:
                payloads[Path(f).name] = _malformed(f, error)
        task = (str(self.out), tuple(self.eps), self.mode)
        small = min(t.binary64 for t in self.eps)
        payloads = self.run(bracket_task, lambda f: (f, *task), jobs=jobs, scheduler=scheduler, progress=progress,
                            payloads=payloads, journal_if=lambda p: not p.get("error"),
                            cost=lambda f: bracket_cost(f, small))
        return self._finish(payloads)

    def _finish(self, payloads: dict[str, dict]) -> list[dict]:
        """``index.csv``, ``bracket.csv``, then the manifest, then the journal is removed."""
        ordered = [payloads[name] for name in self.names()]
        rows = [row for p in ordered for row in p["rows"]]
        self.errors = [p["error"] for p in ordered if p.get("error")]
        table = write_tables(self.out, rows)
        write_json(self.out / MANIFEST, {
            "complete": True, "command": "softrank bracket", "softrank_version": __version__,
            "store": str(self.store.resolve()), "out": str(self.out.resolve()),
            "eps": [t.text for t in self.eps], "mode": self.mode, "records": self.total,
            "rows": len(rows), "resumed": self.resumed, "malformed": self.errors,
            "sha256": {"bracket.csv": file_sha256(table), "index.csv": file_sha256(self.out / "index.csv")}})
        self.journal.remove()
        return sorted(rows, key=lambda r: (r["record_id"], r["eps"]))


def bracket_store(store, out_store=None, eps_list=DEFAULT_EPS, jobs: int = 1, mode: str = "fast",
                  progress=None, scheduler: str | None = None, resume: bool = False) -> list[dict]:
    """Bracket every record of ``store`` (into ``out_store``, default in place) with ``jobs``
    workers (``BracketJob``); returns the summary rows.  ``progress(done, total)`` is called
    after each record."""
    job = BracketJob(store, out_store, eps_list=eps_list, mode=mode, resume=resume)
    return job.execute(jobs=jobs, scheduler=scheduler, progress=progress)
