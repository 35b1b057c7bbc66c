"""``softrank oracle``: the interface of docs/oracle.md, exactly; one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction as F

import pytest

from softrank.cli import main


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # every command runs outside the checkout


def softrank(*args):
    return subprocess.run([sys.executable, "-m", "softrank", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
def matrix(tmp_path):
    path = tmp_path / "A.json"
    path.write_text(json.dumps([["1/2", 0, "1/2"], ["1/7", "3/7", "3/7"], ["2/5", "1/5", "0.4"]]))
    return path


def run_json(capsys, *args):
    code = main(["oracle", *map(str, args)])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


def test_decide_json(matrix, capsys):
    out = run_json(capsys, matrix, "--eps", "2/5", "--rank", "1", "--json")
    assert out["verdict"] == "feasible" and out["certificate"]["kind"] == "witness" and out["recheck"] is True
    out = run_json(capsys, matrix, "--eps", "2/5", "--rank", "1", "--class", "stochastic", "--json")
    assert out["verdict"] == "impossible" and out["certificate"]["kind"] == "rank1-stochastic-dual"
    out = run_json(capsys, matrix, "--eps", "1/4", "--rank", "0", "--json")
    assert out["verdict"] == "impossible"


def test_profile_json(matrix, capsys):
    out = run_json(capsys, matrix, "--eps", "2/5", "--profile", "--json")
    assert (out["lower"], out["upper"], out["rank"]) == (1, 1, 1)
    assert isinstance(out["lower"], int) and isinstance(out["upper"], int)
    out = run_json(capsys, matrix, "--eps", "2/5", "--profile", "--class", "stochastic", "--json")
    assert (out["lower"], out["upper"], out["rank"]) == (2, 2, 2)


def test_outside_scope_and_bracket(tmp_path, capsys):
    path = tmp_path / "big.json"
    rows = [[1 if i == j else 0 for j in range(5)] for i in range(5)]
    rows[0][1] = "1/3"
    path.write_text(json.dumps(rows))
    out = run_json(capsys, path, "--eps", "1/10", "--rank", "2", "--json", "--no-search")
    # k = 2 on 5 x 5 has no direct reduction; a decoder on rows of the near-identity proves it impossible
    assert out["verdict"] == "impossible" and out["certificate"]["kind"] == "decoder"
    assert out["proof"] == "proofs/lemma_D_contractive_decoder.md" and out["recheck"] is True
    out = run_json(capsys, path, "--eps", "1/10", "--profile", "--json", "--no-search")
    assert out["lower"] <= out["upper"]
    if out["lower"] != out["upper"]:
        assert out["rank"] is None


def test_json_decimals_are_read_exactly(tmp_path, capsys):
    path = tmp_path / "d.json"
    path.write_text("[[0.1, 0.9], [0.3, 0.7]]")  # JSON numbers: the decimals 1/10, 9/10, ...
    out = run_json(capsys, path, "--eps", "0.2", "--profile", "--json")
    assert out["thresholds"]["0"] == "1"  # binary64 0.1 + 0.9 would not sum to exactly 1 by chance


def test_human_output(matrix, capsys):
    assert main(["oracle", str(matrix), "--eps", "2/5", "--profile"]) == 0
    assert "r_eps(A) = 1" in capsys.readouterr().out


@pytest.mark.parametrize("content,args", [
    ('[["1/2", "x"]]', ["--rank", "1"]),
    ('[[1, 2], [3]]', ["--rank", "1"]),
    ('[[1, NaN]]', ["--rank", "1"]),
    ('[[1, true]]', ["--rank", "1"]),
    ('[]', ["--rank", "1"]),
    ('{"a": 1}', ["--rank", "1"]),
    ('[[1, 2]', ["--rank", "1"]),
    ('[[1, 2]]', ["--rank", "-1"]),
    ('[[1, 2]]', ["--rank", "one"]),
])
def test_bad_input_one_line_exit_2(tmp_path, content, args):
    path = tmp_path / "bad.json"
    path.write_text(content)
    proc = softrank("oracle", str(path), "--eps", "1/4", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("eps", ["0", "1", "3/2", "-1/4", "abc", "nan"])
def test_eps_outside_open_unit_interval(tmp_path, eps):
    path = tmp_path / "A.json"
    path.write_text("[[1, 0], [0, 1]]")
    proc = softrank("oracle", str(path), "--eps", eps, "--rank", "1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_missing_file(tmp_path):
    proc = softrank("oracle", str(tmp_path / "none.json"), "--eps", "1/4", "--rank", "1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_subprocess_json_stdout_is_clean(matrix):
    proc = softrank("oracle", str(matrix), "--eps", "1/4", "--rank", "1", "--json")
    assert proc.returncode == 0
    out = json.loads(proc.stdout)  # nothing but the JSON object on stdout
    assert out["verdict"] in ("feasible", "impossible", "outside-scope") and "certificate" in out
    assert F(out["eps"]) == F(1, 4)


def test_profile_progress_on_a_terminal_only(matrix, capsys, monkeypatch):
    """On a terminal, --profile prints one line per decided rank on stderr (stdout unchanged);
    --no-progress and a non-terminal stderr print none."""
    import softrank.cli.oracle as cli_oracle

    assert main(["oracle", str(matrix), "--eps", "2/5", "--profile", "--json"]) == 0
    plain = capsys.readouterr()
    assert plain.err == ""
    monkeypatch.setattr(cli_oracle, "stderr_is_terminal", lambda: True)
    assert main(["oracle", str(matrix), "--eps", "2/5", "--profile", "--json"]) == 0
    shown = capsys.readouterr()
    assert json.loads(shown.out) == json.loads(plain.out)
    lines = shown.err.splitlines()
    decided = json.loads(plain.out)["decisions"]
    assert len(lines) == len(decided) >= 2
    for line, d in zip(lines, decided):
        assert line.startswith(f"softrank oracle: k = {d['k']}: {d['verdict']} (")
    assert main(["oracle", str(matrix), "--eps", "2/5", "--profile", "--json", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_help_states_the_digit_limit():
    """``softrank oracle --help`` says that entries over MAX_DIGITS digits per part are refused."""
    from softrank.exact.rational import MAX_DIGITS

    proc = softrank("oracle", "--help")
    assert proc.returncode == 0
    assert f"more than {MAX_DIGITS} digits per part" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("entry", ["1" + "0" * 400, '"1/1' + "0" * 400 + '"', "0." + "1" * 401])
def test_entries_over_the_digit_limit_are_refused(tmp_path, capsys, entry):
    """A JSON integer, a rational text or a JSON decimal with 401 digits in a part: one line, exit 2;
    400 digits are read."""
    from softrank.exact.rational import MAX_DIGITS

    path = tmp_path / "A.json"
    path.write_text(f"[[{entry}, 0], [0, 1]]")
    assert main(["oracle", str(path), "--eps", "1/4", "--rank", "2"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"at most {MAX_DIGITS} digits per part" in err
    path.write_text(f"[[{entry.replace('0' * 400, '0' * 399).replace('1' * 401, '1' * 400)}, 0], [0, 1]]")
    assert main(["oracle", str(path), "--eps", "1/4", "--rank", "2"]) == 0
