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


def test_records_job_with_a_cost_sends_the_largest_records_first_and_keeps_every_result(tmp_path):
    from softrank.fastpath.runner import RecordsJob

    seconds = {"a": 0.05, "b": 0.6, "c": 0.05, "d": 0.4, "e": 0.05}
    folders = [str(tmp_path / name) for name in seconds]
    job = RecordsJob(folders)
    out = job.run(_sleep_task, lambda f: seconds[f.rsplit("/", 1)[1]], jobs=2,
                  cost=lambda f: seconds[f.rsplit("/", 1)[1]])
    assert sorted(out) == sorted(seconds)
    starts = sorted(out, key=lambda name: out[name][1])
    assert set(starts[:2]) == {"b", "d"}, starts  # the two longest started first, one per worker
    plain = RecordsJob(folders).run(_sleep_task, lambda f: seconds[f.rsplit("/", 1)[1]], jobs=2)
    first = sorted(plain, key=lambda name: plain[name][1])[:2]
    assert set(first) == {"a", "b"}, first  # without a cost: the store's order, one per worker
