"""Theorem sanity checks: softmax perturbation (validated/softmax_perturbation.py), tau bound
(validated/tau.py), q LP, gauge audit and the theorem CLI on a small synthetic store."""

import json
import math

import numpy as np
import pytest
from flint import arb

from softrank.validated.outcome import Outcome
from softrank.validated.softmax_perturbation import check_softmax_perturbation
from softrank.validated.tau import check_tau_bound
from softrank.validated.softmax_enclosure import logits_balls


def _b(v):
    return [arb(float(x)) for x in v]


def test_perturbation_random_cases_proved():
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(2, 20))
        x, h = rng.standard_normal(n) * 3, rng.standard_normal(n)
        chk, lhs, rhs = check_softmax_perturbation(_b(x), _b(x + h))
        assert chk.outcome is Outcome.PROVED and lhs.mid() < rhs.mid()


def test_perturbation_equality_case_is_unresolved_not_proved():
    a = 2.0  # x = (-a/4, a/4), h = (a/2, -a/2): exact equality; balls overlap
    chk, lhs, rhs = check_softmax_perturbation(_b([-a / 4, a / 4]), _b([a / 4, -a / 4]))
    assert chk.outcome is Outcome.UNRESOLVED
    assert abs(float(lhs.mid()) - 2 * math.tanh(a / 4)) < 1e-15 and abs(float(rhs.mid()) - 2 * math.tanh(a / 4)) < 1e-15


def test_perturbation_wide_balls_are_unresolved():
    x = [arb(0, 1), arb(1)]
    chk, _, _ = check_softmax_perturbation(x, [arb(0.5), arb(0.2)])
    assert chk.outcome is Outcome.UNRESOLVED


def test_perturbation_suite_sharpness_and_no_refutation():
    from softrank.studies.theorem.perturbation import perturbation_suite

    res = perturbation_suite(n_random=30, n_adversarial=10, seed=2)
    assert res["counts"]["refuted"] == 0 and res["counts"]["unresolved"] == 0
    assert res["sharpness_final_ratio"] > 0.999
    ratios = [r["ratio"] for r in res["sharpness_sequence"] if r["a"] == 1.0]
    assert ratios == sorted(ratios) and ratios[-1] < 1


def _small_operator(m=12, n=14, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, d)), rng.standard_normal((n, d)), 0.9


def test_q_lp_matches_definition_and_tau_check_proved():
    from softrank.studies.theorem.kappa_sdp import balanced_factors
    from softrank.studies.theorem.record_logits import double_centre
    from softrank.studies.theorem.tau_check import q_lp

    q, k, beta = _small_operator()
    h = beta * q @ k.T
    c = double_centre(h)
    x0, y0 = balanced_factors(c, 2)
    e = c - x0 @ y0.T
    qv, b = q_lp(e)
    # LP optimum is no worse than b = 0 and than b = column means
    for bb in (np.zeros(e.shape[1]), e.mean(0)):
        assert qv <= np.max((e - bb).max(1) - (e - bb).min(1)) + 1e-9
    chk = check_tau_bound(logits_balls(queries=q, keys=k, scale=beta), x0, y0, h.mean(0) + b)
    assert chk.check.outcome is Outcome.PROVED and chk.rows_proved == chk.rows
    assert abs(chk.tau_hat_upper - 2 * math.tanh(qv / 4)) < 1e-12
    assert chk.distance_upper <= chk.tau_hat_upper


def test_tau_check_unresolved_for_wide_logit_balls():
    q, k, beta = _small_operator(6, 7, 3)
    rows = logits_balls(queries=q, keys=k, scale=beta)
    rows = [[v + arb(0, 50) for v in row] for row in rows]
    x0, y0 = np.zeros((6, 1)), np.zeros((7, 1))
    chk = check_tau_bound(rows, x0, y0, np.zeros(7))
    assert chk.check.outcome is Outcome.UNRESOLVED


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.store.writer import RecordWriter, write_index

    folder = tmp_path_factory.mktemp("store")
    for i in range(2):
        q, k, beta = _small_operator(16, 16, 5, seed=10 + i)
        h = beta * q @ k.T
        with RecordWriter(folder, f"syn-{i}", {"model": "synthetic", "family": "synthetic", "layer": 0, "head": i}) as w:
            w.set_qk(q, k, beta)
            w.set_a_hat(rowsoftmax64(h))
    write_index(folder)
    return folder


def test_cli_tau_and_gauge_audit_and_kappa_gamma(store, capsys):
    from softrank.cli import main

    assert main(["theorem", "tau", str(store), "--rank", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["proved"] == 2 and out["summary"]["refuted"] == 0
    assert all(r["tau_lower_validated"] <= r["tau_hat_validated"] for r in out["rows"])
    assert out["summary"]["max_tau_bracket_rel_gap"] < 1e-8
    assert main(["theorem", "gauge-audit", str(store), "--rank", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"]
    assert len(rows) == 4 and all(r["A_change_validated_upper"] < 1e-12 for r in rows)
    assert all(r["kappa_lower_rel_change"] < 1e-8 for r in rows)
    assert any(abs(r["gamma_ratio"] - 1) > 0.1 for r in rows)  # native Gamma moves
    assert main(["theorem", "kappa-gamma", str(store), "--rank", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert all(r["kappa_C_lower_le_gamma"] and r["kappa_T_lower_le_bal"] for r in out["rows"])


@pytest.mark.parametrize("command", [["theorem", "tau"], ["kappa"]], ids=["theorem", "kappa"])
def test_cli_names_entries_of_records_that_are_not_folders(store, tmp_path, command):
    """``softrank theorem`` and ``softrank kappa`` select records through ``select_records``: a
    file, a FIFO and a dangling link in records/ were skipped without a word; each is now one
    stderr line (never opened), the records are computed, exit code 2."""
    import shutil
    import subprocess
    import sys

    from helpers import add_stray_entries, assert_strays_reported

    shutil.copytree(store, tmp_path / "store")
    strays = add_stray_entries(tmp_path / "store")
    proc = subprocess.run([sys.executable, "-m", "softrank", *command, str(tmp_path / "store"), "--rank", "2",
                           "--json"], capture_output=True, text=True, timeout=120)
    assert_strays_reported(proc.returncode, proc.stderr, strays)
    rows = json.loads(proc.stdout)["rows"]
    assert {r.get("record", r.get("record_id")) for r in rows} == {"syn-0", "syn-1"}


def test_cli_theorem_bad_arguments(store):
    from softrank.cli import main

    assert main(["theorem", "tau", str(store), "--rank", "0"]) == 2
    assert main(["theorem", "tau", str(store), "--records", "nope"]) == 2
    assert main(["theorem", "perturbation", "--random", "-1"]) == 2


def test_cli_perturbation_json(capsys):
    from softrank.cli import main

    assert main(["theorem", "perturbation", "--random", "10", "--adversarial", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"]["refuted"] == 0 and out["sharpness_final_ratio"] > 0.999


def test_karp_cycle_matches_lp_and_gives_validated_lower_bound():
    from softrank.studies.theorem.tau_check import max_mean_cycle, q_lp
    from softrank.validated.tau import q_lower_cycle

    rng = np.random.default_rng(4)
    for m, n in ((5, 6), (9, 7), (12, 12)):
        f = rng.standard_normal((m, n)) * 3
        q, _ = q_lp(f)
        v, rows, cols = max_mean_cycle(f)
        assert abs(v - q) < 1e-9 * max(1, q)
        lb = q_lower_cycle([[arb(float(x)) for x in row] for row in f], np.zeros((m, 1)), np.zeros((n, 1)), rows, cols)
        assert lb.mid() <= q + 1e-9 and abs(float(lb.mid()) - q) < 1e-9 * max(1, q)
    # a wrong cycle still gives a lower bound (never above q)
    lb = q_lower_cycle([[arb(float(x)) for x in row] for row in f], np.zeros((12, 1)), np.zeros((12, 1)), [0, 1], [2, 3])
    assert float(lb.mid()) <= q + 1e-12



def test_perturbation_never_refuted_wide_range():
    """Seeded sweep over wide ranges (property-style): never refuted, and the balls are consistent."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        n = int(rng.integers(2, 12))
        x = rng.uniform(-30, 30, n)
        y = x + rng.uniform(-20, 20, n)
        chk, lhs, rhs = check_softmax_perturbation(_b(x), _b(y))
        assert chk.outcome is not Outcome.REFUTED
        assert lhs.lower() <= rhs.upper()


@pytest.fixture(scope="module")
def degenerate_store(tmp_path_factory):
    """Valid operators without the ratios the summaries report: uniform rows (A of rank 1, kappa
    and tau zero), two equal columns, and a single row (no rank r >= 1 below min(m, N))."""
    from softrank.fastpath.float64 import rowsoftmax64
    from softrank.fastpath.store.writer import RecordWriter, write_index

    folder = tmp_path_factory.mktemp("degenerate")
    rng = np.random.default_rng(5)
    for name, h in (("uniform-8", np.zeros((8, 8))), ("equal-cols", np.repeat(rng.normal(size=(10, 1)), 2, axis=1)),
                    ("one-row", rng.normal(size=(1, 6))), ("generic", rng.normal(size=(9, 9)))):
        with RecordWriter(folder, name, {"model": "synthetic", "family": "synthetic"}) as w:
            w.set_logits(h)
            w.set_a_hat(rowsoftmax64(h))
    write_index(folder)
    return folder


@pytest.mark.parametrize("command, code, failing", [(["kappa"], 2, ["one-row"]), (["theorem", "tau"], 0, [])],
                         ids=["kappa", "theorem-tau"])
def test_cli_degenerate_operators_give_null_ratios_not_a_traceback(degenerate_store, command, code, failing, capsys):
    """A zero kappa or tau makes a ratio undefined: the record is still reported, the summary's
    medians run over the records that have the ratio and the JSON is standard (null, never NaN);
    kappa needs a rank r >= 1 below min(m, N), so the single-row operator is one error line there
    (exit 2)."""
    from softrank.cli import main

    assert main([*command, str(degenerate_store), "--json"]) == code
    captured = capsys.readouterr()
    out = json.loads(captured.out, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert {r["record"] for r in out["rows"]} == {"uniform-8", "equal-cols", "one-row", "generic"} - set(failing)
    errors = captured.err.splitlines()
    assert len(errors) == len(failing) and all(name in line for name, line in zip(failing, errors))
    assert "Traceback" not in captured.err
    assert main([*command, str(degenerate_store)]) == code  # the human-readable lines too
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("command", [["theorem", "tau"], ["kappa"]], ids=["theorem", "kappa"])
def test_cli_refuses_a_masked_record_in_one_line(store, tmp_path, command, capsys):
    """A masked record (operator.support) has zeros: C = P log(A) P, tau and kappa are undefined.
    The command refuses it in one line and computes the others."""
    import shutil

    import softrank
    from softrank.cli import main

    shutil.copytree(store, tmp_path / "store")
    h = np.random.default_rng(0).normal(size=(6, 6))
    softrank.Store(tmp_path / "store").write(softrank.Record.from_logits(h, record_id="masked",
                                                                         mask=np.tril(np.ones((6, 6), bool))))
    assert main([*command, str(tmp_path / "store"), "--rank", "2", "--json"]) == 2
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "masked" in line]
    assert len(lines) == 1 and "the theorem assumes one common positive support" in lines[0]
    assert {r.get("record", r.get("record_id")) for r in json.loads(out)["rows"]} == {"syn-0", "syn-1"}


def test_study_readers_refuse_a_masked_record(tmp_path):
    import softrank
    from softrank.studies.kappa.kappa_operator import operator_study
    from softrank.studies.widths.widths import replay_one
    from softrank.errors import InputError

    h = np.random.default_rng(1).normal(size=(5, 5))
    softrank.Store(tmp_path).write(softrank.Record.from_logits(h, record_id="m", mask=np.tril(np.ones((5, 5), bool))))
    for call in (lambda f: operator_study(f, [0.1]), replay_one):
        with pytest.raises(InputError) as err:
            call(str(tmp_path / "records" / "m"))
        assert "one common positive support" in err.value.one_line()
