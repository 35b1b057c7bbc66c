"""The command line's contract with scripts: every command that prints results takes ``--json``
(one JSON object on stdout, nothing else there), every command's ``--help`` states its exit codes,
and a closed stdout (``softrank replay ... | head``) ends the command quietly."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from softrank.cli import COMMANDS, EXIT_CODES, build_parser, main


def _leaves(parser: argparse.ArgumentParser, path: list[str]):
    """(command words, parser) of every command that runs: a parser without subcommands."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, child in action.choices.items():
            yield from _leaves(child, path + [name])


def _commands():
    for name in COMMANDS:
        top = build_parser(only=name)  # configures (and imports) that command only
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        yield from _leaves(sub, [name])
        yield [name, "(top)"], sub


def test_every_command_prints_results_with_json_and_states_its_exit_codes():
    assert set(EXIT_CODES) == set(COMMANDS)  # each command's own codes, not only the common ones
    seen = []
    for path, parser in _commands():
        text = " ".join(parser.format_help().split())  # the epilog is wrapped
        assert "exit codes: 0 " in text and " 2 bad input" in text and "141 stdout closed" in text, path
        if path[-1] != "(top)":
            seen.append(" ".join(path))
            assert "--json" in {o for a in parser._actions for o in a.option_strings}, path
    for name in ("run", "extract", "bracket", "tighten", "replay", "regress", "report", "demo", "families grid",
                 "theorem tau", "study kappa", "bench"):
        assert name in seen


def test_top_level_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as done:
        main(["replay", "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 done; 1 an outcome named in --fail-on" in out and "3 a proved lower end" in out


def _softrank(*args, cwd):
    return subprocess.run([sys.executable, "-m", "softrank", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def _one_object(proc) -> dict:
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    obj = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert isinstance(obj, dict)
    return obj


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("json")
    proc = _softrank("demo", "--out", root / "demo", "--operators", "4", "--size", "24", "--json", cwd=root)
    return root, proc


def test_demo_json(demo):
    root, proc = demo
    obj = _one_object(proc)
    assert obj["store"] == str(root / "demo" / "store") and obj["replay"] == str(root / "demo" / "replay")
    assert (obj["operators"], obj["size"], obj["seed"], obj["style"]) == (4, 24, 0, "heads")
    assert obj["replay_summary"]["records"] == 4 and obj["replay_summary"]["upper_proved"] == 12
    assert [s["eps"] for s in obj["summary"]] == ["0.15", "0.25", "0.35"]
    assert all(s["resolved"] >= 2 for s in obj["summary"]) and obj["exit_code"] == 0


def test_bracket_tighten_regress_report_json(demo, tmp_path):
    root, _ = demo
    store = root / "demo" / "store"
    obj = _one_object(_softrank("bracket", store, "--out", tmp_path / "b", "--eps", "0.25", "--jobs", "1",
                                "--no-progress", "--json", cwd=tmp_path))
    assert obj["out"] == str(tmp_path / "b") and obj["records"] == 4 and obj["malformed"] == 0
    assert [e["eps"] for e in obj["eps"]] == ["0.25"] and obj["eps"][0]["operators"] == 4
    assert obj["table"] == str(tmp_path / "b" / "bracket.csv") and obj["exit_code"] == 0
    obj = _one_object(_softrank("tighten", tmp_path / "b", "--out", tmp_path / "t", "--budget", "1",
                                "--records", "demo-03", "--no-progress", "--json", cwd=tmp_path))
    assert obj["out"] == str(tmp_path / "t") and obj["records"] == 4 and obj["tried"] == 1
    assert [e["eps"] for e in obj["eps"]] == ["0.25"] and obj["table"] == str(tmp_path / "t" / "tighten.csv")
    replay = root / "demo" / "replay"
    obj = _one_object(_softrank("regress", replay, "--out", tmp_path / "g", "--json", cwd=tmp_path))
    assert obj["verdicts"] == obj["agree"] == 36 and obj["failures"] == 0 and obj["tables"] == str(tmp_path / "g")
    assert obj["changes"] is None and obj["exit_code"] == 0
    obj = _one_object(_softrank("regress", replay, "--out", tmp_path / "g2", "--against", replay, "--json",
                                "--write-baseline", tmp_path / "base.json", cwd=tmp_path))
    assert obj["changes"] == [] and obj["baseline"] == str(tmp_path / "base.json") and obj["exit_code"] == 0
    obj = _one_object(_softrank("report", replay, "--out", tmp_path / "r.html", "--json", cwd=tmp_path))
    assert obj["report"] == str(tmp_path / "r.html") and obj["figures"] == ["brackets-synthetic", "distributions"]


def test_run_json(tmp_path):
    from softrank.fastpath.demo import build_demo_store

    out = tmp_path / "out"
    build_demo_store(out / "store", 2, 16, seed=4)
    obj = _one_object(_softrank("run", "--out", out, "--reuse", "--jobs", "1", "--no-progress", "--eps", "0.25",
                                "--json", cwd=tmp_path))
    assert obj["report"] == str(out / "report.html") and obj["replay"] == str(out / "replay")
    assert [(r["family"], str(r["eps"]), r["operators"]) for r in obj["table"]] == [("synthetic", "0.25", 2)]
    assert obj["replay_summary"]["records"] == 2 and obj["exit_code"] == 0 and set(obj["seconds"]) == \
        {"extract", "bracket", "replay"}


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="extraction needs torch")
def test_extract_json(tmp_path):
    import torch
    import transformers

    torch.manual_seed(0)
    transformers.GPT2Model(transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4,
                                                   n_positions=128)).save_pretrained(tmp_path / "gpt2")
    obj = _one_object(_softrank("extract", "--model", tmp_path / "gpt2", "--out", tmp_path / "s", "--tokens", "32",
                                "--widths", "16", "--layers", "1", "--heads", "0", "--sources", "1", "--no-progress",
                                "--json", cwd=tmp_path))
    assert obj["out"] == str(tmp_path / "s") and obj["operators"] == len(obj["ids"]) == 1
    assert obj["model"] == str(tmp_path / "gpt2") and obj["seconds"] >= 0


def test_a_closed_stdout_ends_quietly(demo, tmp_path):
    """``softrank replay ... | head`` printed 'error: file system: Broken pipe' (exit 2)."""
    root, _ = demo
    proc = subprocess.Popen([sys.executable, "-m", "softrank", "replay", str(root / "demo" / "store"), "--out",
                             str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()  # the reader went away before the summary line
    err = proc.stderr.read()
    assert proc.wait(timeout=600) == 141 and err == b""
    assert (tmp_path / "r" / "replay.parquet").is_file()  # the work itself was done


def test_the_printer_keeps_json_dumps_bytes(capsys):
    """``print_json`` prints what ``json.dumps`` printed before (default separators, key order,
    ``indent`` / ``sort_keys`` where a command asked), but as standard JSON: NaN and infinities
    are null, numpy scalars numbers, and what json cannot write its ``str``."""
    import math

    import numpy as np

    from softrank.cli.output import json_text, print_json

    obj = {"b": 1, "a": [0.25, "x", None, True, (1, 2)], "c": {"z": 1e-300, "y": "é"}}
    for kwargs in ({}, {"indent": 2}, {"indent": 1}, {"sort_keys": True}):
        print_json(obj, **kwargs)
        assert capsys.readouterr().out == json.dumps(obj, **kwargs) + "\n"
    text = json_text({"r": math.inf, "n": math.nan, "k": np.int64(3), "f": np.float64(0.5), "p": Path("/x")})
    assert text == '{"r": null, "n": null, "k": 3, "f": 0.5, "p": "/x"}'


@pytest.mark.parametrize("argv, line", [
    (["oracle", "{missing}", "--eps", "1/4", "--rank", "1", "--json"], "{missing}"),
    (["bracket", "{missing}", "--out", "{tmp}/b", "--json"], "{missing}"),
    (["replay", "{missing}", "--out", "{tmp}/r", "--json"], "{missing}"),
    (["families", "grid", "--r", "0", "--L", "3", "--eps", "1/4", "--json"], "r"),
])
def test_a_bad_input_under_json_is_one_error_object(tmp_path, capsys, argv, line):
    argv = [a.replace("{missing}", str(tmp_path / "absent")).replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith(f"softrank {argv[0]}: error: ")
    obj = json.loads(out)  # the whole of stdout is the one object
    assert obj == {"error": err.strip().split(": error: ", 1)[1], "exit_code": 2}
    assert line.replace("{missing}", str(tmp_path / "absent")) in obj["error"]
    assert main([a for a in argv if a != "--json"]) == 2  # without --json: nothing on stdout
    assert capsys.readouterr().out == ""


def test_a_bad_input_under_json_in_a_subprocess(tmp_path):
    proc = _softrank("report", tmp_path / "absent", "--out", tmp_path / "r.html", "--json", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert json.loads(proc.stdout) == {"error": proc.stderr.strip().split(": error: ", 1)[1], "exit_code": 2}
