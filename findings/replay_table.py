"""The tables of ``softrank replay``, in one place: their schema (``REPLAY_COLUMNS``,
``VERDICT_COLUMNS``: written by ``softrank.findings.replay_rows``) and the reading back of
``replay.parquet`` and ``verdicts.parquet``: one check of the file and of every row, shared by
``softrank regress``, ``softrank report`` and ``softrank study kappa``.  A damaged or foreign table
(a value of another type, NaN or infinite, out of range, validated lower > upper, an unknown status
or verdict, a list that is not valid JSON) and anything but a regular file in its place (a FIFO, a
device, a folder, a link loop) is an ``InputError`` naming the file, the row, its record and the
column.  Untrusted: nothing here decides a verdict.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pyarrow as pa

from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

INT64_MAX = 2**63 - 1
# what ``softrank replay`` writes into its folder: the inputs of report, regress and study kappa
REPLAY_FILES = ("manifest.json", "replay.parquet", "replay.csv", "verdicts.parquet", "verdicts.csv")

# the schema, derived from the row dataclasses of ``softrank.findings.replay_rows``
from softrank.findings.replay_rows import LOWER_OUTCOME, LOWER_OUTCOME_FIELDS, REPLAY_COLUMNS, VERDICT_COLUMNS  # noqa: E402,F401


REPLAY_STATUSES = ("ok", "contradiction", "malformed")
VERDICT_VALUES = ("feasible", "impossible", "unresolved")
OUTCOME_VALUES = ("proved", "refuted", "unresolved")
# the columns every reader of the tables relies on
REQUIRED = {"replay.parquet": ("record_id", "status", "family", "m", "N", "eps"),
            "verdicts.parquet": ("record_id", "family", "eps", "k", "float64_verdict", "validated_verdict")}
# the schema's columns by the check they get (the others are checked one by one in check_replay_row)
_TEXT_COLUMNS = tuple(name for name, kind in REPLAY_COLUMNS if kind == pa.string()
                      and name not in ("record_id", "status", "eps", "upper_outcome", "upper_bound"))
_COUNT_COLUMNS = ("float64_lower", "float64_upper", "validated_lower", "validated_upper", "upper_rank")
_BOUND = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,5})?")


class _Bad(Exception):
    """One cell that is not what ``softrank replay`` writes: why (the column is named by the caller)."""


def read_parquet_rows(folder, name: str) -> tuple[list[str], list[dict]]:
    """The column names and rows of FOLDER/NAME, a parquet table.  Anything else there (nothing, a
    folder, a FIFO or device, a link loop, an unreadable or corrupt file) is an ``InputError``
    naming the folder and the file; it is read by the one safe reader (``read_regular_file``:
    checked on the open file), so a FIFO or device is never read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from softrank.replay.reader import read_regular_file

    folder = Path(folder)
    path = folder / name
    try:
        raw = read_regular_file(path)
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
        raise InputError(str(folder), name, _not_a_table(path, err)) from None
    try:
        table = pq.read_table(pa.BufferReader(raw))
        rows = table.to_pylist()
    except Exception as err:  # pyarrow raises several types for a corrupt file
        raise InputError(str(folder), name, f"not a readable parquet table ({type(err).__name__})") from None
    return table.column_names, rows


def _not_a_table(path: Path, err: Exception) -> str:
    """Why ``read_regular_file`` refused PATH, in words (a description only: nothing more is read)."""
    import errno
    import os
    import stat

    code = getattr(err, "errno", None)
    if code == errno.ELOOP:
        return "a symbolic link loop, not a table"
    if os.path.islink(path) and not os.path.exists(path):
        return f"a symbolic link to nothing ({os.readlink(path)}), not a table"
    if code == errno.ENOENT:
        return "missing (run `softrank replay STORE --out DIR` first)"
    if code != errno.EINVAL:
        return f"cannot read: {getattr(err, 'strerror', None) or err}"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    kind = next((what for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                                         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                                         (stat.S_ISSOCK, "a socket")) if test(mode)), "a special file")
    link = f" (through a symbolic link to {os.readlink(path)})" if os.path.islink(path) else ""
    return f"not a regular file: {kind}{link}"


def read_replay_table(folder, name: str) -> list[dict]:
    """The rows of ``replay.parquet`` or ``verdicts.parquet`` in FOLDER (``read_parquet_rows``),
    each checked and normalised by ``check_table_rows``."""
    columns, rows = read_parquet_rows(folder, name)
    check_table_rows(Path(folder) / name, name, columns, rows)
    return rows


def check_table_rows(path, name: str, columns: list[str], rows: list[dict]) -> None:
    """A table written by ``softrank replay``: the required columns, then every row
    (``check_replay_row`` or ``check_verdict_row``).  Anything else is an ``InputError`` naming the
    file, the row, its record and the column (a tampered or foreign table, not a replay's)."""
    missing = [c for c in REQUIRED.get(name, ()) if c not in columns]
    if missing:
        raise InputError(str(path), missing[0], f"column missing (not a table of softrank replay; "
                                                f"missing: {', '.join(missing)})")
    check = check_verdict_row if name == "verdicts.parquet" else check_replay_row
    for i, row in enumerate(rows):
        check(path, i, row)


def _where(i: int, row: dict, column: str) -> str:
    rid = row.get("record_id")
    record = f" (record {rid[:60]})" if isinstance(rid, str) and rid and column != "record_id" else ""
    return f"row {i}{record} {column}"


def _fail(path, i: int, row: dict, column: str, what: str):
    raise InputError(str(path), _where(i, row, column), f"{what}, got {str(row.get(column))[:60]!r}")


def _int_cell(v, minimum: int | None = None):
    """An integer (an integral binary64 such as 3.0, as a table rewritten through NaN holds, is read
    as that integer), >= ``minimum``; ``None`` stays ``None``."""
    if v is None:
        return None
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or not -INT64_MAX - 1 <= v <= INT64_MAX:
        raise _Bad("expected an integer" + (f" >= {minimum}" if minimum is not None else ""))
    if minimum is not None and v < minimum:
        raise _Bad(f"expected an integer >= {minimum}")
    return v


def _float_cell(v, allow_inf: bool = False):
    """A number >= 0 (NaN never; +inf only when ``allow_inf``); ``None`` stays ``None``."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0 or (v == math.inf and not allow_inf):
        raise _Bad("expected a number >= 0" + ("" if allow_inf else " (finite)"))
    return float(v)


def _text_cell(v):
    if v is not None and not isinstance(v, str):
        raise _Bad("expected text")
    return v


def _json_cell(v, item):
    """A list cell (parquet), or its JSON text (the CSV form); each item checked by ``item``."""
    if v is None:
        return None
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except (ValueError, RecursionError):
            raise _Bad("not valid JSON") from None
        if v is None:
            return None
    if not isinstance(v, list):
        raise _Bad("expected a list")
    return [item(x) for x in v]


def _position(v):
    return _int_cell(v, 0) if v is not None else _raise("expected a list of integers >= 0")


def _assumption(v):
    return v if isinstance(v, str) else _raise("expected a list of texts")


def _lower_outcome(v):
    if not isinstance(v, dict) or not isinstance(v.get("kind"), str) or v.get("outcome") not in OUTCOME_VALUES:
        _raise(f"expected a list of {{kind, claimed, outcome ({', '.join(OUTCOME_VALUES)}), ...}}")
    out = {name: v.get(name) for name in LOWER_OUTCOME_FIELDS}
    try:
        out["claimed"] = _int_cell(out["claimed"], 0)
    except _Bad:
        _raise("expected a claimed rank >= 0 in every lower outcome")
    if any(out[k] is not None and not isinstance(out[k], str) for k in ("route", "value", "lemma", "reason")):
        _raise("expected text for route, value, lemma and reason")
    return out


def _raise(what: str):
    raise _Bad(what)


def _table_tolerance(v) -> Tolerance:
    """An ``eps`` cell of a table file read back, as the table printed it (``Tolerance.from_table``),
    in (0, 1); else ``_Bad``."""
    # a long text or a huge exponent ("1e-999999999") would take ages to read as a rational
    plain = isinstance(v, str) and len(v) <= 400 and not re.search(r"[eE][+-]?0*\d{5,}", v)
    try:
        tol = Tolerance.from_table(v) if plain else None
    except InputError:
        tol = None
    if tol is None or not 0 < tol.value < 1:
        raise _Bad("expected a tolerance in (0, 1)")
    return tol


def _tolerance(v):
    _table_tolerance(v)
    return v


def _cells(path, i: int, row: dict, checks: dict) -> None:
    """Apply each column's check to the row's cell (columns the table lacks are skipped)."""
    for column, check in checks.items():
        if column in row:
            try:
                row[column] = check(row[column])
            except _Bad as why:
                _fail(path, i, row, column, str(why))


def check_replay_row(path, i: int, row: dict) -> dict:
    """One row of ``replay.parquet``, checked and normalised in place: a record id; a known status;
    text, integer, number and list cells of the written types (lists also as their JSON text); and,
    unless the record was malformed, a tolerance, a positive shape and validated ends
    0 <= lower <= upper with lower <= min(m, N).  Columns the table lacks are not required here."""
    if not isinstance(row.get("record_id"), str) or not row["record_id"]:
        _fail(path, i, row, "record_id", "expected a record id")
    if "status" in row and row["status"] not in REPLAY_STATUSES:
        _fail(path, i, row, "status", f"expected one of {', '.join(REPLAY_STATUSES)}")
    checks = {c: _text_cell for c in _TEXT_COLUMNS}
    checks.update({c: (lambda v: _int_cell(v, 0)) for c in _COUNT_COLUMNS})
    checks.update(layer=_int_cell, head=_int_cell, block_width=lambda v: _int_cell(v, 1),
                  m=lambda v: _int_cell(v, 1), N=lambda v: _int_cell(v, 1),
                  chi_upper=lambda v: _float_cell(v, allow_inf=True), chi=lambda v: _float_cell(v, allow_inf=True),
                  seconds=_float_cell, positions=lambda v: _json_cell(v, _position),
                  assumptions=lambda v: _json_cell(v, _assumption),
                  lower_outcomes=lambda v: _json_cell(v, _lower_outcome), upper_bound=_upper_bound,
                  upper_outcome=lambda v: v if v is None or v in OUTCOME_VALUES else _raise(
                      f"expected one of {', '.join(OUTCOME_VALUES)} or null"))
    _cells(path, i, row, checks)
    if row.get("status") == "malformed":
        return row
    _cells(path, i, row, {"eps": _tolerance})
    if "eps_value" in row and row["eps_value"] is not None:
        v = row["eps_value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            _fail(path, i, row, "eps_value", "expected a number in (0, 1)")
        if isinstance(row.get("eps"), str) and _table_tolerance(row["eps"]).binary64 != v:
            _fail(path, i, row, "eps_value", f"disagrees with eps {row['eps'][:40]}")
    for column in ("m", "N"):
        if column in row and row[column] is None:
            _fail(path, i, row, column, "expected a positive integer")
    lower, upper = row.get("validated_lower"), row.get("validated_upper")
    if lower is not None and upper is not None and lower > upper:
        _fail(path, i, row, "validated_lower", f"exceeds validated_upper {upper} (a replay never writes L > U)")
    if lower is not None and row.get("m") is not None and row.get("N") is not None and lower > min(row["m"], row["N"]):
        _fail(path, i, row, "validated_lower", f"exceeds the full rank min(m, N) = {min(row['m'], row['N'])}")
    return row


def _upper_bound(v):
    """The certified bound: a decimal number (or ``inf``, an unbounded ball), or null or empty."""
    if v is None or v in ("", "inf"):
        return v
    if not isinstance(v, str) or not _BOUND.fullmatch(v):
        raise _Bad("expected a decimal bound")
    return v


def check_verdict_row(path, i: int, row: dict) -> dict:
    """One row of ``verdicts.parquet``, checked and normalised in place: a record id, a tolerance, a
    budget k >= 0, a block width >= 1 or null, and known verdicts (``error``: no validated verdict
    at a contradiction)."""
    if not isinstance(row.get("record_id"), str) or not row["record_id"]:
        _fail(path, i, row, "record_id", "expected a record id")
    _cells(path, i, row, {"family": _text_cell, "block_width": lambda v: _int_cell(v, 1), "eps": _tolerance,
                          "k": lambda v: _int_cell(v, 0) if v is not None else _raise("expected a budget >= 0")})
    for column, allowed in (("float64_verdict", VERDICT_VALUES), ("validated_verdict", VERDICT_VALUES + ("error",))):
        if row.get(column) not in (*allowed, "", None):
            _fail(path, i, row, column, f"expected one of {', '.join(allowed)}, empty or null")
    return row
