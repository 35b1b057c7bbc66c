"""The construction study's table (``studies/constructions/ratios.py``): the median rank of each
upper construction relative to the best one, per family, from rows of a ``bracket.csv``."""

from __future__ import annotations

import pytest


def test_construction_ratios_median_to_best():
    from softrank.studies.constructions.ratios import construction_ratios

    base = {"family": "bert", "eps": "0.25", "m": "64", "N": "64"}
    rows = [dict(base, rank_tsvd="10", rank_rwsvd="8", rank_altl1="5", rank_cpqr="12", rank_rpqr="", rank_reprows="20"),
            dict(base, rank_tsvd="6", rank_rwsvd="6", rank_altl1="4", rank_cpqr="8", rank_rpqr="8", rank_reprows="")]
    res = construction_ratios(rows, 0.25)
    assert res["bert"]["altl1"] == 1.0 and res["bert"]["best_share_altl1"] == 1.0
    assert res["bert"]["tsvd"] == pytest.approx((2.0 + 1.5) / 2)
    assert res["bert"]["rpqr"] == pytest.approx((64 / 5 + 2.0) / 2)  # not found: counts as p
    assert res["all"]["operators"] == 2
