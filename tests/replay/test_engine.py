"""The pure replay engine: a record in, a typed result out; validated L > validated U is refused
and reported as a contradiction naming both certificates (it can only come from an unsound rule,
so the test plants one)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import rowsoftmax_float
from softrank.fastpath.store.writer import RecordWriter
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
    from softrank.findings.replay_job import replay_store

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


def test_budget_verdicts_at_their_boundaries():
    from softrank.replay.engine import validated_verdict

    assert validated_verdict(5, 5, None) == "unresolved"  # L = k: r_eps >= 5 leaves rank 5 possible
    assert validated_verdict(5, 6, None) == "impossible"
    assert validated_verdict(5, 1, 5) == "feasible" and validated_verdict(5, 1, 6) == "unresolved"


def test_results_cannot_be_changed_after_the_replay(tmp_path):
    import dataclasses

    (t,) = replay_record(_record(tmp_path, 1)).tolerances
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.lowers[0].claimed = 99


def test_without_an_enclosure_nothing_is_proved_and_the_upper_check_names_lemma_u(tmp_path, monkeypatch):
    from softrank.replay import engine

    record = _record(tmp_path, 1)

    def no_enclosure(*args, **kwargs):
        raise ArithmeticError("planted: no enclosure")

    monkeypatch.setattr(engine, "softmax_binary64_enclosure", no_enclosure)
    monkeypatch.setattr(engine, "logits_balls", no_enclosure)
    (t,) = replay_record(record).tolerances
    assert t.upper.outcome is Outcome.UNRESOLVED and t.upper.lemma == rules.UPPER_RULE.proofs[0]
    assert "no enclosure" in t.upper.reason and t.validated_upper is None
    assert t.validated_lower == 1 and t.lower_kind.startswith("trivial")  # Lemma T needs no enclosure


def test_with_no_rule_proving_anything_the_lower_end_is_zero(tmp_path, monkeypatch):
    from softrank.replay import engine

    record = _record(tmp_path, 1)
    never = lambda claim: Check(Outcome.UNRESOLVED, "planted", reason="planted")  # noqa: E731
    monkeypatch.setattr(engine, "TRIVIAL_RULE", rules.Rule("trivial", "lower", (), never))
    monkeypatch.setitem(rules.LOWER_RULES, "frobenius", rules.Rule("frobenius", "lower", (), never))
    (t,) = replay_record(record).tolerances
    assert t.validated_lower == 0 and t.lower_kind == ""
    assert t.validated_upper == 12 and t.verdict(0) == "unresolved" and t.verdict(12) == "feasible"
