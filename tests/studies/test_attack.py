"""The soundness attack: it finds nothing against genuine validated lower ends, and it does
catch a planted unsound one (a claimed lower end above a rank at which a witness exists)."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np

from softrank.studies.attack.attack import attack_record
from softrank.fastpath.demo import build_demo_store
from softrank.replay.engine import replay_record
from softrank.replay.reader import list_records, read_record


def test_genuine_lower_ends_survive_and_a_planted_one_is_beaten(tmp_path):
    build_demo_store(tmp_path / "s", operators=2, size=32, seed=3)
    for folder in list_records(tmp_path / "s"):
        record = read_record(folder)
        result = replay_record(record)
        lowers = {t.eps: t.validated_lower for t in result.tolerances}
        for r in attack_record(record, lowers, restarts=1):
            assert not r.validated_beaten and r.attempts >= 6
        # planted: claim r_eps >= U + 1 where U is the proved upper end; rank U is within eps
        planted = {t.eps: t.validated_upper + 1 for t in result.tolerances if t.validated_upper}
        beaten = attack_record(record, planted, restarts=0)
        assert beaten and all(r.float64_beaten and r.validated_beaten for r in beaten)


def test_the_attack_command(tmp_path):
    build_demo_store(tmp_path / "s", operators=1, size=24, seed=1)
    proc = subprocess.run([sys.executable, "-m", "softrank", "attack", str(tmp_path / "s"), "--restarts", "1",
                           "--json", "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["beaten"] == 0 and summary["lower_ends"] >= 1 and summary["attempts"] >= 6
    rows = json.loads((tmp_path / "a" / "attack.json").read_text())
    assert len(rows) == summary["lower_ends"] and all(Fraction(r["eps"]) > 0 for r in rows)
    assert np.all([r["best_error"] > 0 for r in rows])


def test_the_attack_command_names_entries_of_records_that_are_not_folders(tmp_path):
    """A file, a FIFO and a dangling link in records/ were skipped without a word: each is now one
    stderr line (a malformed record, never opened), the record is attacked, exit code 2."""
    from helpers import add_stray_entries, assert_strays_reported

    build_demo_store(tmp_path / "s", operators=1, size=8, seed=1)
    strays = add_stray_entries(tmp_path / "s")
    proc = subprocess.run([sys.executable, "-m", "softrank", "attack", str(tmp_path / "s"), "--restarts", "1",
                           "--json", "--out", str(tmp_path / "a")], capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    summary = json.loads(proc.stdout)
    assert summary["records"] == 4 and summary["malformed"] == 3 and summary["lower_ends"] >= 1
    assert "demo-00" in (tmp_path / "a" / "attack.csv").read_text()
