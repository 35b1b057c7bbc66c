"""pyproject.toml lists every package of the tree (the repository root is the package ``softrank``,
so setuptools cannot discover them by itself): a folder with an ``__init__.py`` left out of the
list would be missing from a plain ``pip install .``."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tree_packages(root: Path) -> set[str]:
    skip = {"tests", ".venv", ".git", "docs", "proofs"}
    found = set()
    for init in root.rglob("__init__.py"):
        parts = init.parent.relative_to(root).parts
        if not skip & set(parts):
            found.add(".".join(("softrank",) + parts))
    return found


def test_every_package_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert "softrank.oracle.search" in listed
    assert tree_packages(ROOT) == listed
