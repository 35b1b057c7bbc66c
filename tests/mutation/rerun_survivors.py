"""Re-run the survivors of cosmic-ray session databases against the current tree (not a test module).

    python tests/mutation/rerun_survivors.py WORKDIR SESSION DB [DB ...] [--jobs 2] [--tests "PYTEST ARGS"]

A survivor's diff changes one line; the script applies it by text to a copy of the working tree
(WORKDIR/<worker>, tracked and untracked files, importable as ``softrank`` through
WORKDIR/<worker>/pkg): the original line must occur exactly once in the module as it is now, else
the mutant is reported MOVED (its code was rewritten since).  Then the session's test command
(``sessions.toml``: ``tests``, and ``then`` when the first part passes) runs on the copy: a failure
is KILLED.  One line per mutant, then the totals.  Used when tests were added after a campaign
(and the module was edited, so cosmic-ray's occurrence numbers no longer point at the same code).
"""

import argparse
import concurrent.futures as cf
import os
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

from campaign import copy_tree  # the same copy of the tree as the campaign's (this folder is on sys.path)

HERE = Path(__file__).resolve().parent
QUERY = ("select m.module_path, m.start_pos_row, w.diff from mutation_specs m join work_results w "
         "on m.job_id = w.job_id where w.test_outcome = 'SURVIVED' order by m.module_path, m.start_pos_row")


def survivors(dbs):
    out = []
    for db in dbs:
        con = sqlite3.connect(db)
        for module, row, diff in con.execute(QUERY):
            minus = [x[1:] for x in diff.splitlines() if x.startswith("-") and not x.startswith("---")]
            plus = [x[1:] for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")]
            out.append((module, row, minus, plus))
        con.close()
    return out


def run_one(copy: Path, session: dict, mutant) -> str:
    module, row, minus, plus = mutant
    path = copy / module
    text = path.read_text()
    old, new = "\n".join(minus) + "\n", "\n".join(plus) + "\n"
    if len(minus) != 1 or text.count(old) != 1:
        return "MOVED"
    path.write_text(text.replace(old, new))
    env = dict(os.environ, PYTHONPATH=str(copy / "pkg"), PYTHONDONTWRITEBYTECODE="1")
    try:
        for part in ("tests", "then"):
            if not session.get(part):
                continue
            cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *session[part].split()]
            try:
                r = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=600)
            except subprocess.TimeoutExpired:
                return "KILLED"  # as cosmic-ray counts a timeout
            if r.returncode != 0:
                return "KILLED"
        return "SURVIVED"
    finally:
        path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workdir")
    ap.add_argument("session")
    ap.add_argument("dbs", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tests", help="pytest arguments to run instead of the session's (a subset of its "
                                    "tests: a mutant they kill is killed by the session's command too)")
    args = ap.parse_args()
    session = tomllib.loads((HERE / "sessions.toml").read_text())[args.session]
    if args.tests:
        session = {"tests": args.tests}
    work = Path(args.workdir)
    copies = []
    for i in range(args.jobs):
        c = work / f"rerun{i}"
        if c.exists():
            shutil.rmtree(c)
        copy_tree(c)
        copies.append(c)
    mutants = survivors(args.dbs)
    chunks = [mutants[i::args.jobs] for i in range(args.jobs)]
    totals = {"KILLED": 0, "SURVIVED": 0, "MOVED": 0}

    def work_on(i):
        res = []
        for m in chunks[i]:
            outcome = run_one(copies[i], session, m)
            print(f"{outcome:8} {m[0]}:{m[1]} | - {m[2][0].strip() if m[2] else ''} || + "
                  f"{m[3][0].strip() if m[3] else ''}", flush=True)
            res.append(outcome)
        return res

    with cf.ThreadPoolExecutor(args.jobs) as pool:
        for res in pool.map(work_on, range(args.jobs)):
            for o in res:
                totals[o] += 1
    print(f"survivors re-run: {len(mutants)}; killed {totals['KILLED']}, still surviving "
          f"{totals['SURVIVED']}, moved {totals['MOVED']}")


if __name__ == "__main__":
    main()
