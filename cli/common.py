"""What every front end shares: one parser for tolerances (binary64 or exact rational), integer
lists (ranks, layers, budgets) and counts, and one progress style (a rich bar on stderr, or nothing).

Each parser raises ``InputError("arguments", FIELD, ...)`` on bad input, which the command line
prints as one line with exit code 2.
"""

from __future__ import annotations

import math
import re
import statistics
from contextlib import contextmanager
from fractions import Fraction
from typing import Callable, Iterator

from softrank.validated.errors import InputError

MAX_LIST = 100_000  # longest integer list accepted (a span "0-10**9" is refused, not expanded)


def parse_eps_exact(text: str, field: str = "eps") -> Fraction:
    """``"1/4"``, ``"0.25"`` or ``"1e-1"`` -> the exact rational it spells, strictly inside (0, 1)."""
    from softrank.exact.rational import parse_rational

    eps = parse_rational(str(text), "arguments", field)
    if not 0 < eps < 1:
        raise InputError("arguments", field, f"eps must lie in (0, 1), got {text}")
    return eps


def parse_tolerances(text: str, field: str = "eps") -> list[Fraction]:
    """``"0.15,3/20,0.25"`` -> [3/20, 1/4]: each item the exact rational it spells
    (``parse_eps_exact``), equal values once, sorted.  Two values whose nearest binary64 numbers
    coincide (or round to 0 or 1) are an ``InputError``: a float64 bracket could not tell them apart."""
    values = sorted({parse_eps_exact(part.strip(), field) for part in str(text).split(",") if part.strip()})
    if not values:
        raise InputError("arguments", field, "no tolerance given")
    from softrank.replay.reader import MAX_TOLERANCES

    if len(values) > MAX_TOLERANCES:
        raise InputError("arguments", field, f"{len(values)} tolerances, more than the {MAX_TOLERANCES} a record may hold")
    floats = [float(v) for v in values]
    for v, f in zip(values, floats):
        if not 0 < f < 1:
            raise InputError("arguments", field, f"eps {v} rounds to {f!r} in binary64")
    if len(set(floats)) < len(floats):
        raise InputError("arguments", field, "two tolerances have the same nearest binary64 number")
    return values


def parse_int_list(text: str | None, field: str, minimum: int | None = 0) -> list[int] | None:
    """``"0,2,4-6"`` -> [0, 2, 4, 5, 6] (``None`` stays ``None``); every value >= ``minimum``."""
    if text is None:
        return None
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        span = re.fullmatch(r"(\d{1,9})\s*-\s*(\d{1,9})", part, re.ASCII)
        if span:
            lo, hi = int(span.group(1)), int(span.group(2))
            if hi - lo >= MAX_LIST:
                raise InputError("arguments", field, f"span {part!r} longer than {MAX_LIST}")
            out.extend(range(lo, hi + 1))
        elif re.fullmatch(r"-?\d{1,18}", part, re.ASCII):
            out.append(int(part))
        else:
            raise InputError("arguments", field, f"not an integer list: {text!r}")
    if not out:
        raise InputError("arguments", field, f"empty list: {text!r}")
    if minimum is not None and min(out) < minimum:
        raise InputError("arguments", field, f"values must be integers >= {minimum}, got {text!r}")
    return out


def check_count(value: int | None, field: str, minimum: int = 1, maximum: int | None = None) -> int | None:
    """A count argument (``--jobs``, ``--repeats``, ``--size``): an integer >= ``minimum`` (and
    <= ``maximum`` when given: a count that would run for ages or exhaust memory is refused)."""
    if value is not None and value < minimum:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {_shown(value)}")
    if value is not None and maximum is not None and value > maximum:
        raise InputError("arguments", field, f"must be an integer <= {maximum}, got {_shown(value)}")
    return value


def _shown(value) -> str:
    text = str(value)
    return text if len(text) <= 30 else text[:12] + f"... ({len(text)} digits)"


def parse_count(text: str, field: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A count given as text (``--rank 3``): an integer >= ``minimum`` (<= ``maximum``)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise InputError("arguments", field, f"must be an integer >= {minimum}, got {str(text)[:40]!r}") from None
    check_count(value, field, minimum, maximum)
    return value


def max_jobs() -> int:
    """The most worker processes a local cluster may start: 8 per CPU (at least 64); more would
    exhaust memory or the process table rather than run faster."""
    import os

    return max(64, 8 * (os.cpu_count() or 1))


@contextmanager
def progress(on: bool, total: int, label: str, start: int = 0) -> Iterator[Callable[[int], None]]:
    """``with progress(on, total, label) as update: update(done)``; a rich bar on stderr (items done,
    rate per minute, elapsed and remaining time), or nothing.  ``start`` items count as done already
    (a resumed run) and do not enter the rate."""
    if not on or total <= 0:
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), _rate_column(),
                  TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=total, completed=start)
        yield lambda done: bar.update(task, completed=done)


def _rate_column():
    """A rich column: items per minute since the bar started (blank until measured)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{60 * speed:,.1f}/min", style="progress.data.speed")

    return RateColumn()


def output_dir(path, field: str = "out", empty: bool = False):
    """An output folder: created if missing; an existing file (not a folder) there is an
    ``InputError``, as is a non-empty folder when ``empty`` (nothing already there is touched)."""
    from pathlib import Path

    if not str(path).strip():
        raise InputError("arguments", field, "empty path")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(str(path), field, "exists and is not a folder")
    if empty and path.is_dir() and any(path.iterdir()):
        raise InputError(str(path), field, "is not empty (choose a new folder; nothing there was changed)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(str(path), field, f"cannot create the folder: {err.strerror or err}") from None
    return path


def output_file(path, field: str = "out", folder_must_exist: bool = True):
    """An output file checked before any work: what is at the path must be a regular file or
    nothing (a folder, FIFO, device or symlink loop there is an ``InputError``), and its folder
    must exist (unless the command creates it)."""
    import os
    from pathlib import Path

    from softrank.fastpath.store.files import check_output_file

    path = Path(path)
    if not str(path).strip():
        raise InputError("arguments", field, "empty path")
    try:
        check_output_file(path)
    except OSError as err:
        raise InputError(str(path), field, err.strerror or str(err)) from None
    if folder_must_exist and not path.parent.is_dir():
        raise InputError(str(path), field, f"its folder {path.parent} does not exist or is not a folder")
    if path.parent.is_dir() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise InputError(str(path), field, f"cannot write in its folder {path.parent} (permission denied)")
    return path


# what the untrusted per-record computations of the studies raise on an operator they cannot
# handle (an LP or SDP that fails on extreme logits, a record of the wrong form, a float overflow)
RECORD_FAILURES = (InputError, ValueError, RuntimeError, ArithmeticError)


def finite(values) -> list[float]:
    """The values that are finite numbers (None, NaN and infinities dropped): what a summary's
    median or maximum is taken over when a degenerate record has no ratio."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def median_or_none(values) -> float | None:
    kept = finite(values)
    return statistics.median(kept) if kept else None


def max_or_none(values) -> float | None:
    kept = finite(values)
    return max(kept) if kept else None


def shown_number(value, spec: str) -> str:
    """``format(value, spec)``, or ``n/a`` for None and NaN (a ratio a degenerate record lacks)."""
    return "n/a" if value is None or value != value else format(value, spec)


def json_text(obj, **kwargs) -> str:
    """``json.dumps`` with every NaN or infinite number written as null (standard JSON: a ratio
    that a degenerate record lacks is null, never the non-standard ``NaN``)."""
    import json

    from softrank.fastpath.store.files import json_ready

    return json.dumps(json_ready(obj), allow_nan=False, **kwargs)


def record_failure(record, err: BaseException) -> str:
    """One line for a record whose computation failed: the record's folder and id, and why."""
    if isinstance(err, InputError):  # the record's own folder is named once
        text = err.one_line()
        if err.where == str(record.path):
            text = text[len(err.where) + 1:].lstrip()
    else:
        text = f"{type(err).__name__}: {err}"
    return " ".join(f"{record.path} [{record.record_id}]: {text}".split())[:2000]


def theorem_records(args, errors: list[str]) -> list:
    """The records of ``args.stores`` selected by ``--records``, ``--limit`` and ``--max-n`` (for
    ``softrank kappa`` and ``softrank theorem``), after checking those counts and ``--out``; a record
    that cannot be read is one line in ``errors``.  An empty selection without errors is refused."""
    from softrank.fastpath.studies.theorem.records import select_records

    check_count(args.limit, "limit")
    check_count(args.max_n, "max-n")
    if args.out is not None:  # never inside an input store (a CSV over a record.json or index.csv)
        output_file(args.out)
        check_not_input(args.out, inside=[(store, f"the input store {store}") for store in args.stores])
    recs = select_records(args.stores, args.records, args.limit, args.max_n, errors=errors)
    if not recs and not errors:
        raise InputError(",".join(args.stores), "records", "no records selected")
    return recs


def special_manifest(folder) -> bool:
    """True when FOLDER/record.json exists but is not a regular file (a FIFO, a device, a folder):
    code that hashes or parses manifests outside the reader must not open it (it would block or
    never end); the reader reports it on one line when the record is read."""
    import os
    import stat
    from pathlib import Path

    try:
        return not stat.S_ISREG(os.stat(Path(folder) / "record.json").st_mode)
    except OSError:  # missing, a link loop, unreadable: opening it fails at once
        return False


def check_outside(out, folder, field: str = "out", what: str = "the input store") -> None:
    """``out`` must not lie strictly inside ``folder`` (checked before anything is created: an
    output folder inside the input would change it, e.g. become one more record of a store)."""
    from pathlib import Path

    try:
        inner, outer = Path(out).resolve(), Path(folder).resolve()
    except (OSError, RuntimeError) as err:
        raise InputError(str(out), field, f"cannot resolve the path: {err}") from None
    if inner != outer and outer in inner.parents:
        raise InputError(str(out), field, f"lies inside {what} {folder} (choose a folder outside it; "
                                          "nothing was written)")


def path_arg(text: str) -> str:
    """argparse ``type=`` of every path option and argument: an empty (or blank) path is refused
    when the command line is parsed (one line naming the option, exit code 2), never silently
    replaced by the option's default."""
    if not str(text).strip():
        import argparse

        raise argparse.ArgumentTypeError("empty path")
    return text


def value_arg(text: str) -> str:
    """argparse ``type=`` of a text option whose absence means a default (``--device``): an
    empty value is refused, never taken for the default."""
    if not str(text).strip():
        import argparse

        raise argparse.ArgumentTypeError("empty value")
    return text


# what ``softrank replay`` writes into its folder: the inputs of report, regress and study kappa
REPLAY_TABLES = ("manifest.json", "replay.parquet", "replay.csv", "verdicts.parquet", "verdicts.csv")


def store_records(store) -> tuple:
    """``(STORE/records, description)`` for ``check_not_input``: nothing may be written into or as it."""
    from pathlib import Path

    return (Path(store) / "records", f"the records folder of the input store {store}")


def replay_tables(folder) -> list[tuple]:
    """``(FOLDER/NAME, description)`` for each table of a replay folder (``check_not_input``)."""
    from pathlib import Path

    return [(Path(folder) / name, f"the input table {Path(folder) / name}") for name in REPLAY_TABLES]


def check_not_input(out, field: str = "out", *, inside=(), equal=(), writes=()) -> None:
    """Checked before anything is written: the output ``out`` (a folder or a file) must not be one of
    the inputs ``inside`` nor lie inside one of them, and must not be one of the inputs ``equal`` (a
    folder that may hold outputs, such as the store that ``STORE/replay`` lies in).  Each input is
    ``(path, description)``.  For an output folder, ``writes`` names what the command creates in it
    (``OUT/NAME``): none of those may be or hold an input.  Links are followed, so a link to an input
    is that input.  Any of these is an ``InputError`` naming ``out`` and ``field``."""
    import os
    from pathlib import Path

    def real(path) -> Path:
        try:
            return Path(os.path.realpath(path))
        except (OSError, RuntimeError, ValueError) as err:
            raise InputError(str(out), field, f"cannot resolve the path {path}: {err}") from None

    target = real(out)
    checked = [(real(p), what, True) for p, what in inside] + [(real(p), what, False) for p, what in equal]
    for path, what, tree in checked:
        if target == path:
            raise InputError(str(out), field, f"is {what} (choose another path; nothing was written)")
        if tree and path in target.parents:
            raise InputError(str(out), field, f"lies inside {what} (choose a path outside it; nothing was written)")
        for name in writes:
            dest = target / name
            if dest == path or dest in path.parents:
                raise InputError(str(out), field, f"would write {dest}, which is or holds {what} "
                                                  "(choose another path; nothing was written)")


MAX_INPUT_BYTES = 64 * 2**20  # largest text input file read (matrices, witnesses)


def read_text_file(path, field: str = "", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` bytes; anything else (a missing
    file, a folder, a pipe or device that could block, a binary or too large file) is an
    ``InputError`` naming the file."""
    import os
    import stat

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(str(path), field, "not a regular file")
        if st.st_size > max_bytes:
            raise InputError(str(path), field, f"larger than {max_bytes} bytes")
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as err:
        raise InputError(str(path), field, f"cannot read: {err.strerror or err}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(str(path), field, f"not UTF-8 text (byte {err.start})") from None


def load_json_text(text: str, path, field: str = "", **kwargs):
    """``json.loads`` whose every failure (syntax, nesting depth, huge integers) is an ``InputError``."""
    import json

    try:
        return json.loads(text, **kwargs)
    except json.JSONDecodeError as err:
        raise InputError(str(path), field, f"not JSON: {err.msg} at line {err.lineno}") from None
    except RecursionError:
        raise InputError(str(path), field, "JSON nested too deeply") from None
    except ValueError as err:
        raise InputError(str(path), field, f"unreadable number in JSON: {str(err)[:80]}") from None


class Journal:
    """Per-item results of a long run, so that a run killed at any point (even by SIGKILL) resumes
    without redoing a finished item: one JSON file per item in FOLDER, written to a temporary name,
    flushed to disk (fsync) and moved into place with one rename, so an entry is whole or absent.

    ``params`` (JSON) describe the run; resuming a journal made with other parameters is an
    ``InputError``.  Without ``resume`` an old journal is discarded."""

    def __init__(self, folder, params: dict, resume: bool = False):
        import json
        import shutil
        from pathlib import Path

        self.folder = Path(folder)
        self.params = json.loads(json.dumps(params))
        if self.folder.exists() and not resume:
            shutil.rmtree(self.folder)
        if resume and (self.folder / "params.json").is_file():
            old = load_json_text(read_text_file(self.folder / "params.json"), self.folder / "params.json")
            if old != self.params:
                raise InputError(str(self.folder), "params.json", "the journal was written with other parameters "
                                 f"({_param_difference(old, self.params)}); rerun without --resume")
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob(".tmp-*"):  # a write cut short by a kill
            stale.unlink(missing_ok=True)
        self._write("params.json", json.dumps(self.params))

    def _name(self, key: str) -> str:
        import hashlib

        safe = re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,150}", key) and key != "params"
        return f"{key}.json" if safe else f"sha256-{hashlib.sha256(key.encode()).hexdigest()}.json"

    def _write(self, name: str, text: str) -> None:
        import os
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.folder / name)
        dfd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def add(self, key: str, payload) -> dict:
        """Record one finished item; returns the payload as read back from its JSON text."""
        import json

        text = json.dumps({"key": key, "payload": payload})
        self._write(self._name(key), text)
        return json.loads(text)["payload"]

    def entries(self) -> dict:
        """``key -> payload`` of every whole entry (an unreadable one is dropped: its item is redone)."""
        import json

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
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def _param_difference(old, new) -> str:
    if not isinstance(old, dict):
        return "unreadable parameters"
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return "; ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in keys[:3])


def parallel_map(func, tasks: list, *, jobs: int = 1, scheduler: str | None = None) -> Iterator[tuple]:
    """``(index, func(task))`` for every task, in the order they finish.  In this process when
    ``jobs == 1`` and no scheduler is named (or there is at most one task); otherwise on
    dask.distributed: ``scheduler`` None or ``"local"`` starts a local cluster of ``jobs`` worker
    processes (one thread each), any other value is the address of a running scheduler (whose
    workers must see the same files at the same paths).  ``func`` and the tasks must pickle."""
    tasks = list(tasks)
    if scheduler is None and (jobs <= 1 or len(tasks) <= 1):
        for i, task in enumerate(tasks):
            yield i, func(task)
        return
    with dask_client(jobs, scheduler) as client:
        yield from _dask_map(client, func, tasks)


@contextmanager
def dask_client(jobs: int, scheduler: str | None):
    """A dask.distributed client: on a new local cluster (``None``/``"local"``) or at ADDRESS."""
    import logging

    import dask
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler in (None, "local"):
        # dask's MALLOC_TRIM_THRESHOLD_ (every large array a fresh mmap, its pages faulted in again)
        # and 10 ms profiler cost numpy-heavy records a third more CPU time, mostly in the kernel
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout="15s")
        except (OSError, TimeoutError, ValueError) as err:
            raise InputError("arguments", "scheduler", f"cannot reach {scheduler!r}: {err}") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_map(client, func, tasks: list) -> Iterator[tuple]:
    """Submit at most twice as many tasks as the cluster has threads at a time (a bounded window,
    so a store of any size never floods the scheduler); yield each result as it arrives."""
    import uuid

    from dask.distributed import as_completed

    window = max(4, 2 * sum(client.nthreads().values()))
    pending = iter(enumerate(tasks))
    tag, index = uuid.uuid4().hex, {}

    def submit():
        nxt = next(pending, None)
        if nxt is None:
            return None
        fut = client.submit(func, nxt[1], pure=False, key=f"{getattr(func, '__name__', 'task')}-{nxt[0]}-{tag}")
        index[fut.key] = nxt[0]
        return fut

    queue = as_completed([f for f in (submit() for _ in range(window)) if f is not None])
    for fut in queue:
        result = fut.result()
        i = index.pop(fut.key)
        fut.release()
        nxt = submit()
        if nxt is not None:
            queue.add(nxt)
        yield i, result


def check_device(name: str | None, field: str = "device") -> str | None:
    """``cpu`` or ``cuda`` (``None``: the default); ``cuda`` only where torch has a CUDA device."""
    if name is None:
        return None
    if name not in ("cpu", "cuda") and not name.startswith("cuda:"):
        raise InputError("arguments", field, f"expected cpu or cuda, got {name!r}")
    if name.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise InputError("arguments", field, "cuda requested but this torch has no CUDA device")
    return name
