"""What the summaries of the commands share: medians and maxima over finite values and numbers shown
as ``n/a`` when missing (their JSON goes through ``softrank.cli.output``)."""

from __future__ import annotations

import math
import statistics


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

