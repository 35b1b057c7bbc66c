"""Imports go one way: front ends (cli/) -> pipeline (pipeline/) -> producer (fastpath/) -> search
-> trusted core.  The pipeline of ``softrank run`` may also use the replay/report room (the replay
job and the report page: ``RESULTS``); the producer and the core never import the pipeline.

The trusted core is every file under validated/, exact/, oracle/ and replay/ outside a folder named
``search``, and nothing else.  A trusted file imports only the standard library, numpy,
python-flint, sympy, mpmath and other trusted files: never an advisor (advisors/) and never a
search module.  A search folder (oracle/search/: witness search, decoders, sub-cells, nerve cycles,
branch and bound, the HiGHS-backed LP solve) is untrusted: it may import the same libraries, the
advisors and the trusted core, never the producer or the front ends.  Advisors import only the
standard library, numpy, python-flint, highspy and each other.  The producer never imports the
front ends.  Imports are read with ``ast`` (absolute, relative, inside functions, and
``importlib.import_module`` / ``__import__`` calls with a literal name).

No module of the package imports itself back through others: the graph of module -> imported
softrank modules has no circle.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ("validated", "exact", "oracle", "replay")
SEARCH = "search"  # a folder of this name inside a core folder is untrusted
COMPONENTS = CORE + ("advisors", "fastpath", "pipeline", "cli", "api")
RESULTS = ("softrank.cli.replay", "softrank.cli.report")  # the replay/report room, where it is today
THIRD_PARTY = {
    "trusted": {"numpy", "flint", "sympy", "mpmath"},
    "search": {"numpy", "flint", "sympy", "mpmath"},
    "advisors": {"numpy", "flint", "highspy"},
}
# zone -> zones it may import ("root": the package root, for its version)
ALLOWED = {
    "trusted": {"trusted"},
    "search": {"trusted", "search", "advisors"},
    "advisors": {"advisors"},
    "fastpath": {"trusted", "search", "advisors", "fastpath", "root"},
    "pipeline": {"trusted", "search", "advisors", "fastpath", "pipeline", "results", "root"},
}


def _module_name(root: Path, file: Path) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["softrank", *parts])


def _imports(root: Path, file: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every ``from module import name``; (module, None) for ``import module``
    and ``importlib.import_module("module")``."""
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    package = _module_name(root, file).split(".")
    if file.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            out.extend((base, alias.name if alias.name != "*" else None) for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "import_module", "__import__"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append((node.args[0].value, None))
    return out


def imported_modules(root: Path, file: Path) -> list[str]:
    """Absolute names of every module imported by FILE (relative imports resolved).  For
    ``from X import y`` both X and X.y are listed (y may be a submodule)."""
    pairs = _imports(root, file)
    return list(dict.fromkeys(name for base, alias in pairs for name in (base, f"{base}.{alias}" if alias else None)
                              if name is not None))


def _zone(root: Path, parts: list[str]) -> str:
    """The zone of a module given as its parts below the package root: "trusted" or "search" for
    the core folders, else the component's name ("advisors", "fastpath", "cli", ...)."""
    if not parts or not (root / parts[0]).is_dir():
        return "root"  # the package root or a name defined there (its version)
    if parts[0] not in CORE:
        return parts[0]
    inside = any(p == SEARCH and (root.joinpath(*parts[: i + 1])).is_dir() for i, p in enumerate(parts) if i)
    return "search" if inside else "trusted"


def zone_of_module(root: Path, name: str) -> str | None:
    """The zone a module name belongs to, or None if it is outside the package."""
    if any(name == room or name.startswith(room + ".") for room in RESULTS):
        return "results"
    parts = name.split(".")
    if parts[0] == "softrank":
        return _zone(root, parts[1:])
    if parts[0] in COMPONENTS:  # a bare component name
        return _zone(root, parts)
    return None


def zone_of_file(root: Path, file: Path) -> str:
    return _zone(root, list(file.relative_to(root).with_suffix("").parts))


def violations(root: Path) -> list[str]:
    bad = []
    for part in CORE + ("advisors", "fastpath", "pipeline"):
        for file in sorted((root / part).rglob("*.py")):
            zone = zone_of_file(root, file)
            third = THIRD_PARTY.get(zone)  # None: the producer may use any library
            for name in imported_modules(root, file):
                target = zone_of_module(root, name)
                if target is not None:
                    ok = target in ALLOWED[zone]
                elif third is None:
                    ok = True
                else:
                    top = name.split(".")[0]
                    ok = top in sys.stdlib_module_names or top in third or top == "__future__"
                if not ok:
                    bad.append(f"{file.relative_to(root).as_posix()} imports {name}")
    return bad


def test_the_tree_obeys_the_layering():
    trusted = [f for part in CORE for f in (ROOT / part).rglob("*.py") if zone_of_file(ROOT, f) == "trusted"]
    search = [f for f in (ROOT / "oracle").rglob("*.py") if zone_of_file(ROOT, f) == "search"]
    assert len(trusted) >= 20, "the trusted core should not be empty"
    assert len(search) >= 10 and (ROOT / "oracle" / SEARCH / "lp.py") in search
    assert violations(ROOT) == []


def _tree(tmp_path: Path) -> Path:
    for part in COMPONENTS + ("oracle/search",):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "validated" / "clean.py").write_text(
        "import math\nimport numpy\nfrom flint import arb\nfrom . import clean\nfrom softrank.exact import lp\n"
        "from softrank.oracle import checks\n")
    (tmp_path / "oracle" / "clean.py").write_text("import sympy\nfrom .checks import recheck\n")
    (tmp_path / "oracle" / "search" / "clean.py").write_text(
        "import numpy\nfrom softrank.advisors import highs\nfrom softrank.oracle import checks\n"
        "from ..checks import recheck\nfrom . import witness\nfrom softrank.exact.lp import check_result\n")
    (tmp_path / "advisors" / "clean.py").write_text("import highspy\nfrom . import simplex\n")
    (tmp_path / "fastpath" / "clean.py").write_text(
        "import torch\nfrom softrank.replay import reader\nfrom softrank.oracle.search.nerve import signed_simplices\n")
    (tmp_path / "pipeline" / "clean.py").write_text(
        "import fcntl\nfrom softrank.fastpath.runner import Journal\nfrom softrank.cli.replay import ReplayJob\n"
        "from softrank.exact.tolerance import Tolerance\nfrom .clean import run\n")
    (tmp_path / "cli" / "clean.py").write_text("import rich\nfrom softrank.fastpath import bracket\n"
                                               "from softrank.pipeline.run import run_pipeline\n")
    return tmp_path


@pytest.mark.parametrize("folder, planted", [
    # the trusted core reaching outwards
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
    # the trusted core reaching the advisors or the search
    ("oracle", "from softrank.advisors.highs import solve_via_basis\n"),
    ("oracle", "import softrank.advisors.highs\n"),
    ("exact", "from softrank.advisors import highs\n"),
    ("oracle", "from softrank.oracle.search.witness import search\n"),
    ("validated", "import softrank.oracle.search.witness\n"),
    ("oracle", "from .search import witness\n"),
    ("oracle", "from . import search\n"),
    ("replay", "def f():\n    from ..oracle.search.core import decide\n"),
    ("oracle", "import importlib\nm = importlib.import_module('softrank.oracle.search.core')\n"),
    # the search reaching the producer, the front ends, or a library outside the core's
    ("oracle/search", "from softrank.fastpath import capture\n"),
    ("oracle/search", "from ...cli.oracle import run\n"),
    ("oracle/search", "import torch\n"),
    ("oracle/search", "import highspy\n"),
    # advisors reaching into the core, the search or the producer
    ("advisors", "from softrank.exact.lp import LP\n"),
    ("advisors", "from softrank.oracle.search import lp\n"),
    ("advisors", "from softrank.fastpath import bracket\n"),
    # the producer reaching into the front ends
    ("fastpath", "from softrank.cli.args import parse_tolerances\n"),
    ("fastpath", "from ..cli import tables\n"),
    ("fastpath", "def f():\n    import softrank.cli\n"),
    # the producer or the core reaching up into the pipeline, the pipeline into the front ends
    ("fastpath", "from softrank.pipeline.run import run_pipeline\n"),
    ("fastpath", "def f():\n    from ..pipeline import lock\n"),
    ("validated", "import softrank.pipeline.summary\n"),
    ("pipeline", "from softrank.cli.args import parse_tolerances\n"),
    ("pipeline", "from ..cli.run import run\n"),
])
def test_a_planted_violation_is_caught(tmp_path, folder, planted):
    root = _tree(tmp_path)
    assert violations(root) == []
    (root / folder / "sneaky.py").write_text(planted)
    found = violations(root)
    assert found and all(f.startswith(f"{folder}/sneaky.py imports ") for f in found), found


def test_the_replay_command_does_not_load_the_producer():
    import subprocess

    code = ("import sys; from softrank.cli import main; import softrank.cli.replay, softrank.replay.engine; "
            "print(sorted(m for m in ('torch', 'transformers', 'softrank.fastpath.bracket.matrix') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# ---------------------------------------------------------------- no import circles

def _package_files(root: Path) -> list[Path]:
    """Every module of the package: the whole tree except tests/, build outputs and hidden folders."""
    return sorted(f for f in root.rglob("*.py")
                  if not any(p in ("tests", "build") or p.startswith(".") for p in f.relative_to(root).parts[:-1]))


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (``from X import y``: X.y when that is a module,
    else X; a bare component name is read below the package)."""
    files = {_module_name(root, f): f for f in _package_files(root)}
    graph = {}
    for name, file in files.items():
        edges = set()
        for base, alias in _imports(root, file):
            for target in (f"{base}.{alias}" if alias else None, base):
                if target and target.split(".")[0] in COMPONENTS:
                    target = "softrank." + target
                if target in files:
                    edges.add(target)
                    break
        edges.discard(name)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_circle_in_the_package():
    graph = import_graph(ROOT)
    assert len(graph) >= 100 and "softrank.oracle.search.core" in graph
    assert circles(graph) == []


def test_a_planted_circle_is_caught(tmp_path):
    root = _tree(tmp_path)
    (root / "oracle" / "search" / "a.py").write_text("from softrank.oracle.search import b\n")
    (root / "oracle" / "search" / "b.py").write_text("def f():\n    from .c import g\n    return g\n")
    (root / "oracle" / "search" / "c.py").write_text("import softrank.oracle.search.d\ndef g():\n    pass\n")
    (root / "oracle" / "search" / "d.py").write_text("from softrank.oracle.search.a import x\n")
    (root / "oracle" / "search" / "e.py").write_text("from softrank.oracle.search import a, b\n")  # into it, not back
    assert circles(import_graph(root)) == [[f"softrank.oracle.search.{x}" for x in "abcd"]]
    (root / "oracle" / "search" / "d.py").write_text("from softrank.oracle.search import e\n")
    assert circles(import_graph(root)) == [[f"softrank.oracle.search.{x}" for x in "abcde"]]
