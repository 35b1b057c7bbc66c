"""The one place that starts workers: jobs over the records of a store, in this process or on Dask.

- ``run_tasks(func, tasks, jobs=, scheduler=)`` yields ``(index, func(task))`` as tasks finish: in
  this process when ``jobs == 1`` and no scheduler is named (or there is at most one task);
  otherwise on dask.distributed, a local cluster of ``jobs`` one-thread worker processes
  (``scheduler`` None or ``"local"``) or the running scheduler at ADDRESS (whose workers must see
  the same files at the same paths).  As many tasks as the cluster has threads are submitted
  at a time (the next one as each finishes), so a store of any size never floods the scheduler and
  no worker holds a queued task while another is idle; ``RecordsJob.run`` with a ``cost`` sends
  the records largest first.  With a ``deadline``
  (``time.time()`` seconds) no task starts after it.
- ``Journal``: one JSON file per finished item in a folder (``OUT/.partial/``), each written
  atomically and durably (``files.write_text``), so a run killed at any point, even by SIGKILL,
  resumes without redoing a finished item.
- ``RecordsJob``: a journaled, resumable job over the record folders of a store, which
  ``softrank bracket``, ``tighten``, ``replay``, ``attack``, the studies and the benchmarks use.
- ``limit_threads``: one BLAS thread per worker (the runner supplies the parallelism).
- ``WorkersFailed``: a local cluster that failed to start ``CLUSTER_STARTS`` times (each failed
  start is retried after a pause), or a task whose workers kept dying (dask's ``KilledWorker``);
  its text is one line.  A worker killed while it runs a task is replaced and the task retried by
  dask itself.

Every task function and task must pickle (a module-level function, plain data).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from softrank.fastpath.store.files import load_json_text, read_text_file, write_text
from softrank.errors import InputError

BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
CLUSTER_STARTS = 3  # tries of a local cluster's start ("Nanny failed to start": a worker died at birth)


class WorkersFailed(RuntimeError):
    """The workers could not be started or kept dying (module docstring); ``str`` is one line."""


def limit_threads() -> None:
    """One BLAS thread in this process (oversubscribed BLAS threads make a 128 x 128 SVD 20 times
    slower on two shared cores, and numpy's and scipy's BLAS libraries each spinning their own
    threads make a small triangular solve 50 times slower)."""
    for var in BLAS_THREAD_VARS:
        os.environ.setdefault(var, "1")
    try:
        import scipy.linalg  # noqa: F401  (load scipy's own BLAS too, so that the limit reaches it)
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:
        pass


class NotStarted:
    """The result of a task that was not started because the run's deadline had passed."""


def _before_deadline(func, deadline: float, task):
    return NotStarted() if time.time() > deadline else func(task)


def run_tasks(func, tasks: list, *, jobs: int = 1, scheduler: str | None = None,
              deadline: float | None = None) -> Iterator[tuple]:
    """``(index, func(task))`` for every task, in the order they finish (module docstring); a task
    not started by ``deadline`` is left out."""
    import functools

    tasks = list(tasks)
    if scheduler is None and (jobs <= 1 or len(tasks) <= 1):
        for i, task in enumerate(tasks):
            if deadline is not None and time.time() > deadline:
                return
            yield i, func(task)
        return
    call = func if deadline is None else functools.partial(_before_deadline, func, deadline)
    with dask_client(jobs, scheduler) as client:
        for i, result in _dask_map(client, call, tasks, getattr(func, "__name__", "task")):
            if not isinstance(result, NotStarted):
                yield i, result


@contextmanager
def local_cluster(workers: int):
    """A dask.distributed local cluster of ``workers`` one-thread worker processes."""
    import logging

    import dask
    from dask.distributed import LocalCluster

    # dask's MALLOC_TRIM_THRESHOLD_ (every large array a fresh mmap, its pages faulted in again)
    # and 10 ms profiler cost numpy-heavy records a third more CPU time, mostly in the kernel
    for attempt in range(1, CLUSTER_STARTS + 1):
        try:
            with dask.config.set({"distributed.worker.profile.enabled": False,
                                  "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
                # the scheduler's HTTP server on a free port: on 8787, taken by another run, it warns on stderr
                cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.CRITICAL,
                                       scheduler_kwargs={"dashboard_address": ":0"})
            break
        except (RuntimeError, OSError, TimeoutError) as err:  # a failed start closes what it started
            if attempt == CLUSTER_STARTS:
                why = " ".join(str(err).split()) or type(err).__name__
                raise WorkersFailed(f"a local Dask cluster of {max(1, workers)} workers failed to start "
                                    f"{CLUSTER_STARTS} times ({why})") from None
            time.sleep(0.5 * attempt)
    try:
        yield cluster
    finally:
        cluster.close()


@contextmanager
def dask_client(jobs: int, scheduler: str | None):
    """A dask.distributed client: on a new local cluster (``None``/``"local"``) or at ADDRESS."""
    from dask.distributed import Client

    if scheduler in (None, "local"):
        with local_cluster(jobs) as cluster:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        return
    try:
        client = Client(scheduler, timeout="15s")
    except (OSError, TimeoutError, ValueError) as err:
        raise InputError("arguments", "scheduler", f"cannot reach {scheduler!r}: {err}") from None
    try:
        yield client
    finally:
        client.close()


def _dask_map(client, func, tasks: list, name: str) -> Iterator[tuple]:
    """Submit a bounded window of tasks; yield each result as it arrives."""
    import uuid

    from dask.distributed import as_completed
    from distributed import KilledWorker

    # one task per worker thread at a time: a task is sent to the first thread that falls idle
    # (greedy list scheduling).  A deeper window lets the scheduler queue two tasks on one worker
    # while the other runs dry at the end of a run (bench bracket: 23% more wall on six records).
    window = max(1, sum(client.nthreads().values()))
    pending = iter(enumerate(tasks))
    tag, index = uuid.uuid4().hex, {}

    def submit():
        nxt = next(pending, None)
        if nxt is None:
            return None
        fut = client.submit(func, nxt[1], pure=False, key=f"{name}-{nxt[0]}-{tag}")
        index[fut.key] = nxt[0]
        return fut

    queue = as_completed([f for f in (submit() for _ in range(window)) if f is not None])
    for fut in queue:
        try:
            result = fut.result()
        except KilledWorker as err:  # dask retried the task on other workers; they died too
            raise WorkersFailed(f"the workers running task {index[fut.key]} of {name} kept dying "
                                f"({' '.join(str(err).split())[:200]})") from None
        i = index.pop(fut.key)
        fut.release()
        nxt = submit()
        if nxt is not None:
            queue.add(nxt)
        yield i, result


class Journal:
    """Per-item results of a long run: one JSON file per item in FOLDER, each written atomically
    and durably, so an entry is whole or absent.  ``params`` (JSON) describe the run; resuming a
    journal made with other parameters is an ``InputError``.  Without ``resume`` an old journal is
    discarded.  ``keep``: ``remove`` leaves the folder to its owner (``softrank.pipeline`` removes a
    step's journal once the step's result is journaled in turn)."""

    def __init__(self, folder, params: dict, resume: bool = False, keep: bool = False):
        self.folder, self.keep = Path(folder), keep
        self.params = json.loads(json.dumps(params))
        if self.folder.exists() and not resume:
            shutil.rmtree(self.folder)
        if resume and (self.folder / "params.json").is_file():
            old = load_json_text(read_text_file(self.folder / "params.json"), self.folder / "params.json")
            if old != self.params:
                raise InputError(str(self.folder), "params.json", "the journal was written with other parameters "
                                 f"({_param_difference(old, self.params)}); rerun without --resume")
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in [*self.folder.glob(".tmp-*"), *self.folder.glob(".*.json-*")]:  # a write cut short by a kill
            stale.unlink(missing_ok=True)
        write_text(self.folder / "params.json", json.dumps(self.params), durable=True)

    def _name(self, key: str) -> str:
        safe = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,150}", key) and key != "params"
        return f"{key}.json" if safe else f"sha256-{hashlib.sha256(key.encode()).hexdigest()}.json"

    def add(self, key: str, payload) -> dict:
        """Record one finished item; returns the payload as read back from its JSON text."""
        text = json.dumps({"key": key, "payload": payload})
        write_text(self.folder / self._name(key), text, durable=True)
        return json.loads(text)["payload"]

    def entries(self) -> dict:
        """``key -> payload`` of every whole entry (an unreadable one is dropped: its item is redone)."""
        out = {}
        for path in sorted(self.folder.glob("*.json")):
            if path.name == "params.json":
                continue
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
                if path.name == self._name(entry["key"]):
                    out[entry["key"]] = entry["payload"]
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
        return out

    def remove(self) -> None:
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)


def _param_difference(old, new) -> str:
    if not isinstance(old, dict):
        return "unreadable parameters"
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "; ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in keys[:3])


class RecordsJob:
    """A job over the record folders of a store, one task per record, keyed by folder name.

    ``journal``: a ``Journal`` (or None) that keeps each finished record's payload; ``resume_from``
    takes back the entries still valid, and ``run`` does the others, journaling each payload as it
    arrives (unless ``journal_if`` says not to: a malformed record is tried again next time)."""

    def __init__(self, folders, journal: Journal | None = None):
        self.folders = [str(f) for f in folders]
        self.journal = journal
        self.done: dict[str, object] = {}

    @property
    def total(self) -> int:
        return len(self.folders)

    @property
    def resumed(self) -> int:
        return len(self.done)

    def names(self) -> list[str]:
        return [Path(f).name for f in self.folders]

    def resume_from(self, valid: Callable[[str, dict], bool]) -> None:
        """Keep the journal entries of records still in the store for which ``valid(name, payload)``."""
        names = set(self.names())
        self.done = {name: p for name, p in self.journal.entries().items()
                     if name in names and isinstance(p, dict) and valid(name, p)}

    def run(self, func, task_of: Callable[[str], object], *, jobs: int = 1, scheduler: str | None = None,
            progress: Callable[[int, int], None] | None = None, payloads: dict | None = None,
            journal_if: Callable[[object], bool] | None = None, deadline: float | None = None,
            cost: Callable[[str], float] | None = None) -> dict:
        """``name -> payload`` for every record: those of ``payloads`` (default: the resumed ones)
        and ``func(task_of(folder))`` for the others; ``progress(done, total)`` after each.
        ``cost(folder)``: an estimate of a record's work; on workers the records are then sent
        largest first (longest-processing-time-first list scheduling: no long record is left to
        run alone at the end), which changes no result, only the wall time."""
        payloads = dict(self.done if payloads is None else payloads)
        todo = [f for f in self.folders if Path(f).name not in payloads]
        if cost is not None and (jobs > 1 or scheduler is not None) and len(todo) > 1:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(1):  # no BLAS threads of this process spinning beside the workers
                weight = {f: cost(f) for f in todo}
            todo.sort(key=lambda f: -weight[f])  # stable: equal estimates keep the store's order
        for i, payload in run_tasks(func, [task_of(f) for f in todo], jobs=jobs, scheduler=scheduler,
                                    deadline=deadline):
            name = Path(todo[i]).name
            keep = self.journal is not None and (journal_if is None or journal_if(payload))
            payloads[name] = self.journal.add(name, payload) if keep else payload
            if progress:
                progress(len(payloads), self.total)
        return payloads
