"""What the summaries of the commands share: medians and maxima over finite values and numbers shown
as ``n/a`` when missing (their JSON goes through ``softrank.cli.output``)."""

from __future__ import annotations

import math
import statistics

from softrank.cli.output import print_json, wants_json


def finite(values) -> list[float]:
    """The values that are finite numbers (None, NaN and infinities dropped): what a summary's
    median or maximum is taken over when a degenerate record has no ratio."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def median_or_none(values) -> float | None:
    kept = finite(values)
    return statistics.median(kept) if kept else None


def max_or_none(values) -> float | None:
    kept = finite(values)
    return max(kept) if kept else None


def shown_number(value, spec: str) -> str:
    """``format(value, spec)``, or ``n/a`` for None and NaN (a ratio a degenerate record lacks)."""
    return "n/a" if value is None or value != value else format(value, spec)



def by_eps(rows: list[dict], text: str, value: str):
    """``(eps, its rows)`` of a store job's table, the tolerances in increasing order: ``text`` is
    the column of a tolerance's text, ``value`` that of its value."""
    for eps in dict.fromkeys(r[text] for r in sorted(rows, key=lambda r: r[value])):
        yield eps, [r for r in rows if r[text] == eps]


def print_job_summary(args, payload: dict, per_eps: list[dict], header: str, eps_line) -> int:
    """A store job's closing summary; returns its exit code (2 when ``payload["errors"]`` lists a
    malformed record, else 0).  Under ``--json`` one object: ``payload``, then ``eps`` (the rows
    ``per_eps``) and ``exit_code``; else the ``header`` line and one ``eps_line(row)`` a row."""
    code = 2 if payload["errors"] else 0
    if wants_json(args):
        print_json({**payload, "eps": per_eps, "exit_code": code})
        return code
    print(header)
    for row in per_eps:
        print(eps_line(row))
    return code
