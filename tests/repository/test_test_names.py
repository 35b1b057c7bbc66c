"""Test files have unique basenames: the suite imports them by basename (pytest's default import
mode, no ``__init__.py`` under ``tests/``), so two ``test_x.py`` in different folders stop the
collection of the whole suite."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def duplicate_basenames(root: Path) -> list[str]:
    names = Counter(p.name for p in root.rglob("test_*.py"))
    return sorted(name for name, n in names.items() if n > 1)


def test_test_file_names_are_unique():
    assert duplicate_basenames(TESTS) == []


def test_a_duplicate_name_is_caught(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test_same.py").write_text("")
    (tmp_path / "a" / "test_other.py").write_text("")
    assert duplicate_basenames(tmp_path) == ["test_same.py"]
