"""Imports go one way: front ends (cli/) -> producer (fastpath/) -> trusted core.

The trusted core is every file under validated/, exact/, oracle/ and replay/, and nothing else.
It imports only the standard library, numpy, python-flint, sympy, mpmath, itself, and the
untrusted advisors (advisors/, whose proposals enter only through exact checks).  Advisors import
only the standard library, numpy, python-flint, highspy and each other.  The producer never
imports the front ends.  Imports are read with ``ast`` (absolute, relative, inside functions, and
``importlib.import_module`` / ``__import__`` calls with a literal name).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("validated", "exact", "oracle", "replay")
THIRD_PARTY = {
    "core": {"numpy", "flint", "sympy", "mpmath"},
    "advisors": {"numpy", "flint", "highspy"},
}
# part -> softrank parts it may import (besides itself)
ALLOWED_PARTS = {
    **{part: set(CORE) | {"advisors"} for part in CORE},
    "advisors": {"advisors"},
    "fastpath": set(CORE) | {"advisors", "fastpath", ""},  # "": the package root (its version)
}


def _module_name(root: Path, file: Path) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["softrank", *parts])


def imported_modules(root: Path, file: Path) -> list[str]:
    """Absolute names of every module imported by FILE (relative imports resolved)."""
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    package = _module_name(root, file).split(".")
    if file.name != "__init__.py":
        package = package[:-1]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                names.append(".".join(base + ([node.module] if node.module else [])))
            else:
                names.append(node.module or "")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.append(node.args[0].value)
    return names


def _part_of(name: str) -> str | None:
    """The softrank part a module name belongs to ("validated", "cli", ...), or None if external."""
    top = name.split(".")
    if top[0] == "softrank":
        return top[1] if len(top) > 1 else ""
    if top[0] in CORE + ("advisors", "fastpath", "cli"):  # a bare component name
        return top[0]
    return None


def violations(root: Path) -> list[str]:
    bad = []
    for part, allowed in ALLOWED_PARTS.items():
        third = THIRD_PARTY["advisors" if part == "advisors" else "core"] if part != "fastpath" else None
        for file in sorted((root / part).rglob("*.py")):
            for name in imported_modules(root, file):
                target = _part_of(name)
                if target is not None:
                    ok = target in allowed
                elif third is None:  # the producer may use any library, but not the front ends
                    ok = True
                else:
                    top = name.split(".")[0]
                    ok = top in sys.stdlib_module_names or top in third or top == "__future__"
                if not ok:
                    bad.append(f"{file.relative_to(root)} imports {name}")
    return bad


def test_the_tree_obeys_the_layering():
    files = [f for part in CORE for f in (ROOT / part).rglob("*.py")]
    assert len(files) >= 20, "the trusted core should not be empty"
    assert violations(ROOT) == []


def _tree(tmp_path: Path) -> Path:
    for part in CORE + ("advisors", "fastpath", "cli"):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "validated" / "clean.py").write_text(
        "import math\nimport numpy\nfrom flint import arb\nfrom . import clean\nfrom softrank.exact import lp\n"
        "from softrank.advisors import highs\n")
    (tmp_path / "fastpath" / "clean.py").write_text("import torch\nfrom softrank.replay import reader\n")
    (tmp_path / "cli" / "clean.py").write_text("import rich\nfrom softrank.fastpath import bracket\n")
    return tmp_path


@pytest.mark.parametrize("part, planted", [
    # the core reaching outwards
    ("replay", "import torch\n"),
    ("validated", "from transformers import AutoModel\n"),
    ("oracle", "from softrank.fastpath import capture\n"),
    ("replay", "from ..fastpath.capture import run\n"),
    ("exact", "import importlib\nm = importlib.import_module('softrank.fastpath.capture.models')\n"),
    ("validated", "def f():\n    import torch.nn as nn\n    return nn\n"),
    ("replay", "import pyarrow\n"),
    ("replay", "from rich.console import Console\n"),
    ("oracle", "import dask\n"),
    ("exact", "import cvxpy\n"),
    ("replay", "from softrank.cli.replay import replay_store\n"),
    ("validated", "import scipy.linalg\n"),
    # advisors reaching into the core or the producer
    ("advisors", "from softrank.exact.lp import LP\n"),
    ("advisors", "from softrank.fastpath import bracket\n"),
    # the producer reaching into the front ends
    ("fastpath", "from softrank.cli.common import parse_tolerances\n"),
    ("fastpath", "from ..cli import tables\n"),
    ("fastpath", "def f():\n    import softrank.cli\n"),
])
def test_a_planted_violation_is_caught(tmp_path, part, planted):
    root = _tree(tmp_path)
    assert violations(root) == []
    (root / part / "sneaky.py").write_text(planted)
    found = violations(root)
    assert found and all(f.startswith(f"{part}/sneaky.py imports ") for f in found), found


def test_the_replay_command_does_not_load_the_producer():
    import subprocess

    code = ("import sys; from softrank.cli import main; import softrank.cli.replay, softrank.replay.engine; "
            "print(sorted(m for m in ('torch', 'transformers', 'softrank.fastpath.bracket.matrix') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
