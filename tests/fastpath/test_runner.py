"""``fastpath/runner.py`` on a real local Dask cluster: tasks go to the first idle worker thread
(no task waits in the queue of a busy worker while another worker is idle), every result comes
back once with its index, and the in-process path gives the same results."""

from __future__ import annotations

import os
import time

from softrank.fastpath.runner import run_tasks


def _sleep_task(seconds: float) -> tuple[int, float, float]:
    start = time.time()
    time.sleep(seconds)
    return os.getpid(), start, time.time()


def test_a_long_task_holds_its_worker_alone_while_the_other_worker_runs_the_rest():
    tasks = [2.0] + [0.05] * 7
    results = dict(run_tasks(_sleep_task, tasks, jobs=2))
    assert sorted(results) == list(range(len(tasks)))
    long_pid, _, long_end = results[0]
    short = [results[i] for i in range(1, len(tasks))]
    assert all(end < long_end for _, _, end in short)  # all done on the other worker meanwhile
    assert all(pid != long_pid for pid, _, _ in short), [(pid == long_pid) for pid, _, _ in short]


def test_in_process_and_on_dask_give_the_same_results_by_index():
    tasks = list(range(9))
    serial = dict(run_tasks(abs, [-t for t in tasks], jobs=1))
    parallel = dict(run_tasks(abs, [-t for t in tasks], jobs=2))
    assert serial == parallel == {i: i for i in tasks}
