"""The predictor study's evaluation on synthetic tables whose answer is known: a target that is a
noiseless function of a native column (the native block helps), a block of pure noise (never
"helps"), intervals, determinism, NaN rows dropped and counted, fewer than five sources, the
decision rule and the splits of the three views."""

import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

from softrank.studies.predictors import evaluate as ev  # noqa: E402

# the study's column names are features.BLOCKS; a small stand-in keeps these tests about statistics
BLOCKS = {"structural": ["s_layer", "s_head", "s_m", "s_N"], "calibrated": ["c_a", "c_b"],
          "native": ["n_a", "n_b"], "intrinsic": ["i_a"]}
NATIVE = [c for c in ev.COMPARISONS if c[0] == "native over calibrated"]


def table(families=("F1", "F2"), sources=6, heldout=4, layers=2, heads=3, target="native", seed=0):
    """target "native": U_p a noiseless function of n_a; "calibrated": of c_a (n_a and n_b noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for fam in families:
        for panel, pre, count in (("main", "s", sources), ("heldout", "h", heldout)):
            for s in range(count):
                for layer in range(layers):
                    for head in range(heads):
                        r = {"record_id": f"{fam}{panel}{s}-{layer}-{head}", "panel": panel, "family": fam,
                             "source_id": f"{pre}{s}", "layer": layer, "head": head, "s_layer": float(layer),
                             "s_head": float(head), "s_m": 16.0, "s_N": 16.0, "c_a": rng.normal(),
                             "c_b": rng.normal(), "n_a": rng.uniform(), "n_b": rng.normal(),
                             "i_a": rng.normal() if head != 1 else math.nan}
                        u = 0.2 + 0.5 * r["n_a"] if target == "native" else 0.4 + 0.1 * r["c_a"]
                        r.update(U_p=u, L_p=u - 0.05, mid_p=u - 0.025)
                        rows.append(r)
    return rows


def _one(out, **kw):
    hits = [r for r in out["results"] if all(r[k] == v for k, v in kw.items())]
    assert len(hits) == 1, kw
    return hits[0]


def test_decision_rule():
    assert ev.verdict(0.11, 0.5) == "helps"
    assert ev.verdict(-0.5, -0.11) == "hurts"
    assert ev.verdict(-0.10, 0.10) == "adds nothing detectable"
    assert ev.verdict(-0.02, 0.05) == "adds nothing detectable"
    assert ev.verdict(0.05, 0.2) == "inconclusive at this size"
    assert ev.verdict(-0.3, 0.3) == "inconclusive at this size"
    assert ev.verdict(0.10, 0.3) == "inconclusive at this size"  # "above +0.10" is strict
    assert ev.verdict(math.nan, math.nan) == "inconclusive at this size"


def test_comparison_columns():
    comps = {c[0]: c for c in ev.COMPARISONS}
    assert ev.comparison_columns(BLOCKS, comps["native over structural"]) == (
        BLOCKS["structural"], BLOCKS["structural"] + BLOCKS["native"])
    assert ev.comparison_columns(BLOCKS, comps["native + intrinsic over calibrated"])[1] == ["c_a", "c_b", "n_a", "n_b", "i_a"]


def test_view_splits():
    panel = np.array(["main"] * 4 + ["heldout"] * 2)
    source = np.array(["a", "a", "b", "b", "h", "h"])
    head = np.array(["0:0", "0:1", "0:0", "0:1", "0:0", "0:1"])
    (train, test), = ev.view_splits("held-out", panel, source, head)
    assert list(train) == [0, 1, 2, 3] and list(test) == [4, 5]
    loso = ev.view_splits("leave-one-source-out", panel, source, head)
    assert [(list(a), list(b)) for a, b in loso] == [([2, 3], [0, 1]), ([0, 1], [2, 3])]
    loho = ev.view_splits("leave-one-head-out", panel, source, head)
    assert [(list(a), list(b)) for a, b in loho] == [([1, 3], [0, 2]), ([0, 2], [1, 3])]
    with pytest.raises(ValueError):
        ev.view_splits("leave-one-layer-out", panel, source, head)


def test_a_noiseless_native_target_makes_the_native_block_help():
    comps = [c for c in ev.COMPARISONS if c[0] in ("native over structural", "native + intrinsic over calibrated")]
    out = ev.evaluate(table(sources=5, heldout=3), BLOCKS, targets=("U_p",), models=("ridge",),
                      comparisons=comps, n_boot=200)
    for view in ev.VIEWS:
        for fam in ("F1", "F2", ev.AGGREGATE):
            for comp, _, _ in comps:
                r = _one(out, view=view, family=fam, comparison=comp, model="ridge", target="U_p")
                assert r["verdict"] == "helps" and r["gain"] > 0.5, (view, fam, comp, r)
                assert r["lo"] <= r["gain"] <= r["hi"]
                assert r["gain"] == pytest.approx((r["mae_base"] - r["mae_aug"]) / r["mae_base"])


def test_a_block_of_noise_never_helps():
    rows = table(target="calibrated", sources=8, heldout=6, heads=4)
    out = ev.evaluate(rows, BLOCKS, comparisons=NATIVE, n_boot=200, models=("ridge",), targets=("U_p",),
                      views=("held-out", "leave-one-source-out"))
    assert len(out["results"]) == 6
    for r in out["results"]:
        assert r["verdict"] in ("adds nothing detectable", "hurts"), r
        assert r["lo"] <= r["gain"] <= r["hi"]
    # trees on so few rows may be wide ("inconclusive"), but a noise block never "helps"
    out = ev.evaluate(rows, BLOCKS, comparisons=NATIVE, n_boot=200, models=("trees",), targets=("U_p",),
                      views=("held-out",))
    assert out["results"] and all(r["verdict"] != "helps" and r["lo"] < ev.BAND for r in out["results"])


def test_aggregate_is_the_mean_of_the_family_maes():
    out = ev.evaluate(table(), BLOCKS, targets=("U_p",), models=("ridge",), views=("held-out",), n_boot=50,
                      comparisons=NATIVE)
    fams = [_one(out, family=f) for f in ("F1", "F2")]
    agg = _one(out, family=ev.AGGREGATE)
    assert agg["mae_base"] == pytest.approx((fams[0]["mae_base"] + fams[1]["mae_base"]) / 2)
    assert agg["gain"] == pytest.approx((agg["mae_base"] - agg["mae_aug"]) / agg["mae_base"])
    assert fams[0]["evaluated"] == 4 * 6 and fams[0]["rows"] == 10 * 6  # held-out rows evaluated; both panels fitted/used
    assert agg["sources"] == 4 and agg["boot_valid"] == 50


def test_deterministic_with_seed_zero():
    kw = dict(targets=("U_p",), models=("ridge",), views=("leave-one-source-out",), comparisons=NATIVE, n_boot=100)
    rows = table(families=("F1",), sources=5, heads=2)
    a, b = ev.evaluate(rows, BLOCKS, **kw), ev.evaluate(table(families=("F1",), sources=5, heads=2), BLOCKS, **kw)
    strip = [{k: v for k, v in r.items()} for r in a["results"]]
    assert strip == [{k: v for k, v in r.items()} for r in b["results"]]


def test_nan_rows_are_dropped_and_counted():
    rows = table(families=("F1",))
    f1_main = [r for r in rows if r["family"] == "F1" and r["panel"] == "main"]
    f1_main[0]["U_p"] = math.nan
    f1_main[1]["n_a"] = math.nan
    f1_main[2]["c_b"] = None
    out = ev.evaluate(rows, BLOCKS, targets=("U_p",), models=("ridge",), views=("leave-one-source-out",),
                      comparisons=NATIVE, n_boot=20)
    r = _one(out, family="F1")
    assert (r["rows_in_view"], r["dropped_target"], r["dropped_features"], r["rows"]) == (36, 1, 2, 33)
    assert r["evaluated"] == 33
    # the intrinsic comparison runs on the rows with the intrinsic column only, its baseline too
    comp = [c for c in ev.COMPARISONS if c[0] == "intrinsic over calibrated"]
    out = ev.evaluate(table(families=("F1",)), BLOCKS, targets=("U_p",), models=("ridge",),
                      views=("leave-one-source-out",), comparisons=comp, n_boot=20)
    r = _one(out, family="F1")
    assert (r["rows_in_view"], r["dropped_features"], r["rows"], r["evaluated"]) == (36, 12, 24, 24)


def test_the_midpoint_target_drops_unresolved_rows():
    rows = table()
    for r in rows[::3]:
        r["mid_p"] = math.nan
    out = ev.evaluate(rows, BLOCKS, targets=("mid_p",), models=("ridge",), views=("held-out",), comparisons=NATIVE,
                      n_boot=20)
    r = _one(out, family="F1")
    assert r["dropped_target"] == 20 and r["rows"] == 40 and r["target"] == "mid_p"


def test_fewer_than_five_sources_and_trees():
    rows = table(families=("F1",), sources=3, heldout=2)
    out = ev.evaluate(rows, BLOCKS, targets=("U_p",), models=("ridge",), views=("leave-one-source-out",),
                      comparisons=NATIVE, n_boot=50)
    loso = _one(out, family="F1", view="leave-one-source-out")
    assert loso["evaluated"] == 18 and math.isfinite(loso["gain"]) and loso["sources"] == 3
    assert out["costs"]["leave-one-source-out"]["folds"] == 3 * 2  # 3 sources x (base, aug)
    # inner folds: 2 sources in each leave-one-source-out training part, 3 in the held-out view's
    assert out["costs"]["leave-one-source-out"]["fits"] == 3 * 2 * (5 * 2 + 1)
    out = ev.evaluate(rows, BLOCKS, targets=("U_p",), models=("trees",), views=("held-out",), comparisons=NATIVE,
                      n_boot=50)
    held = _one(out, family="F1", model="trees")
    assert held["evaluated"] == 12 and math.isfinite(held["gain"]) and out["costs"]["held-out"]["fits"] == 2 * (4 * 3 + 1)


def test_one_source_has_no_interval():
    out = ev.evaluate(table(families=("F1",), sources=3, heldout=1), BLOCKS, targets=("U_p",), models=("ridge",),
                      views=("held-out",), comparisons=NATIVE, n_boot=50)
    r = _one(out, family="F1")
    assert math.isfinite(r["gain"]) and math.isnan(r["lo"]) and r["verdict"] == "inconclusive at this size"


def test_bootstrap_resamples_sources_whole():
    # two sources: errors 1 (base) / 0 (aug) in one, 1 / 1 in the other; any resample's gain is
    # 0, 1/2 or 1, and the percentile ends are attained values
    eb, ea = np.ones(4), np.array([0.0, 0.0, 1.0, 1.0])
    out = ev.boot_gain([(eb, ea, ["a", "a", "b", "b"])], n_boot=400, seed=0)
    assert out["lo"] == 0.0 and out["hi"] == 1.0 and out["boot_valid"] == 400 and out["sources"] == 2
    assert ev.boot_gain([(eb, ea, ["a"] * 4)], n_boot=400)["boot_valid"] == 0


def test_jobs_give_the_same_numbers():
    kw = dict(targets=("U_p",), models=("ridge",), views=("held-out",), comparisons=NATIVE, n_boot=50)
    rows = table(families=("F1",))
    one, two = ev.evaluate(rows, BLOCKS, jobs=1, **kw), ev.evaluate(rows, BLOCKS, jobs=2, **kw)
    assert one["results"] == two["results"] and two["jobs"] == 2


def test_journal_hooks_and_deadline():
    kw = dict(targets=("U_p",), models=("ridge",), views=("held-out",), comparisons=NATIVE, n_boot=20)
    rows = table(families=("F1",))
    seen = {}
    first = ev.evaluate(rows, BLOCKS, on_result=seen.__setitem__, **kw)
    assert len(seen) == first["tasks"] == 2 and first["not_run"] == 0
    assert len({ev.task_id(k) for k in seen}) == 2
    calls = []
    again = ev.evaluate(rows, BLOCKS, done=seen, progress=lambda *a: calls.append(a), **kw)
    assert calls == [] and again["results"] == first["results"]
    late = ev.evaluate(rows, BLOCKS, deadline=0.0, **kw)
    assert late["results"] == [] and late["not_run"] == 2
