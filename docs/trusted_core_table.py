"""Print the README's trusted-core table: every file under the trusted folders, with its line
count and the first sentence of its docstring.  The rule is the folder: every file under
validated/, exact/, oracle/ and replay/ is trusted, and nothing else is.

    .venv/bin/python docs/trusted_core_table.py     # paste the output into README.md

tests/repository/test_readme.py fails when the README's table differs from this output.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRUSTED_DIRS = ("validated", "exact", "oracle", "replay")


def trusted_files() -> list[Path]:
    """Every .py file under the trusted folders (an empty ``__init__.py`` holds nothing to trust)."""
    return [f for d in TRUSTED_DIRS for f in sorted((ROOT / d).rglob("*.py"))
            if f.read_text(encoding="utf-8").strip()]


def first_line(file: Path) -> str:
    doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = paragraph.split(". ")[0].split(": ")[0]
    return sentence.rstrip(".")


def table() -> str:
    rows = ["| file | lines | role |", "|---|---:|---|"]
    for f in trusted_files():
        n = len(f.read_text(encoding="utf-8").splitlines())
        role = first_line(f).replace("|", "\\|")
        rows.append(f"| `{f.relative_to(ROOT)}` | {n} | {role} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
