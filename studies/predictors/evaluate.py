"""The predictor study's comparisons, views, gains, intervals and verdicts, as
``docs/predictors-protocol-2.md`` fixes them (untrusted orchestration).

Input: the operators table (one dict per operator: ``panel``, ``family``, ``source_id``, ``layer``,
``head``, the targets ``U_p``, ``L_p``, ``mid_p`` and the feature columns) and ``blocks`` (block
name -> its column names: ``features.BLOCKS``).

- Comparisons: native over structural, native over calibrated, intrinsic over calibrated, native +
  intrinsic over calibrated ("a block over X": X's columns, then X's and the block's together).
- Rows: per comparison and target, the rows whose target and every column of the augmented set
  are finite; the baseline and the augmented model are fitted and scored on exactly these rows,
  so a comparison with the intrinsic block runs on the rows where the intrinsic columns exist (the
  protocol's fixed subset) for its baseline too.  Rows left out are counted by reason.
- Views: ``held-out`` (fit on the main panel, evaluate on the held-out panel),
  ``leave-one-source-out`` (main panel, one fold per source) and ``leave-one-head-out`` (main
  panel, one fold per (layer, head)).  Every fit is within one family; every prediction is out of
  sample, made once; in the held-out and leave-one-source-out views each training part searches
  its own grid, in the leave-one-head-out view the grid point is searched once on the family's
  main panel and refitted on every fold (the protocol's second version; ``models.out_of_sample``).
- Error: MAE in cap units per family; the aggregate is the mean of the family MAEs (equal weight)
  and its gain is computed from those means.  Relative gain = (MAE(base) - MAE(base + block)) /
  MAE(base); the absolute gain MAE(base) - MAE(base + block) is reported beside it.
- Intervals: 95% percentile intervals from 2,000 resamples (seed 0) of the evaluation rows'
  sources with replacement: a drawn source brings all its evaluation rows (both models'
  predictions are fixed; only the rows are resampled, the models are not refitted).  The
  aggregate draws from the union of the families' sources (a source shared by two families enters
  both together); a resample in which a family has no row, or the baseline's MAE is 0, is skipped
  and the number of valid resamples is reported.  With fewer than two sources there is no
  interval (NaN) and the verdict is "inconclusive at this size".
- Decision rule: interval inside [-0.10, +0.10]: "adds nothing detectable"; above +0.10: "helps";
  below -0.10: "hurts"; otherwise "inconclusive at this size".

``evaluate(..., jobs=N)`` runs the fits (one task per view, family, target, model and column set;
views in protocol order, the largest tasks of a view first) on N worker processes through ``fastpath.runner.run_tasks``; the results do not
depend on N.  The cost of each view (CPU seconds summed over its tasks, and its model fits) is in
the output.
"""

from __future__ import annotations

import math
import time

import numpy as np

from softrank.studies.predictors.models import GRIDS, MODELS, out_of_sample

COMPARISONS = (
    ("native over structural", "structural", ("native",)),
    ("native over calibrated", "calibrated", ("native",)),
    ("intrinsic over calibrated", "calibrated", ("intrinsic",)),
    ("native + intrinsic over calibrated", "calibrated", ("native", "intrinsic")),
)
VIEWS = ("held-out", "leave-one-source-out", "leave-one-head-out")
TARGETS = ("U_p", "L_p", "mid_p")
AGGREGATE = "aggregate"
BAND = 0.10
N_BOOT = 2000
SEED = 0
VERDICTS = ("helps", "hurts", "adds nothing detectable", "inconclusive at this size")


def verdict(lo: float, hi: float) -> str:
    """The protocol's decision rule on a 95% interval [lo, hi] of a relative gain."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive at this size"
    if lo > BAND:
        return "helps"
    if hi < -BAND:
        return "hurts"
    if -BAND <= lo and hi <= BAND:
        return "adds nothing detectable"
    return "inconclusive at this size"


def comparison_columns(blocks: dict, comparison: tuple) -> tuple[list[str], list[str]]:
    """(baseline columns, baseline + block columns) of one comparison."""
    _, base, added = comparison
    cols = list(blocks[base])
    return cols, cols + [c for b in added for c in blocks[b] if c not in cols]


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def view_splits(view: str, panel, source, head) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train indices, test indices) of one view over rows with these panels, sources, heads."""
    panel, source, head = np.asarray(panel), np.asarray(source), np.asarray(head)
    main = np.flatnonzero(panel == "main")
    if view == "held-out":
        test = np.flatnonzero(panel == "heldout")
        return [(main, test)] if len(main) and len(test) else []
    key = {"leave-one-source-out": source, "leave-one-head-out": head}.get(view)
    if key is None:
        raise ValueError(f"unknown view {view!r} (one of {', '.join(VIEWS)})")
    out = []
    for k in sorted(set(key[main].tolist()), key=str):
        test = main[key[main] == k]
        train = main[key[main] != k]
        if len(train):
            out.append((train, test))
    return out


def run_task(task: dict) -> dict:
    """One task: out-of-sample predictions of one model on one column set (module-level: pickles)."""
    t0, c0 = time.perf_counter(), time.process_time()
    splits = view_splits(task["view"], task["panel"], task["source"], task["head"])
    once = task["view"] == "leave-one-head-out"  # the protocol's one search per family, target, columns
    pred, infos = out_of_sample(task["model"], task["X"], task["y"], task["source"], splits, search_once=once)
    fits = sum(1 + len(GRIDS[task["model"]]) * i["folds"] + i.get("search_fits", 0)
               for i in infos if i["params"] is not None)
    return {"pred": pred, "splits": len(splits), "fits": fits, "dropped_in_fit": sum(i["dropped"] for i in infos),
            "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}


def plan(rows: list[dict], blocks: dict, *, views=VIEWS, targets=TARGETS, models=MODELS,
         comparisons=COMPARISONS) -> tuple[list[dict], dict]:
    """(cells, tasks by key): one cell per (view, family, target, comparison) with its rows and
    counts; one task per distinct (view, family, target, model, columns, rows)."""
    cells, tasks = [], {}
    families = sorted({r["family"] for r in rows}, key=str)
    for view in views:
        panels = ("main", "heldout") if view == "held-out" else ("main",)
        for fam in families:
            part = [r for r in rows if r["family"] == fam and r["panel"] in panels]
            for target in targets:
                y_all = np.array([_num(r.get(target)) for r in part])
                for comp in comparisons:
                    base, aug = comparison_columns(blocks, comp)
                    X_all = np.array([[_num(r.get(c)) for c in aug] for r in part]).reshape(len(part), len(aug))
                    fin_y, fin_x = np.isfinite(y_all), np.isfinite(X_all).all(axis=1)
                    keep = np.flatnonzero(fin_y & fin_x)
                    sub = [part[i] for i in keep]
                    cell = {"view": view, "family": fam, "target": target, "comparison": comp[0],
                            "rows_in_view": len(part), "dropped_target": int((~fin_y).sum()),
                            "dropped_features": int((fin_y & ~fin_x).sum()), "rows": len(sub),
                            "y": y_all[keep], "panel": np.array([r["panel"] for r in sub], dtype=object),
                            "source": np.array([str(r["source_id"]) for r in sub], dtype=object),
                            "keys": {}}
                    head = np.array([f"{int(r['layer'])}:{int(r['head'])}" for r in sub], dtype=object)
                    for model in models:
                        for which, cols in (("base", base), ("aug", aug)):
                            key = (view, fam, target, model, tuple(cols), keep.tobytes())
                            cell["keys"][(model, which)] = key
                            if key not in tasks:
                                X = X_all[keep][:, [aug.index(c) for c in cols]]
                                tasks[key] = {"view": view, "model": model, "X": X, "y": cell["y"],
                                              "panel": cell["panel"], "source": cell["source"], "head": head}
                    cells.append(cell)
    return cells, tasks


def _task_cost(task: dict) -> float:
    n = len(task["y"])
    folds = {"held-out": 1, "leave-one-source-out": len(set(task["source"]))}.get(task["view"], len(set(task["head"])))
    return folds * n * task["X"].shape[1] * (20.0 if task["model"] == "trees" else 1.0)


def task_id(key: tuple) -> str:
    """A stable name of one task (its view, family, target, model, columns and rows), for a journal."""
    import hashlib

    view, fam, target, model, cols, rows = key
    text = repr((view, str(fam), target, model, cols)) + np.frombuffer(rows, dtype=np.int64).tobytes().hex()
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def run_tasks(tasks: dict, jobs: int = 1, progress=None, done: dict | None = None, on_result=None,
              deadline: float | None = None) -> dict:
    """key -> ``run_task``'s output, on ``jobs`` worker processes: views in protocol order (the
    primary held-out view first), the largest tasks of a view first.  ``done``: outputs already
    known (by key), not rerun; ``on_result(key, output)`` is called as each task finishes (to journal
    it); no task starts after ``deadline`` (``time.time()`` seconds)."""
    from softrank.fastpath.runner import run_tasks as runner

    out = dict(done or {})
    keys = sorted((k for k in tasks if k not in out),
                  key=lambda k: (VIEWS.index(k[0]) if k[0] in VIEWS else len(VIEWS), -_task_cost(tasks[k])))
    for i, res in runner(run_task, [tasks[k] for k in keys], jobs=jobs, deadline=deadline):
        out[keys[i]] = res
        if on_result is not None:
            on_result(keys[i], res)
        if progress is not None:
            progress(len(out), len(tasks))
    return out


def boot_gain(parts: list[tuple], n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """Percentile 95% intervals of the relative and absolute gain of the equal-weight mean of the
    parts' MAEs; ``parts``: one (|error| of base, |error| of base + block, source ids) per family."""
    names = sorted({s for _, _, src in parts for s in src}, key=str)
    out = {"lo": math.nan, "hi": math.nan, "abs_lo": math.nan, "abs_hi": math.nan,
           "sources": len(names), "boot_valid": 0}
    if len(names) < 2 or n_boot < 1:
        return out
    code = {s: i for i, s in enumerate(names)}
    S = len(names)
    picks = np.random.default_rng(seed).integers(0, S, (n_boot, S))
    W = np.zeros((n_boot, S))
    np.add.at(W, (np.repeat(np.arange(n_boot), S), picks.ravel()), 1.0)
    ok = np.ones(n_boot, bool)
    mb, ma = [], []
    for eb, ea, src in parts:
        c = np.array([code[s] for s in src], int)
        den = W @ np.bincount(c, minlength=S).astype(float)
        ok &= den > 0
        den = np.where(den > 0, den, 1.0)
        mb.append(W @ np.bincount(c, weights=eb, minlength=S) / den)
        ma.append(W @ np.bincount(c, weights=ea, minlength=S) / den)
    base, aug = np.mean(mb, axis=0), np.mean(ma, axis=0)
    ok &= base > 0
    if not ok.any():
        return out
    rel, diff = ((base - aug) / np.where(ok, base, 1.0))[ok], (base - aug)[ok]
    lo, hi = np.percentile(rel, [2.5, 97.5])
    alo, ahi = np.percentile(diff, [2.5, 97.5])
    return {**out, "lo": float(lo), "hi": float(hi), "abs_lo": float(alo), "abs_hi": float(ahi),
            "boot_valid": int(ok.sum())}


def _summary(parts: list[tuple], n_boot: int, seed: int) -> dict:
    if not parts:
        return {"mae_base": math.nan, "mae_aug": math.nan, "gain": math.nan, "gain_abs": math.nan,
                **boot_gain([], n_boot, seed), "verdict": verdict(math.nan, math.nan)}
    base = float(np.mean([np.mean(eb) for eb, _, _ in parts]))
    aug = float(np.mean([np.mean(ea) for _, ea, _ in parts]))
    boot = boot_gain(parts, n_boot, seed)
    gain = (base - aug) / base if base > 0 else math.nan
    return {"mae_base": base, "mae_aug": aug, "gain": gain, "gain_abs": base - aug, **boot,
            "verdict": verdict(boot["lo"], boot["hi"])}


def assemble(cells: list[dict], preds: dict, *, models=MODELS, n_boot: int = N_BOOT, seed: int = SEED) -> list[dict]:
    """One result per (view, model, target, comparison, family or the aggregate)."""
    results, groups = [], {}
    for cell in cells:
        for model in models:
            if cell["keys"][(model, "base")] not in preds or cell["keys"][(model, "aug")] not in preds:
                continue  # not run (a deadline): no result rather than a partial one
            pb, pa = preds[cell["keys"][(model, "base")]]["pred"], preds[cell["keys"][(model, "aug")]]["pred"]
            ev = np.isfinite(pb) & np.isfinite(pa)
            part = (np.abs(pb[ev] - cell["y"][ev]), np.abs(pa[ev] - cell["y"][ev]), cell["source"][ev].tolist())
            ids = {k: cell[k] for k in ("view", "target", "comparison")}
            counts = {k: cell[k] for k in ("rows_in_view", "dropped_target", "dropped_features", "rows")}
            parts = [part] if ev.any() else []
            results.append({**ids, "model": model, "family": cell["family"], **counts, "evaluated": int(ev.sum()),
                            **_summary(parts, n_boot, seed)})
            groups.setdefault((cell["view"], model, cell["target"], cell["comparison"]), []).extend(parts)
    for (view, model, target, comp), parts in groups.items():
        results.append({"view": view, "model": model, "target": target, "comparison": comp, "family": AGGREGATE,
                        "families": len(parts), "evaluated": int(sum(len(p[0]) for p in parts)),
                        **_summary(parts, n_boot, seed)})
    return results


def costs(tasks: dict, preds: dict) -> dict:
    """Per view: tasks, model fits, folds, CPU and wall seconds summed over its tasks."""
    out: dict = {}
    for key, res in preds.items():
        c = out.setdefault(key[0], {"tasks": 0, "fits": 0, "folds": 0, "cpu_s": 0.0, "wall_s": 0.0})
        c["tasks"] += 1
        c["fits"] += res["fits"]
        c["folds"] += res["splits"]
        c["cpu_s"] += res["cpu_s"]
        c["wall_s"] += res["wall_s"]
    return out


def evaluate(rows: list[dict], blocks: dict, *, views=VIEWS, targets=TARGETS, models=MODELS,
             comparisons=COMPARISONS, n_boot: int = N_BOOT, seed: int = SEED, jobs: int = 1, progress=None,
             done: dict | None = None, on_result=None, deadline: float | None = None) -> dict:
    """The whole evaluation: {"results": [...], "costs": {view: ...}, "wall_s", "jobs", "n_boot",
    "seed", "tasks", "not_run"} (``not_run``: tasks not started before ``deadline``; their cells
    have no result).  ``done``, ``on_result``, ``deadline``: as ``run_tasks``."""
    t0 = time.perf_counter()
    cells, tasks = plan(rows, blocks, views=views, targets=targets, models=models, comparisons=comparisons)
    preds = run_tasks(tasks, jobs=jobs, progress=progress, done=done, on_result=on_result, deadline=deadline)
    results = assemble(cells, preds, models=models, n_boot=n_boot, seed=seed)
    return {"results": results, "costs": costs(tasks, preds), "wall_s": time.perf_counter() - t0, "jobs": jobs,
            "n_boot": n_boot, "seed": seed, "tasks": len(tasks), "not_run": len(set(tasks) - set(preds))}
