"""Keep the README true: its two commands are the ones .ci/run and ./dev provide, and its
trusted-core table lists every trusted file with its current line count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _table_module():
    spec = importlib.util.spec_from_file_location("trusted_core_table", ROOT / "docs" / "trusted_core_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_trusted_core_table_is_current():
    mod = _table_module()
    assert len(mod.trusted_files()) >= 10
    assert mod.table() in README, "README's trusted-core table is stale: rerun docs/trusted_core_table.py"


def test_the_study_only_trusted_modules_lie_on_their_own_trust_lines():
    """The trusted modules that only the theorem checks, the oracle's search or the family closures
    use are on a trust line of their own, not trusted by their folder alone."""
    mod = _table_module()
    lines = {name: {f.relative_to(ROOT).as_posix() for f in files} for name, files, _ in mod.trust_lines()}
    theorem = lines["theorem checks' trust line"]
    assert {"validated/tau.py", "validated/kappa_certificates.py", "validated/softmax_perturbation.py"} <= theorem
    assert "exact/lp.py" in lines["oracle search's LP checks"] and "oracle/families.py" in lines["family closures"]
    assert "exact/lp.py" not in lines["oracle re-checker"] and "replay/engine.py" not in theorem


def test_the_two_commands():
    assert "./dev run" in README and "./dev test" in README
    ci = (ROOT / ".ci" / "run").read_text()
    assert [line for line in ci.splitlines() if line.strip() and not line.startswith("#")][-1].strip() == "./dev test"


def test_every_cli_subcommand_is_documented():
    from softrank.cli import COMMANDS

    for name in COMMANDS:
        assert f"softrank {name}" in README, name


def test_nothing_points_outside_the_repository():
    """The repository stands alone: no path outside it, no design-note sections, no work-item numbers."""
    import re
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    design = "DES" + "IGN"  # spelled in two pieces so that this line does not match itself
    pattern = re.compile(rf"\.\./shared|shared/{design}|{design}(\.md| section)|\b[Ii]ssue \d|\b[Aa]cceptance (item )?\d")
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix not in (".py", ".md", ".toml", ".txt", "") or not path.is_file():
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{name}:{i}: {line.strip()[:100]}")
    assert hits == []
