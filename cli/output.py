"""The one JSON printer of the command line: every command's ``--json`` output, and the JSON error
object of a bad input under ``--json``, goes through ``print_json``.

The output is standard JSON (``json_text``): numpy scalars as Python numbers, every NaN or infinite
number as null (never the non-standard ``NaN``), anything else json cannot write as its ``str``;
the default separators, no indentation and the keys in their order unless a command asks for
``indent`` or ``sort_keys``.  ``tests/repository/test_json_printer.py`` fails if a module other than
this one prints ``json.dumps`` output to stdout itself.
"""

from __future__ import annotations

import json


def json_text(obj, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``obj`` as one standard JSON text (NaN and infinities written as null)."""
    from softrank.fastpath.store.files import json_ready

    return json.dumps(json_ready(obj), allow_nan=False, default=str, indent=indent, sort_keys=sort_keys)


def print_json(obj, *, indent: int | None = None, sort_keys: bool = False) -> None:
    """Print ``obj`` as one JSON text on stdout, flushed (a script reading a pipe sees it at once)."""
    print(json_text(obj, indent=indent, sort_keys=sort_keys), flush=True)


def print_json_error(line: str, exit_code: int) -> None:
    """Under ``--json``: the error a command ends with, as one JSON object on stdout (the same line
    also goes to stderr)."""
    print_json({"error": line, "exit_code": exit_code})


def wants_json(args) -> bool:
    """Did the command line ask for ``--json``?"""
    return bool(getattr(args, "json", False))

