"""The held-out construction benchmark's pieces (``studies/heldout/heldout.py``): sources disjoint
from the main panel's modules, the per-operator ratios joined on record and eps, and the
source-bootstrap interval."""

from __future__ import annotations

from softrank.fastpath.capture.panels import PANELS
from softrank.fastpath.capture.sources import stdlib_passages
from softrank.studies.heldout import heldout


def test_held_out_sources_share_no_module_with_the_main_panel():
    held = heldout.held_out_passages("full")
    main = {heldout._module(p.source_id) for opts in PANELS["full"].values()
            for p in stdlib_passages(opts["sources"], opts["seed"])}
    assert len(held) == 8 and len({p.source_id for p in held}) == 8
    assert not main & {heldout._module(p.source_id) for p in held}


def _bracket(rid, ranks, failed=None):
    return {"record_id": rid, "eps_value": "0.25", "m": "128", "N": "128",
            **{f"rank_{c}": str(k) if k else "" for c, k in zip(heldout.ALL_CONSTRUCTIONS, ranks)},
            **{f"failed_{c}": text for c, text in (failed or {}).items()}}


def _replay(rid, source, lower, status="ok", upper=None):
    return {"record_id": rid, "eps_value": "0.25", "status": status, "family": "F", "source_id": source,
            "validated_lower": str(lower), "validated_upper": "" if upper is None else str(upper)}


def test_operator_ratios_take_the_best_construction_over_the_validated_lower_end():
    bracket = [_bracket("a", [8, 6, None, 4, 5, 9]), _bracket("b", [3, 3, 3, 3, 3, 3]), _bracket("c", [1] * 6)]
    replay = [_replay("a", "s1", 2), _replay("b", "s2", 0), _replay("c", "s3", 1, status="malformed")]
    ops = heldout.operator_ratios(bracket, replay, 0.25)
    assert [o["record_id"] for o in ops] == ["a", "b"]
    assert ops[0]["best"] == 2.0 and ops[0]["altl1"] == 64.0 and ops[0]["tsvd"] == 4.0  # no witness: min(m, N)
    assert ops[1]["best"] == 3.0 and ops[1]["lower"] == 1


def test_ranks_relative_to_alternating_l1_and_failed_attempts_by_the_validated_bracket():
    failed = {"tsvd": "1 2 3 4 5 6 7", "rpqr": "2 5", "altl1": ""}
    bracket = [_bracket("a", [8, 6, 4, 4, 5, 9], failed), _bracket("b", [8, 6, None, 4, 5, 9])]
    replay = [_replay("a", "s1", 3, upper=4), _replay("b", "s1", 3)]
    a, b = heldout.operator_ratios(bracket, replay, 0.25)
    assert a["upper"] == 4 and a["rel"]["tsvd"] == 2.0 and a["rel"]["rpqr"] == 1.25 and a["rel"]["altl1"] == 1.0
    assert b["rel"] is None  # alternating l1 found no witness: no ratio to it
    # k < L = 3 impossible; 3 <= k < U = 4 open; k >= 4 missed (a validated rank-4 witness exists)
    assert a["failed"]["tsvd"] == {"impossible": 2, "open": 1, "missed": 4}
    assert a["failed"]["rpqr"] == {"impossible": 1, "open": 0, "missed": 1}
    assert a["failed"]["altl1"] == a["failed"]["reprows"] == {"impossible": 0, "open": 0, "missed": 0}
    assert heldout.classify_attempts([1, 5, 9], 2, None) == {"impossible": 1, "open": 2, "missed": 0}
    table = heldout.summarise([a, b], draws=50)["F"]
    assert table["relative_to_altl1"]["tsvd"]["median"] == 2.0 and table["operators_with_altl1"] == 1
    assert "relative_to_altl1" not in heldout.summarise([b], draws=10)["F"]
    assert table["failed_attempts"]["all"] == {"impossible": 3, "open": 1, "missed": 5}


def test_bootstrap_interval_resamples_sources():
    assert heldout.bootstrap_interval({"s1": [2.0, 2.0], "s2": [2.0]}, draws=200) == [2.0, 2.0]
    lo, hi = heldout.bootstrap_interval({"s1": [1.0], "s2": [3.0], "s3": [5.0]}, draws=400)
    assert 1.0 <= lo < 3.0 < hi <= 5.0
    none = dict.fromkeys(heldout.ATTEMPT_CLASSES, 0)
    table = heldout.summarise([{"family": "F", "source": s, "record_id": s, "lower": 1,
                                "rel": dict.fromkeys(heldout.ALL_CONSTRUCTIONS, v),
                                "failed": dict.fromkeys(heldout.ALL_CONSTRUCTIONS, none),
                                **{c: v for c in ("best", *heldout.ALL_CONSTRUCTIONS)}}
                               for s, v in (("s1", 1.0), ("s2", 3.0))], draws=100)
    assert table["F"]["operators"] == 2 and table["F"]["sources"] == 2 and table["F"]["best"]["median"] == 2.0
