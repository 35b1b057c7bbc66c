"""Totals and survivors of cosmic-ray sessions split between copies (not a test module).

    python report.py A.sqlite [B.sqlite ...]              per module: ran, killed, survived, pending
    python report.py --survivors A.sqlite [B.sqlite ...]  one line per survivor: module:line operator
                                                          occurrence | - original || + mutated

Mutants skipped by ``cr-filter-operators`` are not counted; a timeout counts as killed (as in
cosmic-ray's own report).
"""

import collections
import os
import sqlite3
import sys

RESULTS = ("select m.module_path, m.operator_name, m.occurrence, m.start_pos_row, w.test_outcome, w.diff "
           "from mutation_specs m join work_results w on m.job_id = w.job_id "
           "where w.worker_outcome != 'SKIPPED' order by m.module_path, m.start_pos_row")
PENDING = ("select m.module_path from mutation_specs m left join work_results w on m.job_id = w.job_id "
           "where w.job_id is null")


def totals(dbs):
    ran = collections.defaultdict(collections.Counter)
    for db in dbs:
        con = sqlite3.connect(db)
        for module, _, _, _, outcome, _ in con.execute(RESULTS):
            ran[module][outcome] += 1
        for (module,) in con.execute(PENDING):
            ran[module]["pending"] += 1
        con.close()
    for module, c in sorted(ran.items()):
        n = c["KILLED"] + c["SURVIVED"] + c["INCOMPETENT"]
        rate = f"{c['KILLED'] / n:.1%}" if n else "-"
        print(f"{module}: ran {n}, killed {c['KILLED']} ({rate}), survived {c['SURVIVED']}, "
              f"incompetent {c['INCOMPETENT']}, pending {c['pending']}")


def survivors(dbs):
    for db in dbs:
        con = sqlite3.connect(db)
        for module, op, occ, line, outcome, diff in con.execute(RESULTS):
            if outcome != "SURVIVED":
                continue
            change = [x[1:].strip() for x in diff.splitlines() if x[:1] in "+-" and x[:3] not in ("+++", "---")]
            print(f"{module}:{line} {op.split('/')[-1]} {occ} | - " + " || + ".join(change))
        con.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    missing = [a for a in args if a != "--survivors" and not os.path.isfile(a)]
    if missing:
        sys.exit(f"report.py: no session database {missing[0]}")
    if args and args[0] == "--survivors":
        survivors(args[1:])
    else:
        totals(args)
