"""Imports go one way: front ends (cli/, api/) -> pipeline (pipeline/) -> results room (findings/),
studies (studies/) and benchmarks (bench/) -> producer (fastpath/) -> search -> trusted core.  The
producer and the core never import the pipeline, and the pipeline never imports a front end.

The trusted core is every file under validated/, exact/, oracle/ and replay/ outside a folder named
``search``, and nothing else.  A trusted file imports only the standard library, numpy,
python-flint, sympy, mpmath and other trusted files: never an advisor (advisors/) and never a
search module.  A search folder (oracle/search/: witness search, decoders, sub-cells, nerve cycles,
branch and bound, the HiGHS-backed LP solve) is untrusted: it may import the same libraries, the
advisors and the trusted core, never the producer or the front ends.  Advisors import only the
standard library, numpy, python-flint, highspy and each other.  The producer never imports the
front ends, the results room, a study or a benchmark; a study never imports a benchmark, nor a
benchmark a study (both may import the front ends' shared helpers, the room, the producer, the
search, the advisors and the core).  The results room imports the standard library, pyarrow, matplotlib,
threadpoolctl, the trusted core, itself and of the producer only ``ROOM_PRODUCER`` (atomic files and
path guards, the worker runner, the model label): never the front ends, torch or the producer's
search.  The Python API (api/) never imports the command line (cli/), and neither front end imports
a private (``_``) name of the room.  Imports are read with ``ast`` (absolute, relative, inside functions, and
``importlib.import_module`` / ``__import__`` calls with a literal name).

The front ends and the pipeline (cli/, api/, pipeline/) import of the producer only its public face,
``PRODUCER_PUBLIC``: the float64 quantities, the worker runner, the atomic files and the record
writer, the capture's entry points (extraction, live capture for the Python API, the model label,
the panels), the bracket of one matrix and the bracket job, the tighten job and the demonstration
store.  Inside the producer imports go down its floors (``PRODUCER_FLOORS``), never up and never
across to another place on the same floor:

    0  store/files.py (atomic files), float64.py, operator_cache.py   the shared bottom
    1  runner.py (on the files), store/ (the record writer), upper/, lower/
    2  capture/ (writes records through the writer)
    3  bracket/ (the phases over upper/ and lower/, the job over a store)
    4  tighten/ (starts from bracket's verdicts), demo.py (bracketed synthetic records)

so store/ never imports capture/ or bracket/, and upper/ and lower/ never import each other.

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
COMPONENTS = CORE + ("advisors", "fastpath", "findings", "pipeline", "studies", "bench", "cli", "api")
THIRD_PARTY = {
    "trusted": {"numpy", "flint", "sympy", "mpmath"},
    "search": {"numpy", "flint", "sympy", "mpmath"},
    "advisors": {"numpy", "flint", "highspy"},
    "findings": {"pyarrow", "matplotlib", "threadpoolctl"},
}
# the producer's public modules the results room may import
ROOM_PRODUCER = ("softrank.fastpath.store.files", "softrank.fastpath.runner", "softrank.fastpath.capture.labels")
# the neutral module every zone may import (the one error type); it imports only the standard library
NEUTRAL = ("softrank.errors",)
# zone -> zones it may import ("root": the package root, for its version)
ALLOWED = {
    "trusted": {"trusted"},
    "search": {"trusted", "search", "advisors"},
    "advisors": {"advisors"},
    "fastpath": {"trusted", "search", "advisors", "fastpath", "root"},
    "findings": {"trusted", "findings", "root"},  # and ROOM_PRODUCER
    "api": {"trusted", "search", "advisors", "fastpath", "findings", "api", "root"},
    "cli": {"trusted", "search", "advisors", "fastpath", "findings", "pipeline", "studies", "bench", "cli", "root"},
    "studies": {"trusted", "search", "advisors", "fastpath", "findings", "cli", "studies", "root"},
    "bench": {"trusted", "search", "advisors", "fastpath", "findings", "cli", "bench", "root"},
    "pipeline": {"trusted", "search", "advisors", "fastpath", "findings", "pipeline", "root"},
}
FRONT_ENDS = ("cli", "api")
# the producer's public face: the only producer modules (and the names in them) that the front ends
# and the pipeline import; everything else under fastpath/ is free to change inside
PRODUCER_PUBLIC = (
    "softrank.fastpath.float64",  # the float64 quantities (row softmax, row l1 norms)
    "softrank.fastpath.runner",  # the worker runner: journaled jobs over records, threads, clusters
    "softrank.fastpath.store.files",  # atomic files, output-path guards, input reads
    "softrank.fastpath.store.writer",  # the record writer and the store's index
    "softrank.fastpath.capture.extract",  # extraction of a model into a store
    "softrank.fastpath.capture.live",  # live capture for the Python API
    "softrank.fastpath.capture.lens",  # live capture of TransformerLens (and nnsight-wrapped) models
    "softrank.fastpath.capture.labels",  # the model label of a record
    "softrank.fastpath.capture.locate",  # where a model is (a path checked before torch is imported)
    "softrank.fastpath.capture.panels",  # softrank run's panels
    "softrank.fastpath.bracket.matrix",  # the bracket of one matrix
    "softrank.fastpath.bracket.store",  # the bracket job over a store
    "softrank.fastpath.tighten.store",  # the tighten job over a store
    "softrank.fastpath.demo",  # the demonstration store
)
PUBLIC_ONLY = ("cli", "api", "pipeline")  # zones that may import only PRODUCER_PUBLIC of the producer
# floors inside the producer: a place (a module or folder below fastpath/) imports only itself and
# places on a lower floor (never a higher one, nor another place on its own floor)
PRODUCER_FLOORS = {
    "store/files": 0, "float64": 0, "operator_cache": 0,
    "runner": 1, "store": 1, "upper": 1, "lower": 1,
    "capture": 2,
    "bracket": 3,
    "tighten": 4, "demo": 4,
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
    parts = name.split(".")
    if parts[0] == "softrank":
        return _zone(root, parts[1:])
    if parts[0] in COMPONENTS:  # a bare component name
        return _zone(root, parts)
    return None


def zone_of_file(root: Path, file: Path) -> str:
    return _zone(root, list(file.relative_to(root).with_suffix("").parts))


def _allowed(root: Path, file: Path, zone: str, name: str, target: str) -> bool:
    """May FILE (in ZONE) import the module NAME of zone TARGET?"""
    if name in NEUTRAL or any(name.startswith(n + ".") for n in NEUTRAL):
        return True  # the shared error type: every zone, the trusted core included
    if target in ALLOWED[zone]:
        return True
    if zone == "findings" and target == "fastpath":
        return any(name == m or name.startswith(m + ".") for m in ROOM_PRODUCER)
    return False


def _private_room_names(root: Path, file: Path) -> list[str]:
    """``from softrank.findings.X import _y`` in a front end: the room's private names stay inside it."""
    return [f"{base}.{alias}" for base, alias in _imports(root, file)
            if alias and alias.startswith("_") and not alias.startswith("__") and zone_of_module(root, base) == "findings"]


def _is_public(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in PRODUCER_PUBLIC)


def _producer_internals(root: Path, file: Path) -> list[str]:
    """The producer modules FILE imports outside ``PRODUCER_PUBLIC`` (``from X import y``: public
    when X.y or X is a public module or a name in one)."""
    out = []
    for base, alias in _imports(root, file):
        if zone_of_module(root, base) != "fastpath":
            continue
        full = f"{base}.{alias}" if alias else base
        if not (_is_public(full) or _is_public(base)):
            out.append(full)
    return out


def violations(root: Path) -> list[str]:
    bad = []
    for part in CORE + ("advisors", "fastpath", "findings", "pipeline", "studies", "bench") + FRONT_ENDS:
        for file in sorted((root / part).rglob("*.py")):
            zone = zone_of_file(root, file)
            third = THIRD_PARTY.get(zone)  # None: the producer, the studies, benchmarks and front ends may use any library
            names = imported_modules(root, file)
            if zone in FRONT_ENDS:
                private = _private_room_names(root, file)
                names = [n for n in names if n not in private]
                bad += [f"{file.relative_to(root).as_posix()} imports {n} (private to the room)" for n in private]
            if zone in PUBLIC_ONLY:
                bad += [f"{file.relative_to(root).as_posix()} imports {n} (inside the producer)"
                        for n in _producer_internals(root, file)]
            for name in names:
                target = zone_of_module(root, name)
                if target is not None:
                    ok = _allowed(root, file, zone, name, target)
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
    assert (ROOT / "studies" / "theorem" / "command.py").is_file() and (ROOT / "bench" / "command.py").is_file()
    assert violations(ROOT) == []


def test_the_neutral_error_module_imports_only_the_standard_library():
    names = imported_modules(ROOT, ROOT / "errors.py")
    assert all(n.split(".")[0] in sys.stdlib_module_names or n == "__future__" for n in names), names
    assert "softrank.errors" in imported_modules(ROOT, ROOT / "replay" / "reader.py")  # the core uses it


# the clean modules of the planted tree (``_tree``): (path, text), written in this order
CLEAN_FILES = [
    ("validated/clean.py",
     "import math\nimport numpy\nfrom flint import arb\nfrom . import clean\nfrom softrank.exact import lp\n"
     "from softrank.oracle import checks\nfrom softrank.errors import InputError\n"),
    ("oracle/clean.py", "import sympy\nfrom .checks import recheck\n"),
    ("oracle/search/clean.py",
     "import numpy\nfrom softrank.advisors import highs\nfrom softrank.oracle import checks\n"
     "from ..checks import recheck\nfrom . import witness\nfrom softrank.exact.lp import check_result\n"),
    ("advisors/clean.py", "import highspy\nfrom . import simplex\n"),
    ("fastpath/clean.py",
     "import torch\nfrom softrank.replay import reader\nfrom softrank.oracle.search.nerve import signed_simplices\n"),
    ("cli/clean.py",
     "import rich\nfrom softrank.fastpath.bracket import store\nfrom softrank.findings.report import write_report\n"
     "from softrank.oracle.search import decide\n"),
    ("findings/clean.py",
     "import json\nimport pyarrow as pa\nimport matplotlib\nfrom softrank.replay.engine import replay_record\n"
     "from softrank.fastpath.store.files import atomic_write\nfrom softrank.fastpath.runner import RecordsJob\n"
     "from . import tables\nfrom .report_page import _e\nfrom softrank import __version__\n"),
    ("api/clean.py",
     "from softrank.findings.replay_rows import result_rows\nfrom softrank.fastpath.bracket.matrix import resolved\n"
     "from softrank.api.records import Record\n"),
    ("studies/clean.py",
     "import cvxpy\nfrom softrank.cli.args import check_count\nfrom softrank.fastpath import bracket\n"
     "from softrank.oracle.search import witness\nfrom softrank.advisors import highs\nfrom softrank.validated import tau\n"
     "from softrank.findings.replay_table import read_parquet_rows\n"),
    ("bench/clean.py",
     "import pyarrow\nfrom softrank.cli.args import check_count\nfrom softrank.fastpath import demo\n"
     "from softrank.replay import engine\n"),
    ("pipeline/clean.py",
     "import fcntl\nfrom softrank.fastpath.runner import Journal\nfrom softrank.findings.replay_job import ReplayJob\n"
     "from softrank.exact.tolerance import Tolerance\nfrom .clean import run\n"),
    ("cli/clean.py",
     "import rich\nfrom softrank.fastpath.bracket import store\nfrom softrank.pipeline.run import run_pipeline\n"),
]


def _tree(tmp_path: Path) -> Path:
    for part in COMPONENTS + ("oracle/search",):
        (tmp_path / part).mkdir()
        (tmp_path / part / "__init__.py").write_text("")
    for rel, text in CLEAN_FILES:  # in order: the second cli/clean.py replaces the first
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize("folder, planted", [
    # the trusted core reaching outwards
    ("replay", "import torch\n"),
    ("validated", "from transformers import AutoModel\n"),
    ("validated", "from softrank import __version__\n"),  # the package root is not the neutral module
    ("oracle", "from softrank.fastpath import capture\n"),
    ("replay", "from ..fastpath.capture import run\n"),
    ("exact", "import importlib\nm = importlib.import_module('softrank.fastpath.capture.models')\n"),
    ("validated", "def f():\n    import torch.nn as nn\n    return nn\n"),
    ("replay", "import pyarrow\n"),
    ("replay", "from rich.console import Console\n"),
    ("oracle", "import dask\n"),
    ("exact", "import cvxpy\n"),
    ("replay", "from softrank.findings.replay_job import replay_store\n"),
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
    # the producer reaching up into a study or a benchmark
    ("fastpath", "from softrank.studies.theorem.kappa import kappa_bracket_record\n"),
    ("fastpath", "from ..studies import widths\n"),
    ("fastpath", "def f():\n    import softrank.bench.scale\n"),
    ("fastpath", "import importlib\nm = importlib.import_module('softrank.bench.command')\n"),
    # the trusted core or the search reaching a study or a benchmark
    ("validated", "from softrank.studies.theorem.record_logits import logits_float\n"),
    ("replay", "from softrank.bench import store\n"),
    ("oracle/search", "from softrank.studies.kappa import kappa_sdp\n"),
    ("advisors", "import softrank.bench\n"),
    # a study and a benchmark reaching each other
    ("studies", "from softrank.bench.scale import measure\n"),
    ("bench", "from ..studies.attack import attack\n"),
    # the producer reaching into the results room
    ("fastpath", "from softrank.findings.replay_table import read_replay_table\n"),
    # the Python API reaching into the command line
    ("api", "from softrank.cli.paths import output_dir\n"),
    ("api", "def f():\n    from ..cli import report\n"),
    ("api", "import softrank.cli.replay\n"),
    # the results room reaching into a front end, the producer's inner modules, or torch
    ("findings", "from softrank.cli.paths import replay_tables\n"),
    ("findings", "def f():\n    from ..cli.args import path_arg\n"),
    ("findings", "from softrank.api.results import Results\n"),
    ("findings", "from softrank.fastpath.bracket.matrix import resolved\n"),
    ("findings", "from softrank.fastpath.store import writer\n"),
    ("findings", "import torch\n"),
    ("findings", "from rich.console import Console\n"),
    # a front end reaching for a private name of the room
    ("cli", "from softrank.findings.report import _write\n"),
    ("api", "def f():\n    from softrank.findings.regress import _ends\n"),
    # the producer or the core reaching up into the pipeline, the pipeline into the front ends
    ("fastpath", "from softrank.pipeline.run import run_pipeline\n"),
    ("fastpath", "def f():\n    from ..pipeline import lock\n"),
    ("validated", "import softrank.pipeline.summary\n"),
    ("pipeline", "from softrank.cli.args import parse_tolerances\n"),
    ("pipeline", "from ..cli.run import run\n"),
])
def test_a_planted_violation_is_caught(tmp_path, folder, planted):
    _planted_violations(_tree(tmp_path), folder, planted)


def _planted_violations(root: Path, folder: str, planted: str) -> list[str]:
    """The violations found once ``planted`` is written to ``folder/sneaky.py`` of the clean tree
    ``root``: at least one, and each names that file."""
    assert violations(root) == []
    (root / folder / "sneaky.py").write_text(planted)
    found = violations(root)
    assert found and all(f.startswith(f"{folder}/sneaky.py imports ") for f in found), found
    return found


def test_the_replay_command_does_not_load_the_producer():
    import subprocess

    code = ("import sys; from softrank.cli import main; import softrank.cli.replay, softrank.replay.engine; "
            "print(sorted(m for m in ('torch', 'transformers', 'softrank.fastpath.bracket.matrix') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


# ---------------------------------------------------------------- floors inside the producer

def producer_place(root: Path, name: str) -> str | None:
    """The place of a producer module: ``store/files`` or the first part below fastpath/ (a folder
    or a top-level module); None for the package fastpath itself or a name outside the producer."""
    parts = name.split(".")
    if parts[:2] != ["softrank", "fastpath"] or len(parts) == 2:
        return None
    if parts[2:4] == ["store", "files"]:
        return "store/files"
    return parts[2]


def _resolved(root: Path, file: Path) -> list[str]:
    """The modules FILE imports: for ``from X import y`` X.y when that is a module (a file or a
    package of the tree), else X."""
    def is_module(name: str) -> bool:
        rel = Path(*name.split(".")[1:])
        return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()
    return [f"{base}.{alias}" if alias and is_module(f"{base}.{alias}") else base for base, alias in _imports(root, file)]


def floor_violations(root: Path) -> list[str]:
    """Every import inside the producer that goes to a higher floor or across to another place on
    its own floor (``PRODUCER_FLOORS``), and every producer module whose place has no floor."""
    bad = []
    for file in sorted((root / "fastpath").rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        here = producer_place(root, _module_name(root, file))
        if here is None:
            continue
        if here not in PRODUCER_FLOORS:
            bad.append(f"{rel}: {here} has no floor")
            continue
        for name in _resolved(root, file):
            there = producer_place(root, name)
            if there is None or there == here:
                continue
            if PRODUCER_FLOORS.get(there, len(PRODUCER_FLOORS)) >= PRODUCER_FLOORS[here]:
                bad.append(f"{rel} imports {name} ({here} on floor {PRODUCER_FLOORS[here]}, "
                           f"{there} on floor {PRODUCER_FLOORS.get(there)})")
    return bad


def test_the_producer_obeys_its_floors():
    assert {producer_place(ROOT, _module_name(ROOT, f)) for f in (ROOT / "fastpath").rglob("*.py")} - {None} \
        == set(PRODUCER_FLOORS)
    assert floor_violations(ROOT) == []


def _producer_tree(tmp_path: Path) -> Path:
    """A producer in its places, each importing what the real one does (nothing above its floor)."""
    files = {
        "fastpath/__init__.py": "", "fastpath/store/__init__.py": "",
        "fastpath/float64.py": "import numpy\n",
        "fastpath/operator_cache.py": "import numpy\n",
        "fastpath/store/files.py": "import os\n",
        "fastpath/runner.py": "from softrank.fastpath.store.files import write_text\n",
        "fastpath/store/writer.py": "from .files import write_csv\n",
        "fastpath/upper/minimax.py": "from softrank.fastpath.float64 import MARGIN\nfrom ..operator_cache import OperatorCache\n",
        "fastpath/upper/refine.py": "from .minimax import descend\n",
        "fastpath/lower/decoder.py": "from softrank.fastpath.float64 import decoder_value\n",
        "fastpath/capture/labels.py": "import re\n",
        "fastpath/capture/operators.py": "from softrank.fastpath.store.writer import RecordWriter\n"
                                         "from softrank.fastpath.float64 import rowsoftmax64\nfrom . import labels\n",
        "fastpath/bracket/matrix.py": "from softrank.fastpath.upper import refine\nfrom softrank.fastpath.lower.decoder import grow\n",
        "fastpath/bracket/store.py": "from softrank.fastpath.capture.labels import record_label\n"
                                     "from softrank.fastpath.runner import RecordsJob\nfrom softrank.fastpath import store\n"
                                     "from softrank.fastpath.store import writer\nfrom .matrix import bracket_matrix\n",
        "fastpath/tighten/upper.py": "from softrank.fastpath.bracket.matrix import verdict\n"
                                     "from softrank.fastpath.upper.minimax import DescentSettings\n",
        "fastpath/demo.py": "from softrank.fastpath.bracket.matrix import BUDGETS\nfrom softrank.fastpath.store.writer import RecordWriter\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize("path, planted", [
    ("fastpath/float64.py", "from softrank.fastpath.upper.minimax import adam_step\n"),
    ("fastpath/operator_cache.py", "def f():\n    from .lower.decoder import grow\n"),
    ("fastpath/operator_cache.py", "from softrank.fastpath import float64\n"),  # across its own floor
    ("fastpath/store/files.py", "from softrank.fastpath.runner import Journal\n"),
    ("fastpath/runner.py", "from softrank.fastpath.store.writer import RecordWriter\n"),
    ("fastpath/upper/sneaky.py", "from softrank.fastpath.bracket.matrix import BUDGETS\n"),
    ("fastpath/upper/sneaky.py", "from softrank.fastpath.lower import decoder\n"),  # across its own floor
    ("fastpath/upper/sneaky.py", "import importlib\nm = importlib.import_module('softrank.fastpath.tighten.upper')\n"),
    ("fastpath/lower/sneaky.py", "def f():\n    from ..tighten.upper import descend_minimax\n"),
    ("fastpath/store/sneaky.py", "from softrank.fastpath.capture.labels import record_label\n"),
    ("fastpath/store/sneaky.py", "from softrank.fastpath.bracket.matrix import verdict\n"),  # the old demo
    ("fastpath/capture/sneaky.py", "from softrank.fastpath.bracket.store import BracketJob\n"),
    ("fastpath/bracket/sneaky.py", "import softrank.fastpath.tighten.upper\n"),
    ("fastpath/bracket/sneaky.py", "from softrank.fastpath.demo import build_demo_store\n"),
    ("fastpath/tighten/sneaky.py", "from softrank.fastpath.demo import build_demo_store\n"),  # across its own floor
    ("fastpath/newroom.py", "import numpy\n"),  # a place without a floor
])
def test_a_planted_floor_violation_is_caught(tmp_path, path, planted):
    root = _producer_tree(tmp_path)
    assert floor_violations(root) == []
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(planted)
    found = floor_violations(root)
    assert found and all(f.startswith(f"{path}") for f in found), found


@pytest.mark.parametrize("folder, planted", [
    ("cli", "from softrank.fastpath.upper.minimax import DescentSettings\n"),
    ("cli", "from softrank.fastpath.capture import session\n"),
    ("cli", "def f():\n    from ..fastpath.tighten.upper import descend_minimax\n"),
    ("api", "from softrank.fastpath.capture.session import valid_positions\n"),
    ("api", "import softrank.fastpath.operator_cache\n"),
    ("api", "import importlib\nm = importlib.import_module('softrank.fastpath.lower.decoder')\n"),
    ("pipeline", "from softrank.fastpath.bracket import matrix_internals\n"),
    ("pipeline", "from softrank.fastpath import capture\n"),
])
def test_a_front_end_reaching_inside_the_producer_is_caught(tmp_path, folder, planted):
    root = _tree(tmp_path)
    (root / "cli" / "public.py").write_text(
        "from softrank.fastpath.store.files import atomic_write\nfrom softrank.fastpath.capture import panels\n"
        "from softrank.fastpath.bracket.store import BracketJob\nimport softrank.fastpath.runner\n"
        "from softrank.fastpath.tighten.store import tighten_store\nfrom softrank.fastpath.demo import DEMO_STYLE\n")
    (root / "api" / "public.py").write_text(
        "from softrank.fastpath.capture.live import capturing\nfrom softrank.fastpath.store.writer import RecordWriter\n")
    found = _planted_violations(root, folder, planted)
    assert all(f.endswith("(inside the producer)") for f in found), found


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
