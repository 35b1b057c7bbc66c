"""Atomic file writes for everything SoftRank writes outside a record (tables, indexes, summaries).

A file is written to a temporary name in its destination folder and moved into place with one
``os.replace``: a reader sees the old file or the new one, never a partial one, and an exception
while writing leaves the old file untouched and no temporary file behind.  ``check_not_input``
guards an output path against changing an input (a store, its ``records/``, a replay table).
"""

from __future__ import annotations

import csv
import errno
import hashlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from softrank.replay.reader import read_regular_file  # noqa: F401  (the one safe reader; re-exported)


def file_sha256(path) -> str:
    """SHA-256 of a file's bytes (``""`` when it cannot be read)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


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


def write_text(path: str | os.PathLike, text: str, durable: bool = False) -> Path:
    """``text`` (UTF-8) written atomically (``atomic_write``).  ``durable``: the file is flushed to
    disk before the rename and the folder after it, so that even a power cut leaves the old file or
    the new one (a journal entry is whole or absent)."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    path = atomic_write(path, write)
    if durable:
        fd = os.open(Path(path).parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return path


def special_manifest(folder: str | os.PathLike) -> bool:
    """True when FOLDER/record.json exists but is not a regular file (a FIFO, a device, a folder):
    code that hashes or parses manifests outside the reader must not open it (it would block or
    never end); the reader reports it on one line when the record is read."""
    try:
        return not stat.S_ISREG(os.stat(Path(folder) / "record.json").st_mode)
    except OSError:  # missing, a link loop, unreadable: opening it fails at once
        return False


MAX_INPUT_BYTES = 64 * 2**20  # largest text input file read (matrices, witnesses, journal entries)


def read_text_file(path: str | os.PathLike, field: str = "", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes; anything else (a missing
    file, a folder, a pipe or device that could block, a binary or too large file) is an
    ``InputError`` naming the file."""
    from softrank.errors import InputError

    try:
        raw = read_regular_file(path, max_bytes)  # checked on the open file: a FIFO is never read
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the name
        raise InputError(str(path), field, f"cannot read: {getattr(err, 'strerror', None) or err}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(str(path), field, f"not UTF-8 text (byte {err.start})") from None


def load_json_text(text: str, path, field: str = "", **kwargs):
    """``json.loads`` whose every failure (syntax, nesting depth, huge integers) is an ``InputError``."""
    from softrank.errors import InputError

    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError as err:
        raise InputError(str(path), field, f"not JSON: {err.msg} at line {err.lineno}") from None
    except RecursionError:
        raise InputError(str(path), field, "JSON nested too deeply") from None
    except ValueError as err:
        raise InputError(str(path), field, f"unreadable number in JSON: {str(err)[:80]}") from None


def output_folder(path, field: str = "out", empty: bool = False) -> Path:
    """An output folder: created if missing; an existing file (not a folder) there is an
    ``InputError``, as is a non-empty folder when ``empty`` (nothing already there is touched)."""
    from softrank.errors import InputError

    if not str(path).strip():
        raise InputError("arguments", field, "empty path")
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


def store_records(store) -> tuple:
    """``(STORE/records, description)`` for ``check_not_input``: nothing may be written into or as it."""
    return (Path(store) / "records", f"the records folder of the input store {store}")


def check_not_input(out, field: str = "out", *, inside=(), equal=(), writes=()) -> None:
    """Checked before anything is written: the output ``out`` (a folder or a file) must not be one of
    the inputs ``inside`` nor lie inside one of them, and must not be one of the inputs ``equal`` (a
    folder that may hold outputs, such as the store that ``STORE/replay`` lies in).  Each input is
    ``(path, description)``.  For an output folder, ``writes`` names what the command creates in it
    (``OUT/NAME``): none of those may be or hold an input.  Links are followed, so a link to an input
    is that input.  Any of these is an ``InputError`` naming ``out`` and ``field``."""
    from softrank.errors import InputError

    def real(path) -> Path:
        try:
            return Path(os.path.realpath(path))
        except (OSError, RuntimeError, ValueError) as err:
            raise InputError(str(out), field, f"cannot resolve the path {path}: {err}") from None

    target = real(out)
    checked = [(real(p), what, True) for p, what in inside] + [(real(p), what, False) for p, what in equal]
    for path, what, tree in checked:
        if target == path:
            raise InputError(str(out), field, f"is {what} (choose another path; nothing was written)")
        if tree and path in target.parents:
            raise InputError(str(out), field, f"lies inside {what} (choose a path outside it; nothing was written)")
        for name in writes:
            dest = target / name
            if dest == path or dest in path.parents:
                raise InputError(str(out), field, f"would write {dest}, which is or holds {what} "
                                                  "(choose another path; nothing was written)")
