"""Small files and short functions: no module of the package (tests aside) is over 350 lines, and no
function or method over 60 lines, so that each file holds one responsibility a reader can take in."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_FILE_LINES = 350
MAX_FUNCTION_LINES = 60


def package_files(root: Path) -> list[Path]:
    skip = {"tests", ".venv", ".git", "docs"}
    return sorted(f for f in root.rglob("*.py") if not skip & set(f.relative_to(root).parts))


def oversized(root: Path) -> list[str]:
    found = []
    for f in package_files(root):
        text = f.read_text(encoding="utf-8")
        name = f.relative_to(root)
        if len(text.splitlines()) > MAX_FILE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_file_or_function_is_oversized():
    assert len(package_files(ROOT)) > 100
    assert oversized(ROOT) == []


def test_an_oversized_file_or_function_is_caught(tmp_path):
    (tmp_path / "ok.py").write_text("def f():\n    return 1\n")
    assert oversized(tmp_path) == []
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    body = "".join(f"    y{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "fn.py").write_text(f"def g():\n{body}")
    found = oversized(tmp_path)
    assert any(s.startswith("long.py:") for s in found) and any("fn.py:1 g: 61 lines" in s for s in found), found
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "big_test.py").write_text("x = 1\n" * 1000)
    assert not any("big_test" in s for s in oversized(tmp_path))
