"""The command line's argument parsers: integer lists (ranks, layers, budgets), counts, paths and
devices.  A tolerance is read by ``softrank.replay.tolerance.Tolerance`` itself (``parse``,
``parse_list``), the one parser of a tolerance.

Each parser raises ``InputError("arguments", FIELD, ...)`` on bad input, which the command line
prints as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import re

from softrank.errors import InputError

MAX_LIST = 100_000  # longest integer list accepted (a span "0-10**9" is refused, not expanded)


def parse_int_list(text: str | None, field: str, minimum: int | None = 0) -> list[int] | None:
    """``"0,2,4-6"`` -> [0, 2, 4, 5, 6] (``None`` stays ``None``); every value >= ``minimum``."""
    if text is None:
        return None
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        span = re.fullmatch(r"(\d{1,9})\s*-\s*(\d{1,9})", part, re.ASCII)
        if span:
            lo, hi = int(span.group(1)), int(span.group(2))
            if hi - lo >= MAX_LIST:
                raise InputError("arguments", field, f"span {part!r} longer than {MAX_LIST}")
            out.extend(range(lo, hi + 1))
        elif re.fullmatch(r"-?\d{1,18}", part, re.ASCII):
            out.append(int(part))
        else:
            raise InputError("arguments", field, f"not an integer list: {text!r}")
    if not out:
        raise InputError("arguments", field, f"empty list: {text!r}")
    if minimum is not None and min(out) < minimum:
        raise InputError("arguments", field, f"values must be integers >= {minimum}, got {text!r}")
    return out


def check_count(value: int | None, field: str, minimum: int = 1, maximum: int | None = None) -> int | None:
    """A count argument (``--jobs``, ``--repeats``, ``--size``): an integer >= ``minimum`` (and
    <= ``maximum`` when given: a count that would run for ages or exhaust memory is refused)."""
    if value is not None and value < minimum:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {_shown(value)}")
    if value is not None and maximum is not None and value > maximum:
        raise InputError("arguments", field, f"must be an integer <= {maximum}, got {_shown(value)}")
    return value


def _shown(value) -> str:
    text = str(value)
    return text if len(text) <= 30 else text[:12] + f"... ({len(text)} digits)"


def parse_count(text: str, field: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A count given as text (``--rank 3``): an integer >= ``minimum`` (<= ``maximum``)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {str(text)[:40]!r}") from None
    check_count(value, field, minimum, maximum)
    return value


def max_jobs() -> int:
    """The most worker processes a local cluster may start: 8 per CPU (at least 64); more would
    exhaust memory or the process table rather than run faster."""
    import os

    return max(64, 8 * (os.cpu_count() or 1))


def path_arg(text: str) -> str:
    """argparse ``type=`` of every path option and argument: an empty (or blank) path is refused
    when the command line is parsed (one line naming the option, exit code 2), never silently
    replaced by the option's default."""
    if not str(text).strip():
        raise argparse.ArgumentTypeError("empty path")
    return text


def value_arg(text: str) -> str:
    """argparse ``type=`` of a text option whose absence means a default (``--device``): an
    empty value is refused, never taken for the default."""
    if not str(text).strip():
        raise argparse.ArgumentTypeError("empty value")
    return text


def check_device(name: str | None, field: str = "device") -> str | None:
    """``cpu`` or ``cuda`` (``None``: the default); ``cuda`` only where torch has a CUDA device."""
    if name is None:
        return None
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise InputError("arguments", field, f"expected cpu or cuda, got {name!r}")
    if name.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise InputError("arguments", field, "cuda requested but this torch has no CUDA device")
    return name
