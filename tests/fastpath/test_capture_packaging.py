"""Without torch (simulated: a ``sys.meta_path`` finder that refuses torch and transformers),
``softrank.capture`` raises one clear ``ImportError`` naming the ``producer`` extra, and
``softrank extract`` prints one line naming it (exit code 2); the extras in pyproject.toml hold
what the producer and the studies import."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCK = """
import sys
class _NoProducer:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None
sys.meta_path.insert(0, _NoProducer())
"""


def _run(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


def test_capture_without_torch_names_the_extra(tmp_path):
    code = """
import softrank
try:
    with softrank.capture(object()):
        pass
except ImportError as err:
    print("ERROR:", err)
from softrank.api.capturing import capture
try:
    with capture(object()):
        pass
except ImportError as err:
    print("ERROR:", err)
print("torch" in sys.modules and sys.modules["torch"] is not None)
"""
    proc = _run(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3 and lines[2] == "False", lines
    for line in lines[:2]:
        assert line.startswith("ERROR: softrank.capture needs torch and transformers") and \
            "pip install 'softrank[producer]'" in line


def test_extract_without_torch_is_one_line(tmp_path):
    code = """
from softrank.cli import main
sys.exit(main(["extract", "--model", "minilm", "--out", "store", "--no-progress"]))
"""
    proc = _run(code, tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    err = [line for line in proc.stderr.strip().splitlines() if line]
    assert len(err) == 1 and "softrank[producer]" in err[0] and "torch" in err[0], err
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("record.json"))


def test_extras_in_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    producer = " ".join(extras["producer"])
    assert "torch" in producer and "transformers>=" in producer and "transformers>=5," not in producer
    assert "cvxpy" not in producer and "clarabel" not in producer  # used by one study only
    assert any(d.startswith("cvxpy") for d in extras["kappa"]) and any(d.startswith("clarabel") for d in extras["kappa"])
    assert not any(d.startswith(("cvxpy", "clarabel")) for d in project["dependencies"])
