"""The command line's path guards, checked before any work: output folders and files, and outputs
that would change an input (a store, its ``records/``, a replay table)."""

from __future__ import annotations

import os
from pathlib import Path

from softrank.fastpath.store.files import MAX_INPUT_BYTES, load_json_text, read_text_file  # noqa: F401  (re-exported)
from softrank.fastpath.store.files import output_folder as output_dir  # noqa: F401  (re-exported)
from softrank.fastpath.store.replay_table import REPLAY_FILES
from softrank.validated.errors import InputError


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


def store_records(store) -> tuple:
    """``(STORE/records, description)`` for ``check_not_input``: nothing may be written into or as it."""
    return (Path(store) / "records", f"the records folder of the input store {store}")


def replay_tables(folder) -> list[tuple]:
    """``(FOLDER/NAME, description)`` for each table of a replay folder (``check_not_input``)."""
    return [(Path(folder) / name, f"the input table {Path(folder) / name}") for name in REPLAY_FILES]


def check_not_input(out, field: str = "out", *, inside=(), equal=(), writes=()) -> None:
    """Checked before anything is written: the output ``out`` (a folder or a file) must not be one of
    the inputs ``inside`` nor lie inside one of them, and must not be one of the inputs ``equal`` (a
    folder that may hold outputs, such as the store that ``STORE/replay`` lies in).  Each input is
    ``(path, description)``.  For an output folder, ``writes`` names what the command creates in it
    (``OUT/NAME``): none of those may be or hold an input.  Links are followed, so a link to an input
    is that input.  Any of these is an ``InputError`` naming ``out`` and ``field``."""
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
