"""The checker never trusts the producer: validated/, exact/, oracle/, replay/ import nothing
from fastpath/, torch or transformers.  Imports are read with ``ast`` (absolute and relative)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKER_PARTS = ("validated", "exact", "oracle", "replay")
FORBIDDEN = ("softrank.fastpath", "torch", "transformers")


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
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.append(mod)
            names.extend(f"{mod}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.append(node.args[0].value)
    return names


def layering_violations(root: Path) -> list[str]:
    bad = []
    for part in CHECKER_PARTS:
        for file in sorted((root / part).rglob("*.py")):
            for name in imported_modules(root, file):
                if name == "fastpath" or name.startswith("fastpath."):
                    name = "softrank." + name
                if any(name == f or name.startswith(f + ".") for f in FORBIDDEN):
                    bad.append(f"{file.relative_to(root)} imports {name}")
    return bad


def test_checker_imports_nothing_from_the_producer():
    files = [f for part in CHECKER_PARTS for f in (ROOT / part).rglob("*.py")]
    assert len(files) >= 8, "the checker packages should not be empty"
    assert layering_violations(ROOT) == []


@pytest.mark.parametrize("planted", [
    "import torch\n",
    "from transformers import AutoModel\n",
    "from softrank.fastpath import capture\n",
    "from ..fastpath.capture import run\n",
    "import importlib\nm = importlib.import_module('softrank.fastpath.models')\n",
    "def f():\n    import torch.nn as nn\n    return nn\n",
])
def test_layering_check_catches_a_planted_violation(tmp_path, planted):
    for part in CHECKER_PARTS + ("fastpath",):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "validated" / "clean.py").write_text("import numpy\nfrom flint import arb\nfrom . import clean\n")
    assert layering_violations(tmp_path) == []
    (tmp_path / "replay" / "sneaky.py").write_text(planted)
    found = layering_violations(tmp_path)
    assert found and all(f.startswith("replay/sneaky.py imports ") for f in found)


def test_the_replay_command_does_not_load_torch():
    import subprocess
    import sys

    code = ("import sys; from softrank.cli import main; import softrank.replay.engine, softrank.validated.upper_witness; "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
