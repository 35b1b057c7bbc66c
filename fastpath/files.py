"""Atomic file writes for everything SoftRank writes outside a record (tables, indexes, summaries).

A file is written to a temporary name in its destination folder and moved into place with one
``os.replace``: a reader sees the old file or the new one, never a partial one, and an exception
while writing leaves the old file untouched and no temporary file behind.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


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


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call ``write(tmp_path)`` and move the result to ``path`` in one rename (mode per umask)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
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


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=1)
    return atomic_write(path, write)
