"""Exactly one module of the package starts workers: ``fastpath/runner.py``.

Every non-test ``.py`` file is read with ``ast`` (so docstrings and comments that name Dask do not
count): importing a worker library (multiprocessing, concurrent.futures, dask, distributed,
threading, joblib, ray) or naming a worker-starting construct (ProcessPoolExecutor,
ThreadPoolExecutor, LocalCluster, Client, delayed, Thread, os.fork) is a hit; the hits must all be
in that one module.  Planted violations are caught."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = "fastpath/runner.py"
LIBRARIES = {"multiprocessing", "concurrent", "dask", "distributed", "threading", "joblib", "ray"}
CONSTRUCTS = {"ProcessPoolExecutor", "ThreadPoolExecutor", "LocalCluster", "Client", "delayed", "Thread", "fork"}


def worker_constructs(source: str) -> list[str]:
    """What in SOURCE starts (or imports what starts) worker processes or threads."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            hits += [a.name for a in node.names if a.name.split(".")[0] in LIBRARIES]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in LIBRARIES:
            hits.append(node.module)
        elif isinstance(node, ast.Name) and node.id in CONSTRUCTS:
            hits.append(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in CONSTRUCTS:
            hits.append(node.attr)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).split(".")[0] in LIBRARIES:
            hits.append(str(node.args[0].value))
    return hits


def package_files(root: Path) -> list[Path]:
    skip = {"tests", ".venv", "build", "dist"}
    return sorted(f for f in root.rglob("*.py")
                  if not skip & set(f.relative_to(root).parts) and not f.relative_to(root).parts[0].startswith("."))


def modules_starting_workers(root: Path) -> dict[str, list[str]]:
    out = {}
    for f in package_files(root):
        hits = worker_constructs(f.read_text(encoding="utf-8"))
        if hits:
            out[f.relative_to(root).as_posix()] = hits
    return out


def test_only_the_runner_starts_workers():
    found = modules_starting_workers(ROOT)
    assert set(found) == {RUNNER}, found
    assert {"LocalCluster", "Client"} <= set(found[RUNNER])


@pytest.mark.parametrize("planted", [
    "from concurrent.futures import ProcessPoolExecutor\n",
    "import multiprocessing\npool = multiprocessing.Pool(2)\n",
    "def f():\n    from dask.distributed import LocalCluster\n    return LocalCluster()\n",
    "import dask\nx = dask.compute(1)\n",
    "from dask import delayed\n",
    "import importlib\nm = importlib.import_module('multiprocessing')\n",
    "import threading\nthreading.Thread(target=print).start()\n",
    "import os\npid = os.fork()\n",
    "def f(cluster):\n    return cluster.Client()\n",
])
def test_a_planted_worker_is_caught(tmp_path, planted):
    (tmp_path / "fastpath").mkdir()
    (tmp_path / "fastpath" / "runner.py").write_text("from dask.distributed import Client, LocalCluster\n")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "clean.py").write_text('"""Runs on dask.distributed (a LocalCluster)."""\nimport json\n')
    assert set(modules_starting_workers(tmp_path)) == {RUNNER}
    (tmp_path / "cli" / "sneaky.py").write_text(planted)
    assert set(modules_starting_workers(tmp_path)) == {RUNNER, "cli/sneaky.py"}
