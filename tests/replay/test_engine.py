"""The pure replay engine: a record in, a typed result out; validated L > validated U is refused
and reported as a contradiction naming both certificates (it can only come from an unsound rule,
so the test plants one)."""

from __future__ import annotations

import numpy as np

from helpers import rowsoftmax_float
from softrank.fastpath.writer import RecordWriter
from softrank.replay import rules
from softrank.replay.engine import replay_record
from softrank.replay.reader import read_record
from softrank.validated.outcome import Check, Outcome


def _record(tmp_path, lower_claim: int):
    n = 12
    h = np.random.default_rng(3).normal(size=(n, n)) * 3
    a = rowsoftmax_float(h)
    u, s, vt = np.linalg.svd(a)
    with RecordWriter(tmp_path, "r", {"family": "synthetic"}) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        w.add_tolerance(0.25, upper=(a, np.eye(n), "identity"), lower=[{"kind": "frobenius", "lower": lower_claim}],
                        float64={"lower": 1, "upper": n})
    return read_record(tmp_path / "records" / "r")


def test_a_record_gives_a_typed_result(tmp_path):
    res = replay_record(_record(tmp_path, 1))
    (t,) = res.tolerances
    assert t.upper.outcome is Outcome.PROVED and t.validated_upper == 12
    assert t.validated_lower >= 1 and t.lowers[0].kind == "frobenius" and not t.contradiction
    assert t.verdict(12) == "feasible" and t.verdict(0) == "impossible" and t.verdict(5) == "unresolved"
    assert res.chi is not None and res.chi >= 0


def test_a_contradiction_is_refused_and_names_both_certificates(tmp_path, monkeypatch):
    record = _record(tmp_path, 13)  # claims r_eps(A) >= 13 > 12 = rank of the proved witness
    unsound = rules.Rule("frobenius", "lower", rules.LOWER_RULES["frobenius"].proofs,
                         lambda claim: Check(Outcome.PROVED, "planted", assumptions=["planted"]))
    monkeypatch.setitem(rules.LOWER_RULES, "frobenius", unsound)
    (t,) = replay_record(record).tolerances
    assert t.validated_lower is None and t.validated_upper is None
    assert "frobenius" in t.contradiction and "identity" in t.contradiction and "13" in t.contradiction
    assert all(t.verdict(k) == "error" for k in (8, 16, 32))


def test_the_replay_command_exits_3_on_a_contradiction(tmp_path, monkeypatch):
    from softrank.cli.replay import replay_store

    _record(tmp_path / "store", 13)
    unsound = rules.Rule("frobenius", "lower", (), lambda claim: Check(Outcome.PROVED, "planted"))
    monkeypatch.setitem(rules.LOWER_RULES, "frobenius", unsound)
    summary = replay_store(tmp_path / "store", tmp_path / "out", jobs=1)
    assert summary.contradictions == 1 and summary.exit_code() == 3
    assert "contradiction" in summary.errors[0]


def test_an_unexpected_float_environment_sends_every_check_to_arb(tmp_path, monkeypatch):
    from softrank.replay import engine

    record = _record(tmp_path, 1)
    assert replay_record(record).tolerances[0].upper.route.startswith("binary64")
    monkeypatch.setattr(engine, "binary64_environment_ok", lambda: False)  # as under flush-to-zero
    (t,) = replay_record(record).tolerances
    assert t.upper.route == "arb" and t.upper.proved
