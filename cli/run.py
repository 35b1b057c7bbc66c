"""``softrank run``: the main job.

On its embedded default panel (DEFAULT_PANELS of ``softrank extract``: 64 all-MiniLM-L6-v2
operators at 256 x 256 and 54 SmolLM2-135M common-prefix blocks at N = 128, stdlib documentation
passages selected by seed 0) it

1. extracts the operators (``softrank.fastpath.capture.extract.extract_to_store``) into ``OUT/store``;
2. brackets them in float64 at eps 0.15, 0.25, 0.35 (``softrank bracket``, in place; each ``--eps``
   item is the exact rational it spells, stored as such in the records);
3. replays every witness and certificate with the validated checker into ``OUT/replay``;
4. prints a table per family and eps: operators, median L, median U, median U/L, resolved share,
   validated agreement, and the baseline (truncated-SVD upper, Frobenius-tail lower) on the same
   operators; writes it to ``OUT/summary.csv`` and ``OUT/summary.json``.

``--panel full`` (``softrank.fastpath.capture.panels``) takes every attention head of both embedded
checkpoints over 8 sources: 576 MiniLM operators and 2,160 SmolLM2 blocks, and of the two shipped
as ONNX (``shipped.py``): 576 DINOv2-small operators over 8 images and 3 x 384 FLAN-T5-small
operators (encoder, cross, decoder blocks; ``--dinov2 N``, ``--flan-t5 N``).  ``--plan`` prints what
would run and computes nothing; ``--limit N`` keeps the first N operators of each family;
``--resume`` continues a killed run in OUT from its journals (extraction per family, bracket and
replay per record); ``--jobs N`` and ``--scheduler ADDRESS`` run bracket and replay on Dask
(``softrank.fastpath.runner``).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from softrank.cli.args import check_count, max_jobs, parse_tolerances, path_arg, value_arg
from softrank.cli.extract import add_model_options, check_model_options, extract_model, progress_report
from softrank.cli.paths import output_dir
from softrank.exact.tolerance import Tolerance
from softrank.fastpath.store.files import write_csv, write_json
from softrank.validated.errors import InputError

MODELS = ("minilm", "smollm2")
SHIPPED = ("dinov2", "flan_t5")  # --dinov2, --flan-t5 (full panel: panels.SHIPPED_FLAGS)
BRACKET_DONE = ".bracket-done"  # the finished bracket's rows, for --resume


EPILOG = """--json prints one object on stdout (the progress and the human lines go to stderr): {"out",
"store", "replay" (folders), "report" (the page), "table": [one object per family and eps, the columns
of OUT/summary.csv: family, eps, operators, shape, median_L, median_U, median_U_over_L, resolved
(share, by the results table's criterion on the float64 ends), the baseline's, validated_agreement,
replayed], "replay_summary" (as softrank replay --json prints it), "seconds" (per step),
"exit_code"}.  With --plan, --json prints {"panel", "operators", "tolerances", "families": {family:
{"operators", "shape": [m, N]}}} and nothing is computed."""


def configure(parser) -> None:
    parser.add_argument("--out", default="softrank-out", type=path_arg, help="output folder (default softrank-out/)")
    parser.add_argument("--eps", default="0.15,0.25,0.35",
                        help="tolerances, each an exact rational: 0.15, 3/20 or 1.5e-1 (default 0.15,0.25,0.35)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for bracket and replay (default 2)")
    parser.add_argument("--minilm", type=int, default=None, metavar="N",
                        help="MiniLM operators (default: the embedded panel, 64); 0 skips the model")
    parser.add_argument("--smollm2", type=int, default=None, metavar="N",
                        help="SmolLM2 blocks (default: the embedded panel, 54); 0 skips the model")
    parser.add_argument("--dinov2", type=int, default=None, metavar="N",
                        help="with --panel full: DINOv2-small operators (default 576); 0 skips the model")
    parser.add_argument("--flan-t5", dest="flan_t5", type=int, default=None, metavar="N",
                        help="with --panel full: FLAN-T5-small operators over its three regimes (default 1,152); "
                             "0 skips the model")
    parser.add_argument("--device", default=None, type=value_arg, help="extraction device: cpu or cuda (default: cuda when available)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse OUT/store's extracted records if present (skip extraction)")
    parser.add_argument("--panel", choices=("default", "full"), default="default",
                        help="default: 64 MiniLM + 54 SmolLM2 operators; full: every head of both checkpoints "
                             "over 8 sources (576 + 2,160 operators), DINOv2-small (576) and FLAN-T5-small "
                             "(3 x 384)")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="the first N operators of each family only (a quick look)")
    parser.add_argument("--plan", action="store_true", help="print what would run (with --json: one object) "
                                                            "and compute nothing")
    parser.add_argument("--resume", action="store_true",
                        help="continue a killed run in OUT from its journals (extraction, bracket, replay)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="bracket and replay on the dask.distributed scheduler at ADDRESS (its workers "
                             "must see OUT at the same path)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG
    add_model_options(parser)  # --model DIR_OR_NAME [--texts FILE] [--layers ...] [--heads ...]


def _check_arguments(args) -> list[Tolerance]:
    """The tolerances (``softrank.cli.args.parse_tolerances``), after the other checks."""
    if args.jobs < 1:
        raise InputError("arguments", "jobs", f"must be a positive integer, got {args.jobs}")
    check_count(args.jobs, "jobs", maximum=max_jobs())
    for name in (*MODELS, *SHIPPED):
        n = getattr(args, name)
        if n is not None and n < 0:
            raise InputError("arguments", name, f"must be a non-negative integer, got {n}")
        check_count(n, name, minimum=0, maximum=10_000_000)
    check_count(args.limit, "limit", maximum=10_000_000)
    if args.panel != "full" and any(getattr(args, flag) is not None for flag in SHIPPED):
        raise InputError("arguments", "dinov2", "--dinov2 and --flan-t5 count operators of --panel full")
    check_model_options(args)
    if args.model is not None and (args.panel != "default" or args.limit is not None or args.plan):
        raise InputError("arguments", "panel", "--panel, --limit and --plan are about the embedded checkpoints; "
                                               "not with --model")
    if all(getattr(args, name) == 0 for name in MODELS) and args.model is None and args.panel == "default":
        raise InputError("arguments", "minilm", "--minilm 0 and --smollm2 0 leave nothing to run")
    return parse_tolerances(args.eps)


def run(args) -> int:
    import sys

    from rich.console import Console

    tolerances = _check_arguments(args)
    as_json = getattr(args, "json", False)  # then stdout holds the JSON object only
    if args.plan:
        return _print_plan(args, tolerances, as_json)
    console = Console(stderr=as_json, width=None if (sys.stderr if as_json else sys.stdout).isatty() else 170)
    out = output_dir(args.out)
    store = out / "store"
    progress = not args.no_progress
    times: dict[str, float] = {}

    t0 = time.perf_counter()  # 1. extract
    _extract(args, store, out, console, progress)
    times["extract"] = time.perf_counter() - t0

    t0 = time.perf_counter()  # 2. bracket (in place)
    rows = _bracket(store, tolerances, args, progress)
    times["bracket"] = time.perf_counter() - t0

    t0 = time.perf_counter()  # 3. validated replay
    replay, summary = _replay(store, out / "replay", args, progress)
    times["replay"] = time.perf_counter() - t0
    for line in summary.errors:  # a malformed record: one line on stderr (the others were replayed)
        print(f"softrank run: error: {line}", file=sys.stderr)

    table = summarise(rows, replay_by_tolerance(replay.rows), tolerances)  # 4. summary
    _write_summary(out, table, times)
    _print_table(console, table, times, summary)
    from softrank.cli.report import write_report

    page = write_report(replay.out, out / "report.html", research=args.panel == "full")
    code = 0 if not summary.malformed else 2
    if as_json:
        import json

        print(json.dumps({"out": str(out), "store": str(store), "replay": str(replay.out), "report": str(page),
                          "table": table, "replay_summary": summary.as_json(), "seconds": times, "exit_code": code},
                         default=str), flush=True)
    else:
        print(f"report: {page}", flush=True)
    return code


def _print_plan(args, tolerances, as_json: bool) -> int:
    """``--plan``: what would run (``run_panel.run_plan``), on stdout; nothing is computed."""
    from softrank.cli.run_panel import run_plan

    plan = run_plan(args, tolerances)
    if as_json:
        import json

        print(json.dumps(plan), flush=True)
        return 0
    print(f"panel {plan['panel']}: {plan['operators']} operators x {len(plan['tolerances'])} tolerances "
          f"({', '.join(plan['tolerances'])})")
    for fam, f in plan["families"].items():
        print(f"  {fam}: {f['operators']} operators at {f['shape'][0]} x {f['shape'][1]}")
    return 0


def _extract(args, store: Path, out: Path, console, progress: bool) -> None:
    """Step 1: the panel into ``store`` (``--reuse``: kept as it is; ``--resume``: families not
    yet journaled), or the user's model."""
    have = (store / "records").is_dir() and any((store / "records").iterdir())
    if args.model is not None and not (args.reuse and have):
        if have and not args.resume:
            raise InputError(str(store), "store", "already holds records; remove it, choose another --out, "
                                                  "or pass --reuse")
        extract_model(args, store, console, progress)
        return
    from softrank.cli.run_panel import extract_panel

    extract_panel(args, store, out, console, progress)


def _bracket(store: Path, tolerances: list[Tolerance], args, progress: bool) -> list[dict]:
    """Step 2, its rows journaled in ``OUT/.bracket-done`` once the bracket's tables are written
    (the bracket removes its own journal then), so that ``--resume`` after a kill in the replay
    does not bracket again."""
    from softrank.cli.bracket import run_bracket
    from softrank.fastpath.runner import Journal

    journal = Journal(store.parent / BRACKET_DONE, {"eps": [t.text for t in tolerances]}, resume=args.resume)
    done = journal.entries().get("rows")
    if isinstance(done, list):
        return done
    rows = run_bracket(store, None, tolerances, jobs=args.jobs, progress=progress, label="bracket",
                       scheduler=args.scheduler, resume=args.resume)
    return journal.add("rows", rows)


def _replay(store: Path, out: Path, args, progress: bool):
    """The replay job after its run (its ``rows`` and ``out``) and its summary."""
    from softrank.cli.replay import ReplayJob

    job = ReplayJob(store, out, resume=args.resume)
    with progress_report(progress, "replay") as report:
        summary = job.execute(jobs=args.jobs, scheduler=args.scheduler, progress=report)
    return job, summary


def replay_by_tolerance(replay_rows: list[dict]) -> dict[tuple[str, object], dict]:
    """The replay's rows by (record id, exact tolerance); a malformed record's row has none."""
    out = {}
    for row in replay_rows:
        if row.get("status") != "malformed" and isinstance(row.get("eps"), str):
            out[(row["record_id"], Tolerance.from_printed(row["eps"]).value)] = row
    return out


def _int(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def summarise(rows: list[dict], replay_rows: dict, tolerances: list[Tolerance]) -> list[dict]:
    """One row per (family, eps): float64 bracket statistics, baseline, validated agreement; the
    bracket's rows and the replay's are joined on the exact tolerance."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["family"] or r["model"], Tolerance.from_printed(r["eps_text"]).value), []).append(r)
    return [_family_row(fam, tol, groups[fam, tol.value], replay_rows)
            for fam in sorted({fam for fam, _ in groups}) for tol in tolerances if (fam, tol.value) in groups]


def _family_row(fam: str, tol: Tolerance, sel: list[dict], replay_rows: dict) -> dict:
    p = [min(r["m"], r["N"]) for r in sel]
    U = [r["upper"] if r["upper"] is not None else q for r, q in zip(sel, p)]
    L = [r["lower"] for r in sel]
    bU = [r["baseline_upper"] if r["baseline_upper"] is not None else q for r, q in zip(sel, p)]
    bL = [r["baseline_lower"] for r in sel]
    agree = witnessed = 0
    for r in sel:
        rep = replay_rows.get((r["record_id"], tol.value))
        if rep is None:
            continue
        witnessed += 1
        agree += (_int(rep.get("validated_lower")) == r["lower"]
                  and _int(rep.get("validated_upper")) == r["upper"])
    return {
        "family": fam, "eps": tol.binary64, "operators": len(sel),
        "shape": f"{sel[0]['m']}x{sel[0]['N']}",
        "median_L": statistics.median(L), "median_U": statistics.median(U),
        "median_U_over_L": statistics.median(u / max(l, 1) for u, l in zip(U, L)),
        "resolved": sum(bool(r["resolved"]) for r in sel) / len(sel),
        "baseline_median_L": statistics.median(bL), "baseline_median_U": statistics.median(bU),
        "baseline_median_U_over_L": statistics.median(u / max(l, 1) for u, l in zip(bU, bL)),
        "baseline_resolved": sum(bool(r["baseline_resolved"]) for r in sel) / len(sel),
        "validated_agreement": (agree / witnessed) if witnessed else None,
        "replayed": witnessed,
    }


def _write_summary(out: Path, table: list[dict], times: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "summary.csv", table, list(table[0]) if table else [])
    write_json(out / "summary.json", {"table": table, "seconds": times})


def _print_table(console, table: list[dict], times: dict, summary) -> None:
    from rich.table import Table

    t = Table(title="softrank run: float64 brackets, validated replay (baseline: truncated SVD / Frobenius tail)")
    for col in ("family", "eps", "operators", "median L", "median U", "median U/L", "resolved",
                "validated agreement", "baseline L", "baseline U", "baseline U/L", "baseline resolved"):
        t.add_column(col, justify="right" if col not in ("family",) else "left")
    for r in table:
        agree = "-" if r["validated_agreement"] is None else f"{100 * r['validated_agreement']:.1f}%"
        t.add_row(r["family"], f"{r['eps']:g}", str(r["operators"]), f"{r['median_L']:g}", f"{r['median_U']:g}",
                  f"{r['median_U_over_L']:.2f}", f"{100 * r['resolved']:.1f}%", agree,
                  f"{r['baseline_median_L']:g}", f"{r['baseline_median_U']:g}",
                  f"{r['baseline_median_U_over_L']:.2f}", f"{100 * r['baseline_resolved']:.1f}%")
    console.print(t)
    console.print(summary.line())
    console.print("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
                  + f", total {sum(times.values()):.0f} s")
