"""The predictor study's two models, fitted as ``docs/predictors-protocol-2.md`` fixes them
("Models and evaluation"); untrusted orchestration over scikit-learn.

- ``ridge``: ``StandardScaler`` (fitted on the training part only, inside a ``Pipeline``) then
  ``Ridge``, alpha in {0.01, 0.1, 1, 10, 100}.  A feature constant on the training part is kept:
  the scaler gives it scale 1, so it enters as a constant the intercept absorbs.
- ``trees``: ``HistGradientBoostingRegressor``, max_depth in {2, 3}, learning_rate in {0.05, 0.1},
  max_iter 300, random_state 0 (early stopping off, so every fit runs its 300 iterations: the
  library's "auto" would switch it on above 10,000 rows).

The grid is searched by cross-validation grouped by source (``GroupKFold`` on the training part's
source ids) inside the training part only, scored by mean absolute error (the mean over folds of
each fold's MAE, as ``GridSearchCV`` averages; ties go to the first grid point).  Folds: 5, or as
many as the training part has sources when it has fewer; with one source there is nothing to
cross-validate and the grid's middle point (index ``len(grid) // 2``: ridge alpha 1, trees
max_depth 3 with learning_rate 0.05) is fitted, a choice recorded in the result.  The search loop
is written out (clone, fit, score) rather than run through ``GridSearchCV``, whose per-search
overhead is most of a ridge search's cost and is paid many times over.  In the leave-one-head-out
view the protocol's second version searches once, on the union of the folds' rows, and refits
that point on every fold (``out_of_sample(..., search_once=True)``): a search inside each of 270
folds costs tens of CPU hours for the trees.

Rows whose target or any feature is NaN (or infinite) are dropped from the fit and counted.
Every fit and prediction runs with one thread (``threadpoolctl``: the trees' OpenMP and the BLAS),
since the study runs its views on several worker processes.
"""

from __future__ import annotations

import numpy as np

RIDGE_ALPHAS = (0.01, 0.1, 1.0, 10.0, 100.0)
TREE_DEPTHS = (2, 3)
TREE_RATES = (0.05, 0.1)
TREE_ITER = 300
SEED = 0
CV_FOLDS = 5
MODELS = ("ridge", "trees")
GRIDS = {
    "ridge": tuple({"alpha": a} for a in RIDGE_ALPHAS),
    "trees": tuple({"max_depth": d, "learning_rate": r} for d in TREE_DEPTHS for r in TREE_RATES),
}


def middle(model: str) -> dict:
    """The grid point fitted when the training part has one source (no search possible)."""
    grid = GRIDS[model]
    return grid[len(grid) // 2]


def estimator(model: str, params: dict):
    """A fresh, unfitted estimator of ``model`` at one grid point."""
    if model == "ridge":
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler

        return Pipeline([("scale", StandardScaler()), ("ridge", Ridge(alpha=params["alpha"]))])
    if model == "trees":
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(max_depth=params["max_depth"], learning_rate=params["learning_rate"],
                                             max_iter=TREE_ITER, random_state=SEED, early_stopping=False)
    raise ValueError(f"unknown model {model!r} (one of {', '.join(MODELS)})")


def usable(X, y) -> np.ndarray:
    """Rows whose target and every feature are finite."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    return np.isfinite(y) & np.isfinite(X).all(axis=1)


def search(model: str, X: np.ndarray, y: np.ndarray, groups) -> tuple[dict, float, int]:
    """(chosen grid point, its cross-validated MAE (NaN without a search), folds used)."""
    from sklearn.model_selection import GroupKFold

    groups = np.asarray(groups)
    k = min(CV_FOLDS, len(np.unique(groups)))
    if k < 2:
        return middle(model), float("nan"), 0
    folds = list(GroupKFold(n_splits=k).split(X, y, groups))
    best, best_mae = None, np.inf
    for params in GRIDS[model]:
        maes = []
        for tr, te in folds:
            est = estimator(model, params).fit(X[tr], y[tr])
            maes.append(float(np.mean(np.abs(est.predict(X[te]) - y[te]))))
        mae = float(np.mean(maes))
        if mae < best_mae:
            best, best_mae = params, mae
    return best, best_mae, k


def _fit(model: str, X, y, groups, chosen: tuple | None = None):
    """``chosen``: (params, cv_mae, folds) of a search made beforehand; the point is refitted only."""
    X, y, groups = np.asarray(X, float), np.asarray(y, float), np.asarray(groups)
    keep = usable(X, y)
    X, y, groups = X[keep], y[keep], groups[keep]
    info = {"rows": int(keep.sum()), "dropped": int((~keep).sum())}
    if not len(y):
        return None, {**info, "params": None, "cv_mae": float("nan"), "folds": 0}
    params, cv_mae, k = chosen if chosen is not None else search(model, X, y, groups)
    info = {**info, "params": params, "cv_mae": cv_mae, "folds": 0 if chosen is not None else k}
    return estimator(model, params).fit(X, y), info


def fit(model: str, X, y, groups):
    """(fitted estimator or None when no row is usable, info): the grid searched on (X, y) grouped
    by ``groups``, then the chosen point refitted on every usable row; info holds ``rows``,
    ``dropped`` (rows with a NaN target or feature), ``params``, ``cv_mae`` and ``folds``."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _fit(model, X, y, groups)


def out_of_sample(model: str, X, y, groups, splits, search_once: bool = False) -> tuple[np.ndarray, list[dict]]:
    """Predictions for every test row of ``splits`` (a list of (train indices, test indices)), each
    from a model searched and fitted on its split's training part alone; NaN for a row no split
    tests, for a test row with a NaN feature and for a split whose training part has no usable
    row.  Also one info dict per split (``fit``'s).  ``search_once`` (the protocol's
    leave-one-head-out view): the grid point is searched once on the union of the splits' rows and
    refitted on each training part (the search's own fits are in the first split's ``search_fits``)."""
    from threadpoolctl import threadpool_limits

    X, y, groups = np.asarray(X, float), np.asarray(y, float), np.asarray(groups)
    pred = np.full(len(y), np.nan)
    infos = []
    with threadpool_limits(limits=1):
        chosen = None
        if search_once and splits:
            rows = np.unique(np.concatenate([np.concatenate([np.asarray(a, int), np.asarray(b, int)])
                                             for a, b in splits]))
            rows = rows[usable(X[rows], y[rows])]
            if len(rows):
                chosen = search(model, X[rows], y[rows], groups[rows])
        for i, (train, test) in enumerate(splits):
            est, info = _fit(model, X[train], y[train], groups[train], chosen)
            if chosen is not None and i == 0:
                info["search_fits"] = len(GRIDS[model]) * chosen[2]
            infos.append(info)
            test = np.asarray(test, int)
            test = test[np.isfinite(X[test]).all(axis=1)]
            if est is not None and len(test):
                pred[test] = est.predict(X[test])
    return pred, infos
