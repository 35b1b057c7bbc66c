"""The replay's tables: one typed row per (record, eps) and one per (record, eps, budget k),
built from the engine's typed results (``softrank.replay.engine``); nothing is decided here.  Their
schema is ``softrank.fastpath.store.replay_table`` (with the reader of the tables).

Numbers that are bounds never overstate: ``upper_bound`` is the proved bound on
``||A - X Y^T||_inf`` as a decimal rounded up, ``chi_upper`` a binary64 number >= the proved bound
on ``||A - A_hat||_inf``.  ``eps`` is printed exactly: a tolerance written as text (``"0.1"``,
``"3/20"``) is that rational and prints as written; one written as a JSON number is a binary64
number and prints ``binary64(0.1)`` unless its shortest text is already exact (``0.25``): the
record's ``Tolerance`` (``softrank.replay.tolerance``), as the reader built it, prints itself.
"""

from __future__ import annotations

from softrank.fastpath.capture.labels import record_label
from softrank.fastpath.store.replay_table import REPLAY_COLUMNS, VERDICT_COLUMNS  # noqa: F401  (the schema, re-exported)
from softrank.replay.engine import RecordResult
from softrank.validated.balls import float_at_least

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
    """The replay rows and verdict rows of one record's typed result."""
    record = result.record
    base = _base(record)
    chi = None if result.chi is None else float_at_least(result.chi)
    rows, verdicts = [], []
    for tol, t in zip(record.tolerances, result.tolerances):
        eps = t.tolerance.text
        row = dict(base, eps=eps, eps_value=t.tolerance.binary64, float64_lower=tol.float64_lower,
                   float64_upper=tol.float64_upper, chi_upper=chi, seconds=seconds,
                   validated_lower=t.validated_lower, validated_upper=t.validated_upper, lower_kind=t.lower_kind,
                   lower_outcomes=[{"kind": lr.kind, "claimed": _int64(lr.claimed), "outcome": lr.check.outcome.value,
                                    "route": lr.check.route or None, "value": lr.check.value or None,
                                    "lemma": lr.check.lemma or None, "reason": lr.check.reason or None}
                                   for lr in t.lowers],
                   assumptions=list(t.assumptions))
        if t.contradiction:
            row.update(status="contradiction", error=t.contradiction)
        if tol.upper is not None:
            row.update(upper_rank=tol.upper.rank, upper_construction=tol.upper.construction,
                       upper_outcome=t.upper.outcome.value, upper_route=t.upper.route or None,
                       upper_bound=t.upper.value or None, upper_lemma=t.upper.lemma or None,
                       upper_reason=t.upper.reason)
        rows.append(row)
        for k in sorted(set(budgets) | set(tol.float64_verdicts)):
            verdicts.append({"record_id": record.record_id, "family": base["family"],
                             "block_width": base["block_width"], "eps": eps, "k": k,
                             "float64_verdict": tol.float64_verdicts.get(k, ""), "validated_verdict": t.verdict(k)})
    return rows, verdicts
