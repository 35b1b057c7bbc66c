"""The command line's path guards, checked before any work: output folders and files, and outputs
that would change an input (a store, its ``records/``, a replay table)."""

from __future__ import annotations

import os
from pathlib import Path

from softrank.fastpath.store.files import MAX_INPUT_BYTES, load_json_text, read_text_file  # noqa: F401  (re-exported)
from softrank.fastpath.store.files import check_not_input, store_records  # noqa: F401  (re-exported)
from softrank.fastpath.store.files import output_folder as output_dir  # noqa: F401  (re-exported)
from softrank.findings.replay_table import REPLAY_FILES
from softrank.errors import InputError


def output_file(path, field: str = "out", folder_must_exist: bool = True):
    """An output file checked before any work: what is at the path must be a regular file or
    nothing (a folder, FIFO, device or symlink loop there is an ``InputError``), and its folder
    must exist (unless the command creates it)."""
    from softrank.fastpath.store.files import check_output_file

    path = Path(path)
    if not str(path).strip():
        raise InputError("arguments", field, "empty path")
    try:
        check_output_file(path)
    except OSError as err:
        raise InputError(str(path), field, err.strerror or str(err)) from None
    if folder_must_exist and not path.parent.is_dir():
        raise InputError(str(path), field, f"its folder {path.parent} does not exist or is not a folder")
    if path.parent.is_dir() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise InputError(str(path), field, f"cannot write in its folder {path.parent} (permission denied)")
    return path


def check_outside(out, folder, field: str = "out", what: str = "the input store") -> None:
    """``out`` must not lie strictly inside ``folder`` (checked before anything is created: an
    output folder inside the input would change it, e.g. become one more record of a store)."""
    try:
        inner, outer = Path(out).resolve(), Path(folder).resolve()
    except (OSError, RuntimeError) as err:
        raise InputError(str(out), field, f"cannot resolve the path: {err}") from None
    if inner != outer and outer in inner.parents:
        raise InputError(str(out), field, f"lies inside {what} {folder} (choose a folder outside it; "
                                          "nothing was written)")


def replay_tables(folder) -> list[tuple]:
    """``(FOLDER/NAME, description)`` for each table of a replay folder (``check_not_input``)."""
    return [(Path(folder) / name, f"the input table {Path(folder) / name}") for name in REPLAY_FILES]
