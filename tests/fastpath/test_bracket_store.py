"""Fast-path bracketing on stores: records rewritten with witnesses, certificates and float64
verdicts; the validated replay confirms them; ``softrank bracket`` and ``softrank run`` (reusing
a store, so no model is loaded) end to end; bad input exits 2 with one line."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from softrank.cli import main
from softrank.fastpath.bracket.store import bracket_store
from softrank.fastpath.float64 import rowsoftmax64
from softrank.findings.replay_job import replay_store
from softrank.fastpath.store.writer import RecordWriter
from softrank.replay.reader import list_records, read_record


def make_store(path, count=2, n=20, seed=0, family="synthetic"):
    rng = np.random.default_rng(seed)
    for i in range(count):
        Q, K = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
        scale = 1.5 + i
        with RecordWriter(path, f"syn-{family}-{i}", provenance={"model": "synthetic", "family": family,
                                                                  "layer": 0, "head": i}) as w:
            w.set_qk(Q, K, scale)
            w.set_a_hat(rowsoftmax64(scale * Q @ K.T))
    return path


def test_bracket_store_writes_records_the_replay_confirms(tmp_path):
    store = make_store(tmp_path / "store")
    rows = bracket_store(store, jobs=1)
    assert len(rows) == 2 * 3
    for folder in list_records(store):
        rec = read_record(folder)  # the reader validates every field and hash
        assert [float(t.eps) for t in rec.tolerances] == [0.15, 0.25, 0.35]
        for t in rec.tolerances:
            assert t.upper is not None and t.upper.rank == t.float64_upper
            assert t.lower and all(c.lower == t.float64_lower for c in t.lower)
            assert set(t.float64_verdicts) == {8, 16, 32}
            assert t.float64_lower <= t.float64_upper
        assert rec.provenance.get("bracketed_by", "").startswith("softrank.fastpath")
    table = list(csv.DictReader(open(store / "bracket.csv")))
    assert len(table) == 6 and {"rank_tsvd", "baseline_upper", "time_decoder"} <= set(table[0])

    summary = replay_store(store, tmp_path / "replay")
    assert summary.malformed == 0 and summary.tolerances == 6
    assert summary.upper_proved == 6 and summary.upper_refuted == 0
    assert summary.lower_rejected == 0
    assert summary.upper_agree == 6 and summary.lower_agree == 6


def test_bracket_store_process_pool_matches_serial(tmp_path):
    a = make_store(tmp_path / "a", count=2, n=16, seed=4)
    b = make_store(tmp_path / "b", count=2, n=16, seed=4)
    serial = bracket_store(a, jobs=1, eps_list=(0.25,))
    pooled = bracket_store(b, jobs=2, eps_list=(0.25,))
    key = lambda r: (r["record_id"], r["lower"], r["upper"])  # noqa: E731
    assert sorted(map(key, serial)) == sorted(map(key, pooled))


def test_cli_bracket_and_bad_input(tmp_path, capsys):
    store = make_store(tmp_path / "store", count=1, n=16)
    assert main(["bracket", str(store), "--eps", "0.25", "--jobs", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "1 records x 1 tolerances" in out and "median U/L" in out
    assert main(["bracket", str(tmp_path / "nope"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a SoftRank store" in err[0]
    assert main(["bracket", str(store), "--eps", "1.5", "--no-progress"]) == 2
    assert "eps must lie in (0, 1)" in capsys.readouterr().err
    assert main(["bracket", str(store), "--jobs", "0", "--no-progress"]) == 2


def test_cli_run_on_a_reused_store(tmp_path, capsys):
    out = tmp_path / "out"
    make_store(out / "store", count=2, n=16, family="bert")
    rc = main(["run", "--out", str(out), "--reuse", "--jobs", "1", "--no-progress", "--eps", "0.25,0.35"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "median U/L" in text and "bert" in text
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["table"]
    assert [r["eps"] for r in rows] == ["0.25", "0.35"]  # the tolerance text, as bracket and report write it
    for r in rows:
        assert r["operators"] == 2 and r["validated_agreement"] == 1.0
        assert r["median_L"] <= r["median_U"] <= r["baseline_median_U"]
    assert (out / "replay" / "replay.parquet").is_file()
    # an existing store without --reuse is refused (no silent mixing of panels)
    assert main(["run", "--out", str(out), "--no-progress"]) == 2
    assert "already holds records" in capsys.readouterr().err


def test_bracket_store_brackets_the_records_beside_entries_that_are_not_folders(tmp_path):
    """A file, a FIFO and a dangling link in records/ are tasks that fail at once (the FIFO is
    never opened); the records are bracketed as without them."""
    from helpers import add_stray_entries

    store = make_store(tmp_path / "store", count=2, n=12)
    add_stray_entries(store)
    rows = bracket_store(store, jobs=1, eps_list=(0.25,))
    assert sorted(r["record_id"] for r in rows) == ["syn-synthetic-0", "syn-synthetic-1"]
    assert all(read_record(f).tolerances for f in list_records(store))


def test_cli_run_names_each_entry_of_records_that_is_not_a_folder_once(tmp_path):
    """``softrank run --reuse`` (bracket, then replay): each stray entry is one stderr line, not one
    per stage; the records are bracketed, replayed and summarised; exit code 2."""
    import subprocess
    import sys

    from helpers import add_stray_entries, assert_strays_reported

    out = tmp_path / "out"
    make_store(out / "store", count=2, n=12, family="bert")
    strays = add_stray_entries(out / "store")
    proc = subprocess.run([sys.executable, "-m", "softrank", "run", "--out", str(out), "--reuse", "--jobs", "1",
                           "--no-progress", "--eps", "0.25"], capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    assert json.loads((out / "summary.json").read_text())["table"][0]["operators"] == 2
    assert "syn-bert-1" in (out / "replay" / "replay.csv").read_text()


@pytest.mark.parametrize("argv", [["run", "--jobs", "0"], ["run", "--minilm", "-1"], ["run", "--eps", "x"]])
def test_cli_run_bad_arguments(tmp_path, capsys, argv):
    assert main(argv + ["--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_parse_tolerances_reads_exact_rationals():
    from fractions import Fraction

    from softrank.replay.reader import MAX_TOLERANCES
    from softrank.replay.tolerance import Tolerance
    from softrank.errors import InputError

    def parse_tolerances(text):  # as softrank bracket reads --eps
        return Tolerance.parse_list(text, most=MAX_TOLERANCES)

    assert [t.value for t in parse_tolerances("0.25, 0.15,3/20,1.5e-1,1e-1")] == [Fraction(1, 10), Fraction(3, 20),
                                                                                   Fraction(1, 4)]
    assert [t.value for t in parse_tolerances("0.15,0.25,0.35")] == [Fraction(3, 20), Fraction(1, 4), Fraction(7, 20)]
    for bad in ("", " , ", "0", "1", "3/2", "abc", "1e-999", "0.15,0.15000000000000000001"):
        with pytest.raises(InputError, match="eps"):
            parse_tolerances(bad)


def test_cli_eps_is_the_exact_rational_in_records_table_and_replay(tmp_path, capsys):
    """``--eps 0.15,3/20,1/3``: one tolerance 3/20 (stored as "0.15", read back as exactly 3/20,
    printed by the replay as 0.15, not binary64(0.15)) and one 1/3 (stored as "1/3")."""
    from fractions import Fraction

    store = make_store(tmp_path / "store", count=1, n=16)
    assert main(["bracket", str(store), "--eps", "0.15,3/20,1/3", "--jobs", "1", "--no-progress"]) == 0
    assert "1 records x 2 tolerances" in capsys.readouterr().out
    folder = list_records(store)[0]
    doc = json.loads((folder / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == ["0.15", "1/3"]
    assert [t.eps for t in read_record(folder).tolerances] == [Fraction(3, 20), Fraction(1, 3)]
    table = list(csv.DictReader(open(store / "bracket.csv")))
    assert [(r["eps"], float(r["eps_value"])) for r in table] == [("0.15", 0.15), ("1/3", 1 / 3)]
    assert main(["replay", str(store), "--out", str(tmp_path / "replay"), "--quiet"]) == 0
    replayed = list(csv.DictReader(open(tmp_path / "replay" / "replay.csv")))
    assert [r["eps"] for r in replayed] == ["0.15", "1/3"]
    assert all(r["upper_outcome"] == "proved" for r in replayed)


def test_float_tolerances_from_python_are_the_decimals_they_print_as(tmp_path):
    """From Python, as on the command line, 0.15 is 3/20 (stored as "0.15"); a Fraction and text are
    the same tolerance, so they are one."""
    from fractions import Fraction

    store = make_store(tmp_path / "store", count=1, n=12)
    rows = bracket_store(store, jobs=1, eps_list=(0.15, 0.25, Fraction(3, 20), "1/4"))
    assert [r["eps"] for r in rows] == [0.15, 0.25] and [r["eps_text"] for r in rows] == ["0.15", "0.25"]
    doc = json.loads((list_records(store)[0] / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == ["0.15", "0.25"]
    assert [t.eps for t in read_record(list_records(store)[0]).tolerances] == [Fraction(3, 20), Fraction(1, 4)]
    assert [r["eps"] for r in csv.DictReader(open(store / "bracket.csv"))] == ["0.15", "0.25"]


def test_bracket_cost_grows_with_the_rank_the_tolerance_needs_and_is_zero_for_an_unreadable_record(tmp_path):
    from softrank.fastpath.bracket.store import bracket_cost

    store = make_store(tmp_path / "store", count=2, n=24, seed=1)  # head 1 has the sharper softmax
    low, high = list_records(store)
    sv = np.linalg.svd(read_record(high).a_hat, compute_uv=False)
    tail = np.sqrt(np.cumsum((sv * sv)[::-1]))[::-1]
    assert bracket_cost(high, 0.15) == 24 * 24 * (int((tail > 0.15).sum()) + 1)
    assert bracket_cost(high, 0.05) > bracket_cost(high, 0.35)  # a smaller eps needs a higher rank
    (low / "record.json").write_text("{ truncated")
    assert bracket_cost(low, 0.15) == 0.0
    assert bracket_cost(tmp_path / "missing", 0.15) == 0.0


@pytest.mark.skipif(not hasattr(__import__("softrank.replay.record", fromlist=["Record"]).Record, "mask"),
                    reason="the checker's record model has no supports yet")
def test_masked_records_are_bracketed_and_the_replay_confirms_them(tmp_path):
    """Records with a causal, a window and a packed support (as ``softrank extract --operators
    native`` writes them): the support survives the rewrite, and the checker proves every witness
    and accepts every lower certificate the producer wrote."""
    from softrank.fastpath.store.support import causal_mask, masked_rowsoftmax64, support_of_mask, window_mask

    rng = np.random.default_rng(7)
    packed = causal_mask(16, 16, 0)
    packed[9, 3] = False
    store = tmp_path / "store"
    for name, mask in (("causal", causal_mask(16, 16, 0)), ("window", window_mask(16, 16, 5, 0)), ("packed", packed)):
        Q, K = rng.normal(size=(16, 3)), rng.normal(size=(16, 3))
        with RecordWriter(store, f"masked-{name}", {"model": "synthetic", "family": "synthetic", "layer": 0, "head": 0},
                          support=support_of_mask(mask), mask=mask) as w:
            w.set_qk(Q, K, 2.0)
            w.set_a_hat(masked_rowsoftmax64(2.0 * Q @ K.T, mask))
    bracket_store(store, jobs=1, eps_list=(0.25,))
    for folder in list_records(store):
        rec = read_record(folder)
        assert rec.mask is not None and np.all(rec.a_hat[~rec.mask] == 0.0)
        assert rec.tolerances[0].upper is not None and rec.tolerances[0].lower
    summary = replay_store(store, tmp_path / "replay")
    assert summary.malformed == 0 and summary.tolerances == 3
    assert summary.upper_proved == 3 and summary.lower_rejected == 0
