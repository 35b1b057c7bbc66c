"""What the front ends share: the parsers for integer lists and counts (one-line
``InputError``), the progress bar, and ``softrank replay``'s progress."""

from __future__ import annotations

import json
import sys
from argparse import Namespace

import pytest

from softrank.cli.args import check_count, parse_count, parse_int_list
from softrank.cli.progress import progress
from softrank.errors import InputError


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_parse_int_list():
    assert parse_int_list(None, "layers") is None
    assert parse_int_list("0,2,4-6", "layers") == [0, 2, 4, 5, 6]
    for bad in ("", "a", "-1", "1-", "0-1000000000"):
        with pytest.raises(InputError, match="layers"):
            parse_int_list(bad, "layers")
    assert parse_int_list("-1", "k", minimum=None) == [-1]


def test_counts():
    assert check_count(3, "jobs") == 3 and check_count(None, "jobs") is None and check_count(0, "k", 0) == 0
    assert parse_count("7", "rank", minimum=0) == 7 and parse_count(" 0 ", "rank", minimum=0) == 0
    for value, minimum in ((0, 1), (-1, 0)):
        with pytest.raises(InputError, match=f"must be an integer >= {minimum}"):
            check_count(value, "jobs", minimum)
    for bad in ("one", "-1", "1.5", ""):
        with pytest.raises(InputError, match="rank"):
            parse_count(bad, "rank", minimum=0)


def test_counts_have_upper_limits_and_paths_are_checked_before_work(tmp_path):
    """A count that would run for ages is refused; an output file over a folder or FIFO, an empty
    path, and an output folder inside the input are refused before anything is created."""
    import os

    from softrank.cli.args import max_jobs
    from softrank.cli.paths import check_outside, output_dir, output_file

    assert check_count(5, "repeats", maximum=5) == 5 and max_jobs() >= 64
    with pytest.raises(InputError, match=r"repeats.*<= 5, got 6"):
        check_count(6, "repeats", maximum=5)
    with pytest.raises(InputError, match=r"jobs.*digits"):
        parse_count("9" * 40, "jobs", maximum=max_jobs())
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    for name in ("pipe", "folder"):
        with pytest.raises(InputError, match="not a regular file"):
            output_file(tmp_path / name)
    with pytest.raises(InputError, match="does not exist"):
        output_file(tmp_path / "nowhere" / "x.csv")
    assert output_file(tmp_path / "nowhere" / "x.csv", folder_must_exist=False).name == "x.csv"
    for empty in ("", " "):
        with pytest.raises(InputError, match="empty path"):
            output_dir(empty)
    check_outside(tmp_path / "store", tmp_path / "store")  # the folder itself: in place, allowed
    check_outside(tmp_path / "other", tmp_path / "store")
    with pytest.raises(InputError, match="inside"):
        check_outside(tmp_path / "store" / "records" / "x", tmp_path / "store")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "pipe"]


def test_an_output_file_in_a_read_only_folder_is_refused_first(tmp_path, monkeypatch):
    """Checked before the work (report drew every figure, then failed naming a temporary file)."""
    import os

    from softrank.cli.paths import output_file

    monkeypatch.setattr(os, "access", lambda path, mode: False)  # as a user without write permission there
    with pytest.raises(InputError, match="permission denied") as err:
        output_file(tmp_path / "page.html", folder_must_exist=False)
    assert err.value.where == str(tmp_path / "page.html") and err.value.field == "out"


def test_progress_off_and_on(capsys):
    with progress(False, 5, "x") as update:
        update(3)
    assert capsys.readouterr().err == ""
    with progress(True, 2, "working") as update:
        update(1)
        update(2)
    err = capsys.readouterr().err
    assert "working" in err and "2/2" in err


def test_replay_progress_is_the_shared_bar(tmp_path, capsys, monkeypatch):
    from softrank.cli import main, replay

    assert main(["demo", "--out", str(tmp_path), "--operators", "2", "--size", "24"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    args = Namespace(store=str(tmp_path / "store"), out=str(tmp_path / "r"), strict=False, jobs=1, quiet=False,
                     json=False, budgets="8,16,32", fail_on="")
    assert replay.run(args) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("replayed 2 records (0 malformed), 6 tolerances:")
    assert "replay" in captured.err and "2/2" in captured.err and "━" in captured.err  # the shared rich bar
    assert "replay 1/2" not in captured.err and "replay 2/2" not in captured.err  # not a hand-made counter
    assert replay.run(Namespace(**{**vars(args), "quiet": True})) == 0
    assert capsys.readouterr().err == ""


def test_summary_helpers_skip_missing_ratios_and_json_is_standard():
    import json
    import math

    from softrank.cli.output import json_text
    from softrank.cli.summaries import max_or_none, median_or_none, shown_number

    assert median_or_none([3.0, None, math.nan, 1.0, math.inf, 2.0]) == 2.0
    assert max_or_none([None, -1.0, math.nan]) == -1.0
    assert median_or_none([None, math.nan]) is None and max_or_none([]) is None
    assert shown_number(None, ".3f") == "n/a" and shown_number(math.nan, ".1e") == "n/a"
    assert shown_number(0.5, ".3f") == "0.500"
    text = json_text({"a": [1.5, math.nan, {"b": -math.inf}], "c": (math.inf, 2)})
    assert json.loads(text) == {"a": [1.5, None, {"b": None}], "c": [None, 2]}
    assert "NaN" not in text and "Infinity" not in text
