"""Atomic file writes for everything SoftRank writes outside a record (tables, indexes, summaries).

A file is written to a temporary name in its destination folder and moved into place with one
``os.replace``: a reader sees the old file or the new one, never a partial one, and an exception
while writing leaves the old file untouched and no temporary file behind.
"""

from __future__ import annotations

import csv
import errno
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np


def umask() -> int:
    """The process's file-creation mask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike, directory: bool = False) -> None:
    """Give a file made by ``tempfile`` (0600, folders 0700) the mode a plain ``open``/``mkdir``
    would have given it: 0666 (0777 for folders) less the umask, so colleagues can read a store."""
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


def make_temp_dir(prefix: str, parent: str | os.PathLike) -> Path:
    """``tempfile.mkdtemp`` with the umask's mode instead of 0700."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    follow_umask(folder, directory=True)
    return folder


def read_regular_file(path: str | os.PathLike, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file (of at most ``max_bytes``); anything else (a FIFO, a device,
    a folder, a symlink loop) is an ``OSError`` naming the path, raised before reading, so that
    nothing blocks on a pipe or reads a device without end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than {max_bytes} bytes", str(path))
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        return fh.read()


def check_output_file(path: str | os.PathLike) -> Path:
    """An output file about to be (re)written by ``atomic_write``: what is there must be a regular
    file (or a link to one) or nothing; a folder, a FIFO, a device or a symlink loop there is an
    ``OSError`` naming the path (a FIFO or a link would otherwise be silently replaced)."""
    path = Path(path)
    if os.path.lexists(path):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:  # a dangling link: replaced, as before
            return path
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(path)) from None
        if not stat.S_ISREG(mode):
            raise OSError(errno.EEXIST, "exists and is not a regular file (nothing was written)", str(path))
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` in one rename (mode per umask)."""
    path = check_output_file(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    except OSError as err:  # name the file asked for, not the temporary one
        raise OSError(err.errno, f"cannot write here: {err.strerror}", str(path)) from None
    os.close(fd)
    try:
        write(tmp)
        follow_umask(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_csv(path: str | os.PathLike, rows: list[dict[str, Any]], fields: list[str] | None = None) -> Path:
    """Rows as CSV; the columns are ``fields`` or every key in order of first appearance."""
    if fields is None:
        fields = list(dict.fromkeys(k for r in rows for k in r))

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return atomic_write(path, write)


def json_ready(obj: Any) -> Any:
    """``obj`` with numpy scalars as Python numbers and every NaN or infinite float replaced by None
    (JSON null), through dicts, lists and tuples: files and printouts stay standard JSON
    (``json.dumps`` would write ``NaN``)."""
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """``obj`` as standard JSON (NaN and infinities as null), written atomically."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(json_ready(obj), fh, indent=1, allow_nan=False)
    return atomic_write(path, write)
