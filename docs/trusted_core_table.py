"""Print the README's trusted-core table: every trusted file with its code lines and the first
sentence of its docstring, then the totals of the trust lines.  The rule is the folder: every file under validated/,
exact/, oracle/ and replay/ is trusted, except the files under a folder named ``search`` (the
oracle's search, untrusted), and nothing else is.

    .venv/bin/python docs/trusted_core_table.py            # print the table and the totals
    .venv/bin/python docs/trusted_core_table.py --write    # and put them into README.md

Code lines leave out blank lines, comment-only lines and docstrings.  The totals, one per trust line
(a line: the files it starts from and every trusted module they import, transitively; importing a
module runs its packages' ``__init__.py`` too, so those count):

- the replay trust line: every file under replay/;
- the oracle re-checker: oracle/checks.py;
- the theorem checks' trust line: the trusted modules that the theorem checks and the kappa study
  (studies/theorem/, studies/kappa/) import, whose validated verdicts rest on them;
- the oracle search's LP checks: exact/lp.py (every LP answer the search uses passed them);
- the family closures: oracle/families.py (``softrank families``);

then the trusted files on none of these lines (trusted by their folder only), if any.  tests/repository/test_readme.py fails when
the README's copy differs from ``table()``.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TRUSTED_DIRS = ("validated", "exact", "oracle", "replay")
UNTRUSTED_FOLDER = "search"
_SKIPPED_TOKENS = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                   tokenize.ENCODING, tokenize.ENDMARKER}


NEUTRAL = ("errors.py",)  # the package root's error type, which every part imports: trusted too


def trusted_files() -> list[Path]:
    """Every .py file under the trusted folders outside a ``search`` folder (an empty
    ``__init__.py`` holds nothing to trust), and the neutral ``errors.py``."""
    return [f for d in TRUSTED_DIRS for f in sorted((ROOT / d).rglob("*.py"))
            if UNTRUSTED_FOLDER not in f.relative_to(ROOT).parts[:-1] and f.read_text(encoding="utf-8").strip()] \
        + [ROOT / n for n in NEUTRAL]


def first_line(file: Path) -> str:
    doc = ast.get_docstring(ast.parse(file.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = paragraph.split(". ")[0].split(": ")[0]
    return sentence.rstrip(".")


def code_lines(file: Path) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    source = file.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in _SKIPPED_TOKENS:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - docstrings)


def _module_file(name: str) -> Path | None:
    """The file of module ``softrank.<name>`` (or a bare component name), if it is in the tree."""
    parts = name.split(".")
    parts = parts[1:] if parts[0] == "softrank" else parts
    if parts == ["errors"]:
        return ROOT / "errors.py"
    if not parts or parts[0] not in TRUSTED_DIRS + ("advisors", "fastpath", "studies", "bench", "cli", "api"):
        return None
    path = ROOT.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _packages(file: Path) -> list[Path]:
    """The ``__init__.py`` files that importing FILE runs (its packages below the root)."""
    parts = file.relative_to(ROOT).parts[:-1]
    return [ROOT.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts) + 1)]


def imported_files(file: Path) -> set[Path]:
    """The package's files that FILE imports (``from X import y``: X.y when that is a module, else X),
    relative imports resolved, with the packages' ``__init__.py`` that the import runs."""
    package = ["softrank", *file.relative_to(ROOT).with_suffix("").parts][:-1]  # drop the module (or __init__)
    out = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            targets = [f"{base}.{a.name}" if _module_file(f"{base}.{a.name}") else base for a in node.names]
        for name in targets:
            found = _module_file(name)
            if found is not None:
                out.update([found, *_packages(found)])
    return {f for f in out if f.is_file()}


def trust_line(starts: list[Path]) -> list[Path]:
    """STARTS and every trusted file they import, transitively (sorted)."""
    trusted = set(trusted_files())
    seen, todo = set(), [f for f in starts if f in trusted]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(g for g in imported_files(f) if g in trusted and g not in seen)
    return sorted(seen)


def theorem_starts() -> list[Path]:
    """The trusted modules that the theorem checks and the kappa study import directly."""
    trusted = set(trusted_files())
    return sorted({g for folder in ("theorem", "kappa") for f in (ROOT / "studies" / folder).rglob("*.py")
                   for g in imported_files(f) if g in trusted})


def trust_lines() -> list[tuple[str, list[Path], str]]:
    """(name, files, what they are) for each trust line."""
    return [
        ("replay trust line", trust_line([f for f in trusted_files() if f.relative_to(ROOT).parts[0] == "replay"]),
         "every file under `replay/` and the trusted modules they import, transitively"),
        ("oracle re-checker", trust_line([ROOT / "oracle" / "checks.py"]),
         "`oracle/checks.py` and the trusted modules it imports, transitively"),
        ("theorem checks' trust line", trust_line(theorem_starts()),
         "the trusted modules that `studies/theorem/` and `studies/kappa/` import, transitively: the "
         "validated verdicts of `softrank theorem`, `softrank kappa` and `softrank study kappa` rest on them"),
        ("oracle search's LP checks", trust_line([ROOT / "exact" / "lp.py"]),
         "`exact/lp.py` and the trusted modules it imports, transitively: every LP answer the oracle's search "
         "uses passed them; the oracle's verdicts are re-checked without them by the oracle re-checker"),
        ("family closures", trust_line([ROOT / "oracle" / "families.py"]),
         "`oracle/families.py` and the trusted modules it imports, transitively: the proofs of `softrank families`"),
    ]


def totals() -> list[str]:
    lines, on_a_line = [], set()
    for name, files, what in trust_lines():
        on_a_line.update(files)
        lines.append(f"- {name}: {sum(map(code_lines, files))} code lines in {len(files)} files ({what})")
    rest = [f for f in trusted_files() if f not in on_a_line]
    if rest:
        lines.append(f"- on none of these lines (trusted by their folder only): {sum(map(code_lines, rest))} code "
                     "lines in " + ", ".join(f"`{f.relative_to(ROOT).as_posix()}`" for f in rest))
    return lines


def table() -> str:
    """The README's table (code lines per trusted file) and, after it, the totals of the trust lines."""
    rows = ["| file | code lines | role |", "|---|---:|---|"]
    for f in trusted_files():
        role = first_line(f).replace("|", "\\|")
        rows.append(f"| `{f.relative_to(ROOT).as_posix()}` | {code_lines(f)} | {role} |")
    return "\n".join(rows) + "\n\n" + "\n".join(totals())


def write_readme() -> bool:
    """Replace the README's table (from its header row to the next ``## `` heading) by ``table()``;
    True when the README changed."""
    text = README.read_text(encoding="utf-8")
    start = text.index("| file | ")
    end = text.index("\n## ", start)
    new = text[:start] + table() + "\n" + text[end:]
    if new != text:
        README.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    print(table())
    if "--write" in sys.argv[1:]:
        print("README.md updated" if write_readme() else "README.md already current", file=sys.stderr)
