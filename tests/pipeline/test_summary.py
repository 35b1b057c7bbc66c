"""``softrank run``'s summary (``pipeline/summary.py``): one row per family and attention kind (a
family with a single kind keeps its label), eps as the tolerance's text, and a note for a family
whose every validated bracket is [1, 1] (a randomly initialised model)."""

from __future__ import annotations

from softrank.pipeline.summary import near_uniform_notes, replay_by_tolerance, summarise
from softrank.replay.tolerance import Tolerance

EPS = Tolerance.parse("0.25", "eps")


def _rows(family, kinds, size, lower=2, upper=3):
    bracket, replay = [], []
    for i, (kind, (m, n)) in enumerate(zip(kinds, size)):
        rid = f"{family}-{kind}-{i}"
        bracket.append({"record_id": rid, "model": family, "family": family, "eps_text": "0.25", "m": m, "N": n,
                        "lower": lower, "upper": upper, "resolved": True, "baseline_lower": 1, "baseline_upper": upper,
                        "baseline_resolved": False})
        replay.append({"record_id": rid, "status": "ok", "eps": "0.25", "validated_lower": lower,
                       "validated_upper": upper, "attention": kind})
    return bracket, replay


def test_families_are_split_by_attention_kind_only_when_they_have_several():
    t5, t5_replay = _rows("t5", ["encoder-self", "decoder-self-block", "cross", "encoder-self"],
                          [(65, 65), (33, 33), (65, 69), (65, 65)])
    bert, bert_replay = _rows("all-MiniLM-L6-v2", ["encoder-self"] * 2, [(256, 256)] * 2)
    table = summarise(t5 + bert, replay_by_tolerance(t5_replay + bert_replay), [EPS])
    assert [(r["family"], r["operators"], r["shape"]) for r in table] == [
        ("all-MiniLM-L6-v2", 2, "256x256"), ("t5 (cross)", 1, "65x69"), ("t5 (decoder-self-block)", 1, "33x33"),
        ("t5 (encoder-self)", 2, "65x65")]
    assert {r["eps"] for r in table} == {"0.25"}  # the tolerance's text, as bracket and report write it
    assert near_uniform_notes(t5 + bert, replay_by_tolerance(t5_replay + bert_replay)) == []


def test_a_family_of_rank_one_brackets_is_noted():
    flat, flat_replay = _rows("tiny-llama", ["decoder-self-block"] * 3, [(32, 32)] * 3, lower=1, upper=1)
    bert, bert_replay = _rows("bert", ["encoder-self"], [(16, 16)])
    notes = near_uniform_notes(flat + bert, replay_by_tolerance(flat_replay + bert_replay))
    assert len(notes) == 1 and notes[0].startswith("tiny-llama: every operator's validated bracket is [1, 1]")
    assert "randomly initialised" in notes[0]


def test_family_outcomes_count_each_end_and_each_records_time_once():
    from softrank.pipeline.summary import family_outcomes

    t5, _ = _rows("t5", ["encoder-self", "cross"], [(65, 65), (65, 69)])
    bracket, table = [], []
    for r, kind in zip(t5, ["encoder-self", "cross"]):
        for eps, upper_outcome, lows in (("0.25", "proved", ["proved", "proved"]),
                                         ("0.35", "unresolved" if kind == "cross" else "refuted", ["unresolved"])):
            bracket.append({**r, "eps_text": eps, "seconds": 3.0})  # the record's time on each of its rows
            table.append({"record_id": r["record_id"], "status": "ok", "model": "t5", "family": "t5",
                          "attention": kind, "eps": eps, "upper_outcome": upper_outcome,
                          "lower_outcomes": [{"outcome": o} for o in lows], "seconds": 0.5,
                          "float64_lower": 2, "validated_lower": 2 if eps == "0.25" else 1,
                          "float64_upper": 3, "validated_upper": 3})
    table.append({"record_id": "broken", "status": "malformed"})
    out = {r["family"]: r for r in family_outcomes(bracket, table)}
    assert sorted(out) == ["t5 (cross)", "t5 (encoder-self)"]
    enc, cross = out["t5 (encoder-self)"], out["t5 (cross)"]
    assert (enc["records"], enc["tolerances"], enc["upper_proved"], enc["upper_refuted"], enc["upper_unresolved"]) == (
        1, 2, 1, 1, 0)
    assert (cross["upper_refuted"], cross["upper_unresolved"]) == (0, 1)
    assert (enc["lower_proved"], enc["lower_not_accepted"], enc["lower_changed"], enc["upper_changed"]) == (2, 1, 1, 0)
    assert (enc["bracket_seconds"], enc["replay_seconds"]) == (3.0, 0.5)
