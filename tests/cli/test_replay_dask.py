"""Replay on dask.distributed gives the serial tables: ``--jobs N`` (a local cluster),
``--scheduler local``, and ``--scheduler ADDRESS`` of a running cluster; the progress bar shows
records done, the rate and the time left."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from softrank.fastpath.demo import build_demo_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    build_demo_store(root / "store", 12, 32, seed=1)
    return root / "store"


def _replay(store, out, *extra):
    return subprocess.run([sys.executable, "-m", "softrank", "replay", str(store), "--out", str(out), "--quiet", *extra],
                          capture_output=True, text=True, timeout=600, cwd=out.parent)


def _tables(folder):
    out = {}
    for name in ("replay", "verdicts"):
        table = pq.read_table(folder / f"{name}.parquet")
        out[name] = table.drop(["seconds"]) if "seconds" in table.column_names else table
    return out


def _same(a, b) -> bool:
    return all(a[n].equals(b[n]) and a[n].schema.metadata == b[n].schema.metadata for n in a)


@pytest.fixture(scope="module")
def serial(store):
    out = store.parent / "serial"
    proc = _replay(store, out)
    assert proc.returncode == 0, proc.stderr
    return _tables(out)


def test_local_cluster_tables_equal_serial(store, serial, tmp_path):
    for extra in (("--jobs", "2"), ("--scheduler", "local", "--jobs", "2")):
        out = tmp_path / "-".join(extra)
        proc = _replay(store, out, *extra)
        assert proc.returncode == 0, proc.stderr
        assert _same(_tables(out), serial), extra
        assert "12 records" in proc.stdout and not (out / ".partial").exists()


def test_running_scheduler_by_address(store, serial, tmp_path):
    import logging

    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster:
        proc = _replay(store, tmp_path / "addr", "--scheduler", cluster.scheduler_address)
    assert proc.returncode == 0, proc.stderr
    assert _same(_tables(tmp_path / "addr"), serial)


def test_in_process_api_with_jobs(store, serial, tmp_path):
    from softrank.findings.replay_job import replay_store

    seen = []
    summary = replay_store(store, tmp_path / "api", jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert summary.records == 12 and summary.upper_proved == 36
    assert _same(_tables(tmp_path / "api"), serial)
    assert sorted(seen) == [(i, 12) for i in range(1, 13)]


def test_unknown_scheduler_is_one_line(store, tmp_path):
    proc = _replay(store, tmp_path / "bad", "--scheduler", "nonsense://nowhere")
    assert proc.returncode == 2 and "scheduler" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_progress_shows_done_rate_and_time_left(store, tmp_path, capsys, monkeypatch):
    from argparse import Namespace

    from softrank.cli import replay

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    args = Namespace(store=str(store), out=str(tmp_path / "p"), strict=False, jobs=1, quiet=False, json=False,
                     budgets="8,16,32", fail_on="", scheduler=None, resume=False)
    assert replay.run(args) == 0
    err = capsys.readouterr().err
    assert "12/12" in err and "/min" in err and "left" in err


def test_bench_scale_measures_and_projects(store, capsys):
    import json
    from types import SimpleNamespace

    from softrank.bench import scale

    assert scale.main(SimpleNamespace(target=str(store), quick=True, repeats=1, json=True)) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["records"] == 12 and result["tables_identical"] is True
    assert [(r["config"].split()[0], r["workers"]) for r in result["runs"]] == [("in-process", 1), ("dask", 1),
                                                                               ("dask", 2)]
    assert all(r["records_per_min"] > 0 for r in result["runs"])
    assert [p["workers"] for p in result["projection"]] == [4, 16, 64, 256]
    t1 = result["seconds_per_record_one_worker"]
    assert result["projection"][0]["records_per_min_ideal"] == 60 * 4 / t1
