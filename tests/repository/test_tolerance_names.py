"""One tolerance class and one parser module: ``softrank.replay.tolerance``.

The package's code (every module outside tests/) is walked with ``ast``: a second ``class Tolerance``
anywhere else, or any of the names of the parsers, wrappers and reverse maps that the one class
replaced (defined, assigned, imported, called or read as an attribute), is a failure.  A planted
tree proves that the walker sees each form."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = "replay/tolerance.py"  # the one class and the one parser module
REMOVED = frozenset({
    "parse_eps", "_eps_field", "eps_field", "eps_fraction", "from_printed", "by_float", "parse_eps_exact",
    "parse_tolerance", "parse_tolerances", "parse_tolerance_items", "rational_of_text",
})


def _package_files(root: Path) -> list[Path]:
    """Every module of the package: the whole tree except tests/, build outputs and hidden folders."""
    return sorted(f for f in root.rglob("*.py")
                  if not any(p in ("tests", "build") or p.startswith(".") for p in f.relative_to(root).parts[:-1]))


def _names(node: ast.AST) -> list[str]:
    """The identifiers a node defines, binds, imports or reads."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.alias):
        return [node.name.split(".")[-1], *([node.asname] if node.asname else [])]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    return []


def offences(root: Path) -> list[str]:
    """``file:line name`` for every removed name in the package's code, and every ``class
    Tolerance`` outside ``HOME``."""
    out = []
    for file in _package_files(root):
        rel = file.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            line = getattr(node, "lineno", 0)
            for name in _names(node):
                if name in REMOVED:
                    out.append(f"{rel}:{line} {name}")
            if isinstance(node, ast.ClassDef) and node.name == "Tolerance" and rel != HOME:
                out.append(f"{rel}:{line} a second class Tolerance")
    return out


def test_one_tolerance_class_and_no_other_parser():
    assert offences(ROOT) == []
    homes = [f for f in _package_files(ROOT) if any(isinstance(n, ast.ClassDef) and n.name == "Tolerance"
                                                    for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))))]
    assert [f.relative_to(ROOT).as_posix() for f in homes] == [HOME]


def test_the_old_import_paths_give_the_one_class():
    from softrank.exact.tolerance import Tolerance as old
    from softrank.replay.record import Tolerance as record
    from softrank.replay.tolerance import Tolerance

    assert old is Tolerance and record is Tolerance


def test_a_planted_name_or_class_is_caught(tmp_path):
    (tmp_path / "replay").mkdir()
    (tmp_path / "replay" / "tolerance.py").write_text("class Tolerance:\n    pass\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def parse_eps():\n    pass\n")  # tests are not walked
    assert offences(tmp_path) == []
    planted = {
        "a.py": ("def parse_eps(value):\n    return value\n", "parse_eps"),
        "b.py": ("from softrank.fastpath.store.replay_table import eps_fraction as f\n", "eps_fraction"),
        "c.py": ("x = T.from_printed('0.1')\n", "from_printed"),
        "d.py": ("by_float = {}\n", "by_float"),
        "e.py": ("class Tolerance:\n    eps: object\n", "a second class Tolerance"),
        "f.py": ("import softrank.cli.args\nsoftrank.cli.args.parse_tolerances('0.1')\n", "parse_tolerances"),
        "g.py": ("def f(eps_field=None):\n    pass\n", "eps_field"),
    }
    for name, (source, needle) in planted.items():
        (tmp_path / "cli").mkdir(exist_ok=True)
        (tmp_path / "cli" / name).write_text(source)
        found = offences(tmp_path)
        assert found and all(f.startswith(f"cli/{name}:") for f in found) and any(needle in f for f in found), found
        (tmp_path / "cli" / name).unlink()
    assert offences(tmp_path) == []
