"""What every front end shares: one parser for tolerances (binary64 or exact rational), integer
lists (ranks, layers, budgets) and counts, and one progress style (a rich bar on stderr, or nothing).

Each parser raises ``InputError("arguments", FIELD, ...)`` on bad input, which the command line
prints as one line with exit code 2.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from fractions import Fraction
from typing import Callable, Iterator

from softrank.validated.errors import InputError

MAX_LIST = 100_000  # longest integer list accepted (a span "0-10**9" is refused, not expanded)


def parse_eps_list(text: str, field: str = "eps") -> list[float]:
    """``"0.15,0.25"`` -> sorted distinct floats, each strictly inside (0, 1)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            e = float(part)
        except ValueError:
            raise InputError("arguments", field, f"not a number: {part!r}") from None
        if not 0 < e < 1:
            raise InputError("arguments", field, f"eps must lie in (0, 1), got {part}")
        out.append(e)
    if not out:
        raise InputError("arguments", field, "no tolerance given")
    return sorted(set(out))


def parse_eps_exact(text: str, field: str = "eps") -> Fraction:
    """``"1/4"``, ``"0.25"`` or ``"1e-1"`` -> the exact rational it spells, strictly inside (0, 1)."""
    from softrank.exact.rational import parse_rational

    eps = parse_rational(str(text), "arguments", field)
    if not 0 < eps < 1:
        raise InputError("arguments", field, f"eps must lie in (0, 1), got {text}")
    return eps


def parse_int_list(text: str | None, field: str, minimum: int | None = 0) -> list[int] | None:
    """``"0,2,4-6"`` -> [0, 2, 4, 5, 6] (``None`` stays ``None``); every value >= ``minimum``."""
    if text is None:
        return None
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        span = re.fullmatch(r"(\d{1,9})\s*-\s*(\d{1,9})", part)
        if span:
            lo, hi = int(span.group(1)), int(span.group(2))
            if hi - lo >= MAX_LIST:
                raise InputError("arguments", field, f"span {part!r} longer than {MAX_LIST}")
            out.extend(range(lo, hi + 1))
        elif re.fullmatch(r"-?\d{1,18}", part):
            out.append(int(part))
        else:
            raise InputError("arguments", field, f"not an integer list: {text!r}")
    if not out:
        raise InputError("arguments", field, f"empty list: {text!r}")
    if minimum is not None and min(out) < minimum:
        raise InputError("arguments", field, f"values must be integers >= {minimum}, got {text!r}")
    return out


def check_count(value: int | None, field: str, minimum: int = 1) -> int | None:
    """A count argument (``--jobs``, ``--repeats``, ``--size``): an integer >= ``minimum``."""
    if value is not None and value < minimum:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {value}")
    return value


def parse_count(text: str, field: str, minimum: int = 1) -> int:
    """A count given as text (``--rank 3``): an integer >= ``minimum``."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {text!r}") from None
    check_count(value, field, minimum)
    return value


@contextmanager
def progress(on: bool, total: int, label: str) -> Iterator[Callable[[int], None]]:
    """``with progress(on, total, label) as update: update(done)``; a rich bar on stderr, or nothing."""
    if not on or total <= 0:
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=total)
        yield lambda done: bar.update(task, completed=done)


def output_dir(path, field: str = "out", empty: bool = False):
    """An output folder: created if missing; an existing file (not a folder) there is an
    ``InputError``, as is a non-empty folder when ``empty`` (nothing already there is touched)."""
    from pathlib import Path

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(str(path), field, "exists and is not a folder")
    if empty and path.is_dir() and any(path.iterdir()):
        raise InputError(str(path), field, "is not empty (choose a new folder; nothing there was changed)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(str(path), field, f"cannot create the folder: {err.strerror or err}") from None
    return path


MAX_INPUT_BYTES = 64 * 2**20  # largest text input file read (matrices, witnesses)


def read_text_file(path, field: str = "", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes; anything else (a missing
    file, a folder, a pipe or device that could block, a binary or too large file) is an
    ``InputError`` naming the file."""
    import os
    import stat

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(str(path), field, "not a regular file")
        if st.st_size > max_bytes:
            raise InputError(str(path), field, f"larger than {max_bytes} bytes")
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as err:
        raise InputError(str(path), field, f"cannot read: {err.strerror or err}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(str(path), field, f"not UTF-8 text (byte {err.start})") from None


def load_json_text(text: str, path, field: str = "", **kwargs):
    """``json.loads`` whose every failure (syntax, nesting depth, huge integers) is an ``InputError``."""
    import json

    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError as err:
        raise InputError(str(path), field, f"not JSON: {err.msg} at line {err.lineno}") from None
    except RecursionError:
        raise InputError(str(path), field, "JSON nested too deeply") from None
    except ValueError as err:
        raise InputError(str(path), field, f"unreadable number in JSON: {str(err)[:80]}") from None
