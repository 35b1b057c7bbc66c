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


def _failing_nanny_starts(monkeypatch, failures: int) -> list[int]:
    """The first ``failures`` nanny starts of this process fail (as when a worker dies at birth:
    "Nanny failed to start"); returns the count of starts tried."""
    import distributed.nanny

    start, seen = distributed.nanny.Nanny.start_unsafe, [0]

    async def start_unsafe(self):
        seen[0] += 1
        if seen[0] <= failures:
            raise RuntimeError("planted: this nanny does not start")
        return await start(self)

    monkeypatch.setattr(distributed.nanny.Nanny, "start_unsafe", start_unsafe)
    return seen


def test_a_cluster_start_that_fails_is_tried_again(monkeypatch):
    seen = _failing_nanny_starts(monkeypatch, 1)
    assert dict(run_tasks(abs, [-1, -2, -3], jobs=2)) == {0: 1, 1: 2, 2: 3}
    assert seen[0] >= 3  # the failed start's two nannies, then the second start's


def test_a_cluster_that_never_starts_is_one_error_line(monkeypatch):
    import pytest

    from softrank.fastpath.runner import CLUSTER_STARTS, WorkersFailed

    seen = _failing_nanny_starts(monkeypatch, 10**6)
    with pytest.raises(WorkersFailed) as err:
        list(run_tasks(abs, [-1, -2], jobs=2))
    assert f"failed to start {CLUSTER_STARTS} times (Nanny failed to start.)" in str(err.value)
    assert "\n" not in str(err.value) and seen[0] >= CLUSTER_STARTS


def _die(_task):
    os._exit(1)  # the worker process dies under its task, as when it is killed


def test_workers_that_keep_dying_under_a_task_are_one_error_line():
    import dask
    import pytest

    from softrank.fastpath.runner import WorkersFailed

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):  # no retry on another worker
        with pytest.raises(WorkersFailed, match=r"^the workers running task [01] of _die kept dying \(") as err:
            list(run_tasks(_die, [1, 2], jobs=2))
    assert "\n" not in str(err.value)
