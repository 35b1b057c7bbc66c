"""``softrank study predictors``: does a head's geometry predict its validated rank bracket?
(untrusted orchestration, under the frozen protocol ``docs/predictors-protocol-2.md``).

Steps, each resumable: the protocol's hash is checked; the operators of the two panels are read
from their replay tables (targets in cap units at eps 1/4); per operator the structural,
calibrated and native features (``features``) and, on the main panel, the gauge audit
(``gauges``), journaled one file per operator; the weight-space norms once per checkpoint; the
intrinsic block on the protocol's fixed subset through ``softrank study kappa``'s own per-operator
computation; then the fits, views and bootstrap intervals (``evaluate``) and the report
(``report``)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from softrank.fastpath.runner import Journal, RecordsJob, limit_threads
from softrank.fastpath.store.files import write_json
from softrank.errors import InputError
from softrank.studies.predictors import protocol as P
from softrank.studies.predictors.table import check_disjoint, first_per_family, operators_table


def _frame0(feats: dict) -> tuple[float, float] | None:
    """(Gamma, its validated upper bound) of the stored factors from the native block, for the gauge
    audit to reuse; None when the block has no finite pair."""
    g, g_up = feats.get("n_gamma", math.nan), feats.get("n_gamma_upper", math.nan)
    return (g, g_up) if math.isfinite(g) and math.isfinite(g_up) else None


def _guarded(compute, folder) -> dict:
    """``compute(folder)`` (a dict) with its CPU seconds, or the one-line error of its operator:
    a malformed record gets its one line, any other failure is reported; the others go on."""
    limit_threads()
    t0 = time.process_time()
    try:
        out = compute(folder)
    except InputError as err:
        return {"error": str(err), "bad_input": True}
    except Exception as err:
        return {"error": f"{type(err).__name__}: {err}"}
    out["cpu_seconds"] = time.process_time() - t0
    return out


def _features_and_audit(folder, with_gauges: bool) -> dict:
    from softrank.studies.predictors.features import record_features
    from softrank.studies.predictors.gauges import gauge_audit

    feats = record_features(folder)
    out = {"features": feats}
    if with_gauges:  # Gamma of the stored factors is reused from the native block
        out["gauges"] = gauge_audit(folder, kappa=True, frame0=_frame0(feats))
    return out


def _feature_worker(task):
    folder, with_gauges = task
    return _guarded(lambda f: _features_and_audit(f, with_gauges), folder)


def _gauge_worker(task):
    from softrank.studies.predictors.gauges import gauge_audit

    folder, frame0 = task
    return _guarded(lambda f: {"gauges": gauge_audit(f, kappa=True, frame0=frame0)}, folder)


def _refresh_gauges(rows: list[dict], done: dict, out: Path, jobs: int, resume: bool, scheduler) -> float:
    """Redo the gauge audit of every operator whose journaled audit is of an older version (the
    features stay as journaled), in ``OUT/journal-gauges``; the payloads in ``done`` are updated.
    Returns the CPU seconds spent."""
    from softrank.studies.predictors.gauges import AUDIT_VERSION

    def stale(payload):
        return isinstance(payload, dict) and "gauges" in payload and \
            payload["gauges"].get("audit_version") != AUDIT_VERSION

    folders = [r["folder"] for r in rows if stale(done.get(Path(r["folder"]).name))]
    if not folders:
        return 0.0
    journal = Journal(out / "journal-gauges", {"audit_version": AUDIT_VERSION, "protocol": P.PROTOCOL_SHA256},
                      resume=resume, keep=True)
    job = RecordsJob(folders, journal)
    job.resume_from(lambda name, payload: "error" not in payload)

    fresh = job.run(_gauge_worker, lambda f: (f, _frame0(done[Path(f).name].get("features", {}))), jobs=jobs,
                    scheduler=scheduler, journal_if=lambda p: "error" not in p)
    for name, payload in fresh.items():
        if "error" not in payload:
            done[name] = {**done[name], "gauges": payload["gauges"]}
    return sum(p.get("cpu_seconds", 0.0) for p in fresh.values())


def _features(rows: list[dict], out: Path, panel: str, jobs: int, resume: bool, scheduler,
              progress) -> tuple[dict, float]:
    """(record_id -> worker payload for the panel's rows, CPU seconds of the audits redone): journal
    ``OUT/journal-<panel>``; on the main panel an audit journaled by an older audit version is redone
    by ``_refresh_gauges``."""
    with_gauges = panel == "main"
    journal = Journal(out / f"journal-{panel}", {"panel": panel, "gauges": with_gauges,
                                                 "protocol": P.PROTOCOL_SHA256}, resume=resume, keep=True)
    job = RecordsJob([r["folder"] for r in rows], journal)
    if resume:
        job.resume_from(lambda name, payload: "error" not in payload)
    done = job.run(_feature_worker, lambda f: (f, with_gauges), jobs=jobs, scheduler=scheduler,
                   progress=progress, journal_if=lambda p: "error" not in p)
    refresh = 0.0
    if with_gauges:
        done = dict(done)
        refresh = _refresh_gauges(rows, done, out, jobs, resume, scheduler)
    return done, refresh


def _intrinsic(rows: list[dict], folder: Path, out: Path, per_family: int, jobs: int, resume: bool) -> dict:
    """record_id -> intrinsic columns on the protocol's fixed subset (``softrank study kappa``'s
    per-operator computation, its files kept in ``OUT/kappa-<panel>/``), and the CPU cost."""
    from softrank.studies.kappa.kappa_study import run_kappa_study
    from softrank.studies.predictors.features import intrinsic_features, intrinsic_subset

    ids = intrinsic_subset(rows, per_family=per_family, seed=P.SEED)
    if not ids:
        return {"rows": {}, "operators": 0, "cpu_seconds": 0.0, "failed": []}
    kdir = out / f"kappa-{rows[0]['panel']}"
    run_kappa_study(folder / "store", folder / "replay", kdir, jobs=jobs, resume=resume or kdir.is_dir(),
                    records=",".join(ids), n_boot=200)
    import json

    feats, failed, seconds = {}, [], 0.0
    for rid in ids:
        path = kdir / "operators" / f"{rid}.json"
        op = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if not isinstance(op, dict) or "error" in op:
            failed.append(rid)
            continue
        feats[rid] = intrinsic_features(op)
        kc = op.get("kappa_C") if isinstance(op.get("kappa_C"), dict) else {}
        up = kc.get("upper")  # the validated upper end of kappa(C) (primal bound in balls, rounded up)
        feats[rid]["kappa_C_validated_upper"] = float(up) if isinstance(up, (int, float)) else math.nan
        seconds += float(op.get("seconds", 0.0))
    return {"rows": feats, "operators": len(ids), "seconds": seconds, "failed": failed}


def _weights(rows: list[dict]) -> dict:
    """(model, layer, head) -> the weight-space norms, each checkpoint loaded once."""
    from softrank.studies.predictors.weights import weight_norms

    table = {}
    for model in sorted({r["model"] for r in rows}):
        for (layer, head), norms in weight_norms(model).items():
            table[(model, layer, head)] = norms
    return table


def build_table(main_dir, heldout_dir, out: Path, *, limit=None, jobs=1, resume=False, scheduler=None,
                progress=None) -> tuple[list[dict], dict]:
    """The operators table with every feature block, and what it cost."""
    main, main_counts = operators_table(main_dir, "main")
    held, held_counts = operators_table(heldout_dir, "heldout")
    check_disjoint(main, held, main_dir, heldout_dir)
    main, held = first_per_family(main, limit), first_per_family(held, limit)
    if not main or not held:
        raise InputError(str(main_dir if not main else heldout_dir), "replay", "no text-family operator at eps 0.25")
    per_family = P.SUBSET_PER_FAMILY if limit is None else min(P.SUBSET_PER_FAMILY, max(1, limit // 2))
    cost, failed = {}, {}
    weights = _weights(main + held)
    for rows, folder in ((main, Path(main_dir)), (held, Path(heldout_dir))):
        panel = rows[0]["panel"]
        t0 = time.perf_counter()
        done, refresh = _features(rows, out, panel, jobs, resume, scheduler,
                                  None if progress is None else progress(f"features ({panel})"))
        cost[f"features_{panel}"] = {"wall_seconds": time.perf_counter() - t0,
                                     "cpu_seconds": sum(p.get("cpu_seconds", 0.0) for p in done.values()),
                                     "operators": len(rows)}
        if refresh:
            cost[f"features_{panel}"]["gauge_refresh_cpu_seconds"] = refresh
        failed[f"features_{panel}"] = sorted(k for k, p in done.items() if "error" in p)
        t0 = time.perf_counter()
        intrinsic = _intrinsic(rows, folder, out, per_family, jobs, resume)
        cost[f"intrinsic_{panel}"] = {"wall_seconds": time.perf_counter() - t0,
                                      "cpu_seconds": intrinsic["seconds"], "operators": intrinsic["operators"]}
        failed[f"intrinsic_{panel}"] = intrinsic["failed"]
        for r in rows:
            payload = done.get(Path(r["folder"]).name, {})
            r.update(payload.get("features", {}))
            r.update(weights.get((r["model"], r["layer"], r["head"]), {}))
            r.update(intrinsic["rows"].get(r["record_id"], {}))
            if "gauges" in payload:
                r["gauges"] = payload["gauges"]
    return main + held, {"cost": cost, "failed": failed, "left_out": {"main": main_counts, "heldout": held_counts},
                         "subset_per_family": per_family}


def _task_name(key: tuple, task: dict) -> str:
    """A journal name for one fit task: its key and the exact numbers it is fitted on."""
    import hashlib

    from softrank.studies.predictors.evaluate import task_id

    h = hashlib.sha256(task_id(key).encode())
    for a in (task["X"], task["y"]):
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return "fit-" + h.hexdigest()[:32]


def _encode(res: dict) -> dict:
    return {**res, "pred": [None if not math.isfinite(v) else float(v) for v in np.asarray(res["pred"], float)]}


def _decode(payload: dict) -> dict:
    return {**payload, "pred": np.array([math.nan if v is None else v for v in payload["pred"]], dtype=np.float64)}


def _evaluate(rows: list[dict], out: Path, *, bootstrap: int, jobs: int, resume: bool, progress) -> dict:
    """``evaluate.evaluate`` with every finished fit journaled in ``OUT/journal-fits`` (a resumed
    run refits nothing it already has: a fit is named by its key and the numbers it saw)."""
    from softrank.studies.predictors import evaluate
    from softrank.studies.predictors.features import BLOCKS

    journal = Journal(out / "journal-fits", {"protocol": P.PROTOCOL_SHA256, "seed": P.SEED}, resume=resume, keep=True)
    _, tasks = evaluate.plan(rows, BLOCKS)
    names = {_task_name(k, t): k for k, t in tasks.items()}
    done = {names[n]: _decode(p) for n, p in journal.entries().items() if n in names}
    return evaluate.evaluate(rows, BLOCKS, n_boot=bootstrap, seed=P.SEED, jobs=jobs, progress=progress, done=done,
                             on_result=lambda k, r: journal.add(_task_name(k, tasks[k]), _encode(r)))


def gauge_section(summary: dict) -> dict:
    """The gauge audit as a report section: per gauge, how many operators' Gamma changes by more
    than 10%, the largest factor, and validated bounds on what the gauge changed."""
    from softrank.studies.predictors.gauges import GAUGES

    text = [f"Operators audited: {summary.get('operators', 0)} (skipped: {summary.get('skipped', 0)}). An exact "
            "gauge leaves the operator's logits, hence A and its bracket, unchanged algebraically; the last two "
            "columns are validated upper bounds on what the gauge changed in floating point."]
    if "kappa_le_gamma_validated" in summary:
        text.append(f"kappa(C) lower bound <= Gamma upper bound, validated in every frame: "
                    f"{summary['kappa_le_gamma_validated']} of {summary.get('operators', 0)} operators.")
    frames = summary.get("kappa_frames")
    if frames:
        text.append(
            f"kappa(C) in every frame, on the {frames['operators']} operators with a validated kappa(C) bracket: "
            f"each gauged frame's validated lower bound, less the proved bound on how far kappa moves with the "
            f"change of the logits (at most {frames['shift_upper_max']:.3g}), is at or below the stored frame's "
            f"validated upper end on {frames['agree']} (contradicted on {frames['disagree']}, not checked on "
            f"{frames['not_checked']}: a frame without a validated lower bound).")
    rows = [[name, str(summary[name]["changed"]), f"{summary[name]['largest_factor']:.6g}",
             f"{summary[name]['h_change_upper_max']:.3g}", f"{summary[name]['A_change_upper_max']:.3g}"]
            for name in GAUGES if name in summary]
    return {"title": "Gauge audit (main panel)", "text": text, "rows": rows,
            "columns": ("gauge", "Gamma changed by > 10%", "largest factor", "max |H' - H| (validated upper)",
                        "max ||A' - A||_inf (validated upper)")}


def run_study(main_dir, heldout_dir, out, *, limit=None, jobs=1, resume=False, scheduler=None,
              protocol=None, bootstrap=P.BOOTSTRAP, progress=None) -> dict:
    """The whole study; writes ``OUT/operators.csv``, ``OUT/study.json`` and the report files
    (``predictors.md``, its figures, ``report.html``)."""
    from softrank.fastpath.store.files import write_csv
    from softrank.studies.predictors import report
    from softrank.studies.predictors.gauges import summarise

    proto = P.check_protocol(protocol)
    out = Path(out)
    t0 = time.perf_counter()
    rows, meta = build_table(main_dir, heldout_dir, out, limit=limit, jobs=jobs, resume=resume,
                             scheduler=scheduler, progress=progress)
    write_csv(out / "operators.csv", [{k: v for k, v in r.items() if k not in ("gauges", "folder")} for r in rows])
    t1 = time.perf_counter()
    evaluation = _evaluate(rows, out, bootstrap=bootstrap, jobs=jobs, resume=resume,
                           progress=None if progress is None else progress("fits"))
    main_rows = [r for r in rows if r["panel"] == "main" and "gauges" in r]
    gauges = summarise([r["gauges"] for r in main_rows],
                       kappa_c_upper={r["record_id"]: r["kappa_C_validated_upper"] for r in main_rows
                                      if math.isfinite(r.get("kappa_C_validated_upper", math.nan))})
    meta["cost"]["evaluate"] = {"wall_seconds": time.perf_counter() - t1, "views": evaluation["costs"]}
    study = {"protocol": proto, "run_of_record": limit is None and bootstrap == P.BOOTSTRAP,
             "limit": limit, "bootstrap": bootstrap,
             "operators": {panel: sum(r["panel"] == panel for r in rows) for panel in ("main", "heldout")},
             "families": sorted({r["family"] for r in rows}),
             "results": evaluation["results"], "gauges": gauges, **meta,
             "wall_seconds": time.perf_counter() - t0}
    write_json(out / "study.json", study)
    banner = "" if study["run_of_record"] else "Not the run of record: " + ", ".join(
        ([f"--limit {limit}"] if limit is not None else []) + ([f"--bootstrap {bootstrap}"] if bootstrap != P.BOOTSTRAP else []))
    paths = report.write(evaluation, out, proto["sha256"], extra=[gauge_section(gauges)], banner=banner)
    study["report"] = {name: str(path) for name, path in paths.items()}
    study["text"] = paths["predictors.md"].read_text(encoding="utf-8")
    return study
