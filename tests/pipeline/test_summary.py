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
