"""The predictor study's models: the protocol's grids, the source-grouped search inside the training
part, NaN rows dropped and counted, the one-source fallback and out-of-sample predictions."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from softrank.studies.predictors import models  # noqa: E402


def _data(n=96, sources=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = 0.5 * X[:, 0] + 0.01 * rng.normal(size=n)
    groups = np.array([f"s{i % sources}" for i in range(n)])
    return X, y, groups


def test_grids_are_the_protocols():
    assert [p["alpha"] for p in models.GRIDS["ridge"]] == [0.01, 0.1, 1.0, 10.0, 100.0]
    assert {(p["max_depth"], p["learning_rate"]) for p in models.GRIDS["trees"]} == {(2, 0.05), (2, 0.1), (3, 0.05), (3, 0.1)}
    est = models.estimator("trees", models.middle("trees"))
    assert (est.max_iter, est.random_state, est.early_stopping) == (300, 0, False)
    assert models.middle("ridge") == {"alpha": 1.0}
    ridge = models.estimator("ridge", {"alpha": 10.0})
    assert [name for name, _ in ridge.steps] == ["scale", "ridge"] and ridge.named_steps["ridge"].alpha == 10.0
    with pytest.raises(ValueError, match="unknown model"):
        models.estimator("lasso", {})


@pytest.mark.parametrize("model", models.MODELS)
def test_fit_learns_a_linear_target_and_searches_five_folds(model):
    X, y, groups = _data(n=400)
    est, info = models.fit(model, X, y, groups)
    assert info["folds"] == 5 and info["params"] in models.GRIDS[model] and info["dropped"] == 0
    Xt, yt, _ = _data(seed=1)
    assert np.mean(np.abs(est.predict(Xt) - yt)) < 0.25 * np.mean(np.abs(yt - yt.mean()))


def test_ridge_picks_the_least_regularised_alpha_on_a_noiseless_line():
    X, y, groups = _data()
    _, info = models.fit("ridge", X, 0.5 * X[:, 0], groups)
    assert info["params"] == {"alpha": 0.01}


def test_nan_rows_are_dropped_and_counted():
    X, y, groups = _data()
    X[3, 1] = np.nan
    y[7] = np.nan
    X[11, 0] = np.inf
    est, info = models.fit("ridge", X, y, groups)
    assert info["dropped"] == 3 and info["rows"] == len(y) - 3 and est is not None


def test_fewer_sources_than_folds_and_one_source():
    X, y, _ = _data()
    three = np.array([f"s{i % 3}" for i in range(len(y))])
    assert models.fit("ridge", X, y, three)[1]["folds"] == 3
    one = np.array(["s0"] * len(y))
    est, info = models.fit("trees", X, y, one)
    assert info["folds"] == 0 and info["params"] == models.middle("trees") and np.isnan(info["cv_mae"])
    assert est.max_depth == 3 and est.learning_rate == 0.05


def test_constant_feature_is_fine():
    X, y, groups = _data()
    X[:, 2] = 4.0
    est, info = models.fit("ridge", X, y, groups)
    assert np.all(np.isfinite(est.predict(X)))


def test_out_of_sample_predicts_each_test_row_from_its_own_training_part():
    X, y, groups = _data()
    splits = [(np.flatnonzero(groups != s), np.flatnonzero(groups == s)) for s in ("s0", "s1")]
    X[np.flatnonzero(groups == "s1")[0], 0] = np.nan  # a test row with a NaN feature: no prediction
    pred, infos = models.out_of_sample("ridge", X, y, groups, splits)
    tested = np.isin(groups, ["s0", "s1"])
    assert np.isnan(pred[~tested]).all() and len(infos) == 2
    assert np.isfinite(pred[tested]).sum() == tested.sum() - 1
    assert infos[1]["dropped"] == 0 and infos[0]["dropped"] == 1  # the NaN row sits in s0's training part
    # the same split twice gives the same numbers (random_state 0, no shuffling)
    again, _ = models.out_of_sample("ridge", X, y, groups, splits)
    assert np.allclose(pred, again, equal_nan=True)


def test_empty_training_part_gives_no_prediction():
    X, y, groups = _data()
    y[:] = np.nan
    pred, infos = models.out_of_sample("ridge", X, y, groups, [(np.arange(50), np.arange(50, 60))])
    assert np.isnan(pred).all() and infos[0]["params"] is None and infos[0]["dropped"] == 50


def test_search_once_picks_one_point_on_all_rows_and_refits_each_fold():
    X, y, groups = _data()
    heads = np.arange(len(y)) % 12
    splits = [(np.flatnonzero(heads != h), np.flatnonzero(heads == h)) for h in range(12)]
    pred, infos = models.out_of_sample("ridge", X, y, groups, splits, search_once=True)
    chosen = models.search("ridge", X, y, groups)
    assert all(i["params"] == chosen[0] and i["folds"] == 0 for i in infos)
    assert infos[0]["search_fits"] == len(models.GRIDS["ridge"]) * chosen[2] and "search_fits" not in infos[1]
    for (train, test), i in zip(splits, infos):  # each fold's prediction: the chosen point fitted on its part
        est = models.estimator("ridge", chosen[0]).fit(X[train], y[train])
        assert np.allclose(pred[test], est.predict(X[test]))
