"""The replay's tables: one typed row per (record, eps) (``ReplayRow``) and one per (record, eps,
budget k) (``VerdictRow``), built from the engine's typed results (``softrank.replay.engine``);
nothing is decided here.  The parquet schema (``REPLAY_COLUMNS``, ``VERDICT_COLUMNS``) is derived
from the row dataclasses' fields and types (``columns``); the tables are read back and checked by
``softrank.findings.replay_table``.

Numbers that are bounds never overstate: ``upper_bound`` is the proved bound on
``||A - X Y^T||_inf`` as a decimal rounded up, ``chi_upper`` a binary64 number >= the proved bound
on ``||A - A_hat||_inf``.  ``eps`` is printed exactly: a tolerance written as text (``"0.1"``,
``"3/20"``) is that rational and prints as written; one written as a JSON number is a binary64
number and prints ``binary64(0.1)`` unless its shortest text is already exact (``0.25``): the
record's ``Tolerance`` (``softrank.replay.tolerance``), as the reader built it, prints itself.
"""

from __future__ import annotations

import dataclasses
import types
import typing

import pyarrow as pa

from softrank.fastpath.capture.labels import record_label
from softrank.replay.engine import RecordResult
from softrank.validated.balls import float_at_least


def _row_class(name: str, doc: str, fields: dict):
    """A row dataclass: each field of ``fields`` (name -> type) is ``type | None``, default None."""
    return dataclasses.make_dataclass(name, [(f, t | None, dataclasses.field(default=None)) for f, t in fields.items()],
                                      namespace={"__doc__": doc, "__module__": __name__})


LowerOutcome = _row_class(
    "LowerOutcome", "One lower certificate's check, a struct in the ``lower_outcomes`` list of a replay row.",
    {"kind": str, "claimed": int, "outcome": str, "route": str, "value": str, "lemma": str, "reason": str})

ReplayRow = _row_class(
    "ReplayRow", "One row of ``replay.parquet``: a record at one eps (a malformed record: one row, its error).",
    {"record_id": str, "status": str, "error": str, "model": str, "family": str, "attention": str, "source_id": str,
     "layer": int, "head": int, "block_width": int, "positions": list[int], "m": int, "N": int,
     "eps": str, "eps_value": float, "float64_lower": int, "float64_upper": int,
     "validated_lower": int, "validated_upper": int, "chi_upper": float,
     "upper_rank": int, "upper_construction": str, "upper_outcome": str, "upper_route": str, "upper_bound": str,
     "upper_lemma": str, "upper_reason": str, "lower_kind": str, "lower_outcomes": list[LowerOutcome],
     "assumptions": list[str], "seconds": float})

VerdictRow = _row_class(
    "VerdictRow", "One row of ``verdicts.parquet``: the float64 and the validated verdict at budget k.",
    {"record_id": str, "family": str, "block_width": int, "eps": str, "k": int, "float64_verdict": str,
     "validated_verdict": str})


_ARROW = {int: pa.int64(), str: pa.string(), float: pa.float64(), bool: pa.bool_()}


def arrow_type(hint) -> pa.DataType:
    """The arrow type of a row field's annotation: ``X | None`` is X (every column is nullable),
    ``list[X]`` a list, a row dataclass a struct of its fields."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return arrow_type(args[0]) if len(args) == 1 else _unsupported(hint)
    if typing.get_origin(hint) is list:
        return pa.list_(arrow_type(args[0]))
    if dataclasses.is_dataclass(hint):
        return pa.struct(columns(hint))
    return _ARROW[hint] if hint in _ARROW else _unsupported(hint)


def _unsupported(hint):
    raise TypeError(f"no arrow type for the row field type {hint!r}")


def columns(row_class) -> list[tuple[str, pa.DataType]]:
    """``(name, arrow type)`` of each field of a row dataclass, in order: a table's schema."""
    hints = typing.get_type_hints(row_class)
    return [(f.name, arrow_type(hints[f.name])) for f in dataclasses.fields(row_class)]


LOWER_OUTCOME = arrow_type(LowerOutcome)
LOWER_OUTCOME_FIELDS = tuple(f.name for f in dataclasses.fields(LowerOutcome))
REPLAY_COLUMNS = columns(ReplayRow)
VERDICT_COLUMNS = columns(VerdictRow)
DEFAULT_BUDGETS = (8, 16, 32)
INT64_MAX = 2**63 - 1


def _int64(v):
    ok = isinstance(v, int) and not isinstance(v, bool) and -INT64_MAX - 1 <= v <= INT64_MAX
    return v if ok else None


def _positive(v):  # a block width: what the readers of the tables accept (check_replay_row)
    v = _int64(v)
    return v if v is not None and v >= 1 else None


def _text(v) -> str | None:
    return None if v is None else str(v)


def _positions(v):
    if isinstance(v, list) and all(_int64(x) is not None for x in v):
        return v
    return None


def _base(record) -> dict:
    prov = record.provenance
    m, n = record.shape
    return {"record_id": record.record_id, "status": "ok", "error": "", "model": str(prov.get("model", "")),
            "family": record_label(prov), "attention": _text(prov.get("attention")),
            "source_id": _text(prov.get("source_id")), "layer": _int64(prov.get("layer")),
            "head": _int64(prov.get("head")), "block_width": _positive(prov.get("block_width")),
            "positions": _positions(prov.get("positions")), "m": m, "N": n}


def result_rows(result: RecordResult, seconds: float,
                budgets: tuple[int, ...] = DEFAULT_BUDGETS) -> tuple[list[dict], list[dict]]:
    """The replay rows and verdict rows (as dicts, the columns in order) of one record's typed result."""
    record = result.record
    base = _base(record)
    chi = None if result.chi is None else float_at_least(result.chi)
    rows, verdicts = [], []
    for tol, t in zip(record.tolerances, result.tolerances):
        eps = t.tolerance.text
        row = ReplayRow(**base, eps=eps, eps_value=t.tolerance.binary64, float64_lower=tol.float64_lower,
                        float64_upper=tol.float64_upper, chi_upper=chi, seconds=seconds,
                        validated_lower=t.validated_lower, validated_upper=t.validated_upper, lower_kind=t.lower_kind,
                        lower_outcomes=[LowerOutcome(kind=lr.kind, claimed=_int64(lr.claimed),
                                                     outcome=lr.check.outcome.value, route=lr.check.route or None,
                                                     value=lr.check.value or None, lemma=lr.check.lemma or None,
                                                     reason=lr.check.reason or None)
                                        for lr in t.lowers],
                        assumptions=list(t.assumptions))
        if t.contradiction:
            row.status, row.error = "contradiction", t.contradiction
        if tol.upper is not None:
            row.upper_rank, row.upper_construction = tol.upper.rank, tol.upper.construction
            row.upper_outcome, row.upper_route = t.upper.outcome.value, t.upper.route or None
            row.upper_bound, row.upper_lemma, row.upper_reason = t.upper.value or None, t.upper.lemma or None, t.upper.reason
        rows.append(dataclasses.asdict(row))
        for k in sorted(set(budgets) | set(tol.float64_verdicts)):
            verdicts.append(dataclasses.asdict(VerdictRow(
                record_id=record.record_id, family=base["family"], block_width=base["block_width"], eps=eps, k=k,
                float64_verdict=tol.float64_verdicts.get(k, ""), validated_verdict=t.verdict(k))))
    return rows, verdicts


def malformed_row(record_id: str, error: str) -> dict:
    """The one row of a record the reader refused: its id, status ``malformed`` and the error line."""
    return dataclasses.asdict(ReplayRow(record_id=record_id, status="malformed", error=error))
