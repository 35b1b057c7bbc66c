"""Print the README's trusted-core table (file, lines, what it proves); run after changing a
trusted file and paste the output into README.md. tests/test_foundation_readme.py checks it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRUSTED_DIRS = ("validated", "exact", "oracle")
NOT_CORE = ("cli", "bench")  # command-line front ends and benchmarks call the core; they are not in it
TRUSTED_GLUE = ("replay/store.py", "replay/lower.py", "replay/engine.py")


def trusted_files() -> list[Path]:
    files = [f for d in TRUSTED_DIRS for f in sorted((ROOT / d).glob("*.py"))
             if f.name != "__init__.py" and not f.stem.startswith(NOT_CORE)]
    return files + [ROOT / g for g in TRUSTED_GLUE]


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
