"""``softrank.pipeline.lock``: one run per output folder.  A second process is refused in one
line while the first holds ``OUT/.lock``, at any stage of a real ``softrank run`` (frozen there
with SIGSTOP, so the stage is certain); a killed holder's lock file blocks nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from softrank.fastpath.demo import build_demo_store
from softrank.pipeline.lock import LOCK, OutputLock
from softrank.errors import InputError

HOLD = "import sys, time\nfrom softrank.pipeline.lock import OutputLock\nwith OutputLock(sys.argv[1]):\n" \
       "    print('held', flush=True)\n    time.sleep(600)\n"
RUN = [sys.executable, "-m", "softrank", "run", "--reuse", "--eps", "0.25", "--no-progress", "--jobs", "1"]


def _holder(out: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_process_is_refused_until_the_holder_dies(tmp_path):
    holder = _holder(tmp_path)
    try:
        with pytest.raises(InputError, match=rf"in use by another softrank run \(process {holder.pid}\)"):
            with OutputLock(tmp_path):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / LOCK).is_file()  # left behind by the killed holder: it blocks nothing
    with OutputLock(tmp_path):
        assert (tmp_path / LOCK).read_text().strip() == str(os.getpid())
    with OutputLock(tmp_path):  # released on exit
        pass


def _wait_for(proc, path: Path) -> None:
    deadline = time.monotonic() + 300
    while not path.exists():
        assert proc.poll() is None, "the run ended before the stage was reached"
        assert time.monotonic() < deadline
        time.sleep(0.002)


@pytest.mark.parametrize("stage", ["bracket", "replay"])
def test_a_second_run_is_refused_in_one_line_whatever_the_stage(tmp_path, stage):
    out = tmp_path / "out"
    build_demo_store(out / "store", 6, 32, seed=2)
    first = subprocess.Popen([*RUN, "--out", str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(first, out / ".partial" / stage)
        first.send_signal(signal.SIGSTOP)  # frozen in that stage, still holding the lock
        second = subprocess.run([*RUN, "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stderr[-3000:]
        assert lines[0] == f"softrank run: error: {out}: in use by another softrank run (process {first.pid}); " \
                           "wait for it to end, or choose another --out"
        assert (out / ".partial" / stage).is_dir()  # the first run's journal untouched
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=300) == 0, first.stderr.read()[-3000:]
    assert (out / "summary.csv").is_file()


def test_a_killed_runs_lock_file_does_not_block_resume(tmp_path):
    out = tmp_path / "out"
    build_demo_store(out / "store", 3, 24, seed=2)
    first = subprocess.Popen([*RUN, "--out", str(out)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _wait_for(first, out / ".partial" / "bracket")
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert (out / LOCK).is_file() and not (out / "summary.csv").exists()
    proc = subprocess.run([*RUN, "--out", str(out), "--resume"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "summary.csv").is_file()
