"""Split an initialised cosmic-ray session between two copies, in random order (not a test module).

    python split_session.py A.sqlite B.sqlite SEED

After ``cosmic-ray init`` (and ``cr-filter-operators``) wrote A.sqlite, the pending jobs are
shuffled with ``random.Random(SEED)``; A keeps the even positions and a copy B the odd ones, each
in the shuffled order.  Two ``cosmic-ray exec`` runs (one per copy of the tree, one per core) then
share the work, and a run stopped early has tested a uniform random sample of its module.
"""

import random
import shutil
import sqlite3
import sys


def split(a, b, seed):
    con = sqlite3.connect(a)
    done = {r[0] for r in con.execute("select job_id from work_results")}
    jobs = sorted(r[0] for r in con.execute("select job_id from work_items") if r[0] not in done)
    random.Random(seed).shuffle(jobs)
    con.close()
    shutil.copy(a, b)
    for db, keep in ((a, jobs[0::2]), (b, jobs[1::2])):
        con = sqlite3.connect(db)
        specs = {r[-1]: r for r in con.execute("select * from mutation_specs")}
        con.execute("delete from work_items where job_id not in (select job_id from work_results)")
        con.execute("delete from mutation_specs where job_id not in (select job_id from work_results)")
        for job in keep:
            con.execute("insert into work_items (job_id) values (?)", (job,))
            con.execute("insert into mutation_specs values (" + ",".join("?" * len(specs[job])) + ")", specs[job])
        con.commit()
        print(db, len(keep))


if __name__ == "__main__":
    split(sys.argv[1], sys.argv[2], int(sys.argv[3]))
