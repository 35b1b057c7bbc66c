"""Run cosmic-ray sessions on two copies of the tree, one per core (not a test module).

    python tests/mutation/campaign.py WORKDIR SESSION... [--timeout S] [--seed N]

SESSION names a table of ``tests/mutation/sessions.toml``.  The script copies the working tree
(tracked and untracked files, not ignored ones) to WORKDIR/a and WORKDIR/b, each importable as
``softrank`` through WORKDIR/<copy>/pkg, starts a fork server (forkserve.py) in each, and for each
session: ``cosmic-ray init`` and ``cr-filter-operators`` (``|`` excluded: in these modules it occurs
only in annotations), a seeded random split of the mutants between the copies (split_session.py),
and ``cosmic-ray exec`` on both at once under ``nice``.  A session already initialised in WORKDIR
is continued, not restarted.  Totals: ``python tests/mutation/report.py WORKDIR/[ab]/SESSION.sqlite``.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent
CONFIG = """[cosmic-ray]
module-path = {modules}
timeout = 300.0
excluded-modules = []
test-command = {command}
[cosmic-ray.distributor]
name = "local"
[cosmic-ray.filters.operators-filter]
exclude-operators = ["core/ReplaceBinaryOperator_BitOr_.*"]
"""


def copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.split(b"\0")
    for f in filter(None, files):
        src, dst = REPO / f.decode(), dest / f.decode()
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (dest / "pkg").mkdir(exist_ok=True)
    if not (dest / "pkg" / "softrank").exists():
        (dest / "pkg" / "softrank").symlink_to(dest)


def command(sock: Path, timeout: int, tests: str, then: str | None) -> str:
    run = f"{sys.executable} {HERE / 'forkserve.py'} run {sock} {timeout} -x -q -p no:cacheprovider "
    cmd = run + " ".join(tests.split())
    if then:
        cmd = "bash -c " + shlex.quote(f"{cmd} && {run}{then}")
    return cmd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", type=Path)
    ap.add_argument("sessions", nargs="+")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per mutant's test run")
    ap.add_argument("--seed", type=int, default=20261203)
    a = ap.parse_args()
    sessions = tomllib.loads((HERE / "sessions.toml").read_text())
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    servers = []
    for c in "ab":
        d = a.workdir / c
        if not d.exists():
            d.mkdir(parents=True)
            copy_tree(d)
        e = dict(env, PYTHONPATH=str(d / "pkg"), WARM_TESTS="tests/oracle tests/validated tests/soundness")
        servers.append(subprocess.Popen(["nice", "-n", "5", sys.executable, str(HERE / "forkserve.py"), "serve",
                                         str(a.workdir / f"{c}.sock")], cwd=d, env=e,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        for name in a.sessions:
            s = sessions[name]
            cmds = {c: command(a.workdir / f"{c}.sock", a.timeout, s["tests"], s.get("then")) for c in "ab"}
            for c in "ab":
                (a.workdir / c / f"{name}.toml").write_text(
                    CONFIG.format(modules=repr(s["modules"]).replace("'", '"'), command=repr(cmds[c])))
            da, db = a.workdir / "a" / f"{name}.sqlite", a.workdir / "b" / f"{name}.sqlite"
            if not da.exists():
                cfg = a.workdir / "a" / f"{name}.toml"
                subprocess.run([BIN / "cosmic-ray", "init", cfg, da], cwd=da.parent, env=env, check=True)
                subprocess.run([BIN / "cr-filter-operators", da, cfg], cwd=da.parent, env=env, check=True)
                subprocess.run([sys.executable, HERE / "split_session.py", da, db, str(a.seed)], check=True)
            for c in "ab":  # a test failing on unmutated code would count every mutant as killed
                if subprocess.run(cmds[c], shell=True, cwd=a.workdir / c, env=env).returncode != 0:
                    sys.exit(f"campaign.py: the tests of session {name} fail on the unmutated copy {c}")
            print(f"== {name} start {time.strftime('%H:%M:%S')}", flush=True)
            runs = [subprocess.Popen(["nice", "-n", "5", BIN / "cosmic-ray", "exec", f"{name}.toml", f"{name}.sqlite"],
                                     cwd=a.workdir / c, env=dict(env, PYTHONPATH=str(a.workdir / c / "pkg")))
                    for c in "ab"]
            for r in runs:
                r.wait()
            print(f"== {name} end {time.strftime('%H:%M:%S')}", flush=True)
    finally:
        for s in servers:
            s.kill()


if __name__ == "__main__":
    main()
