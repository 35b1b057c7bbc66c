"""The pipeline of ``softrank run``: extract, bracket, replay (``softrank.pipeline.steps``), then
the summary (``softrank.pipeline.summary``) and the report page.

One journal scheme: ``OUT/.partial/`` is a ``Journal`` whose parameters are every step's and
which holds one entry per finished step (its result and the SHA-256 of the files holding its
output); while a step runs, ``OUT/.partial/<step>/`` holds its finished items (families,
records), removed once the step's entry is written.  ``--resume`` takes a step's entry while its
output files are unchanged (and every step before it was taken too), else runs the step again,
resuming its items; without ``--resume`` the journal is discarded first.  The step entries stay
after the run, so ``--resume`` on a finished run redoes nothing whose output is still there.

Faults: the run holds ``OUT/.lock`` (``softrank.pipeline.lock``) from start to end, so a second
run on OUT is refused in one line.  A local Dask cluster that will not start is tried
``CLUSTER_STARTS`` times (``softrank.fastpath.runner``); workers that keep failing, and a full
disk, stop the run with ``RunStopped``: one line, exit code 4, everything finished journaled and
every file already written whole (files are written atomically), so that ``--resume`` ends with
the tables of an uninterrupted run.
"""

from __future__ import annotations

import errno
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from softrank.fastpath.runner import Journal, WorkersFailed
from softrank.pipeline.lock import OutputLock
from softrank.pipeline.steps import STEPS, Hooks, Settings
from softrank.pipeline.summary import (family_outcomes, near_uniform_notes, replay_by_tolerance, summarise,
                                      write_summary)

PARTIAL = ".partial"
FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


class RunStopped(Exception):
    """A fault stopped the run (``str``: one line); ``code`` is the exit code; ``--resume`` continues."""

    code = 4


@dataclass
class RunResult:
    out: Path
    store: Path
    replay: Path
    page: Path
    table: list[dict]
    summary: object  # softrank.findings.replay_job.ReplaySummary
    times: dict[str, float]
    code: int
    notes: list[str] = field(default_factory=list)  # e.g. a randomly initialised model's near-uniform attention
    families: list[dict] = field(default_factory=list)  # per family: outcomes and worker seconds


def run_pipeline(settings: Settings, hooks: Hooks) -> RunResult:
    """Run every step into ``settings.out`` (an existing folder), holding its lock."""
    out = settings.out
    hint = f"the finished work is journaled in {out / PARTIAL}; rerun with --resume to continue"
    with OutputLock(out):
        try:
            return _run(settings, hooks)
        except WorkersFailed as err:
            raise RunStopped(f"{err}; {hint}") from None
        except OSError as err:
            if err.errno not in FULL_DISK and "No space left on device" not in str(err):
                raise
            where = f"{err.filename}: " if err.filename else ""
            raise RunStopped(f"{where}no space left on device (every file already written is whole); free "
                             f"space, then {hint.split('; ', 1)[1]}") from None
        except KeyboardInterrupt:
            print(f"softrank run: {hint}", file=sys.stderr)
            raise


def _run(settings: Settings, hooks: Hooks) -> RunResult:
    from softrank.findings.replay_job import ReplaySummary
    from softrank.findings.report import write_report

    out = settings.out
    steps = [step(settings, hooks) for step in STEPS]
    steps[0].check(settings.resume)  # before anything is written: a store that is not ours to fill
    journal = Journal(out / PARTIAL, {s.name: s.params() for s in steps}, resume=settings.resume)
    done = journal.entries()
    results, times, taken = {}, {}, True
    for step in steps:
        t0 = time.perf_counter()
        entry = done.get(step.name)
        taken = taken and isinstance(entry, dict) and entry.get("outputs") == step.outputs()
        if taken:  # its time is the one journaled when it ran (an older journal has none: 0)
            results[step.name] = entry["result"]
            times[step.name] = float(entry.get("seconds") or 0.0)
        else:  # this step and every later one run (each resumes its own items)
            result = step.run(out / PARTIAL / step.name, settings.resume)
            times[step.name] = time.perf_counter() - t0
            results[step.name] = journal.add(step.name, {"result": result, "outputs": step.outputs(),
                                                         "seconds": times[step.name]})["result"]
        shutil.rmtree(out / PARTIAL / step.name, ignore_errors=True)

    replay = results["replay"]
    summary = ReplaySummary(**replay["summary"])
    joined = replay_by_tolerance(replay["rows"])
    table = summarise(results["bracket"]["rows"], joined, settings.tolerances)
    notes = near_uniform_notes(results["bracket"]["rows"], joined)
    if any(r["support"] != "full" for r in table):  # native operators: measured, not the theorem's
        from softrank.findings.kinds import NATIVE_NOTE

        notes.append(NATIVE_NOTE)
    from softrank.findings.replay_table import read_parquet_rows

    families = family_outcomes(results["bracket"]["rows"], read_parquet_rows(out / "replay", "replay.parquet")[1])
    write_summary(out, table, times, families)
    page = write_report(out / "replay", out / "report.html", research=settings.panel == "full")
    return RunResult(out=out, store=settings.store, replay=out / "replay", page=page, table=table, summary=summary,
                     times=times, families=families, code=0 if not summary.malformed else 2, notes=notes)


__all__ = ["run_pipeline", "RunResult", "RunStopped", "Settings", "Hooks", "PARTIAL"]
