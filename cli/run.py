"""``softrank run``: the main job.

On its embedded default panel (DEFAULT_PANELS of ``softrank extract``: 64 all-MiniLM-L6-v2
operators at 256 x 256 and 54 SmolLM2-135M common-prefix blocks at N = 128, and beside them 54
native causal SmolLM2-135M operators at 128 x 128 over the first 128 tokens of the same passes and
heads (``softrank.fastpath.capture.panels``), stdlib documentation passages selected by seed 0) it

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
``--resume`` continues a killed or stopped run in OUT from its journal (``OUT/.partial/``: one
entry per finished step, and the finished items of the step under way); ``--jobs N`` and
``--scheduler ADDRESS`` run bracket and replay on Dask (``softrank.fastpath.runner``).

This module parses and checks the arguments, calls the pipeline (``softrank.pipeline.run``: the
steps, the journal, the lock on OUT, the faults it stops on in one line with exit code 4) and
prints the table.
"""

from __future__ import annotations

from pathlib import Path

from softrank.cli.args import check_count, max_jobs, path_arg, value_arg
from softrank.cli.extract import add_model_options, check_model_options, extract_model, progress_report
from softrank.cli.paths import output_dir
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

MODELS = ("minilm", "smollm2")
SHIPPED = ("dinov2", "flan_t5")  # --dinov2, --flan-t5 (full panel: panels.SHIPPED_FLAGS)


EPILOG = """--json prints one object on stdout (the progress and the human lines go to stderr): {"out",
"store", "replay" (folders), "report" (the page), "table": [one object per family and eps, the columns
of OUT/summary.csv: family, support ("causal" for a decoder's native operators, else "full"), eps (the tolerance's text, "0.15", as bracket and report print it), operators, shape, median_L, median_U, median_U_over_L, resolved
(share, by the results table's criterion on the float64 ends), the baseline's, validated_agreement,
replayed], "replay_summary" (as softrank replay --json prints it), "notes" (lines such as a randomly initialised model's
near-uniform attention: every validated bracket [1, 1], or what native causal operators measure), "families" (one
object per family, also in OUT/summary.json: records, tolerances, upper_proved / upper_refuted / upper_unresolved,
lower_proved / lower_not_accepted (certificates), lower_changed / upper_changed (tolerances whose validated end
differs from the float64 end), bracket_seconds / replay_seconds (summed worker task times)), "seconds" (per step),
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
                        help="default: 64 MiniLM + 54 SmolLM2 blocks + 54 SmolLM2 native operators; full: every "
                             "head of both checkpoints over 8 sources (576 + 2,160 + 2,160 native), DINOv2-small (576) and FLAN-T5-small "
                             "(3 x 384)")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="the first N operators of each family only (a quick look)")
    parser.add_argument("--plan", action="store_true", help="print what would run (with --json: one object) "
                                                            "and compute nothing")
    parser.add_argument("--resume", action="store_true",
                        help="continue a killed or stopped run in OUT from its journal (OUT/.partial)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="bracket and replay on the dask.distributed scheduler at ADDRESS (its workers "
                             "must see OUT at the same path)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG
    add_model_options(parser)  # --model DIR_OR_NAME [--texts FILE] [--layers ...] [--heads ...]


def _check_arguments(args) -> list[Tolerance]:
    """The tolerances (``Tolerance.parse_list``), after the other checks."""
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
    given = [f"--{name}" for name, on in (("panel", args.panel != "default"), ("limit", args.limit is not None),
                                          ("plan", args.plan)) if on]
    if args.model is not None and given:
        raise InputError("arguments", "model", f"{', '.join(given)}: about the embedded checkpoints (--panel, "
                                               f"--limit, --plan); not with --model")
    if args.model is not None:  # a wrong path fails here, before torch is imported
        from softrank.fastpath.capture.locate import resolve

        resolve(str(args.model))
    if all(getattr(args, name) == 0 for name in MODELS) and args.model is None and args.panel == "default":
        raise InputError("arguments", "minilm", "--minilm 0 and --smollm2 0 leave nothing to run")
    from softrank.replay.reader import MAX_TOLERANCES

    return Tolerance.parse_list(args.eps, most=MAX_TOLERANCES)


def run(args) -> int:
    import sys

    from rich.console import Console

    from softrank.pipeline.run import RunStopped, run_pipeline

    tolerances = _check_arguments(args)
    as_json = getattr(args, "json", False)  # then stdout holds the JSON object only
    if args.plan:
        return _print_plan(args, tolerances, as_json)
    console = Console(stderr=as_json, width=None if (sys.stderr if as_json else sys.stdout).isatty() else 170)
    created = not Path(args.out).exists()
    settings, hooks = _pipeline_arguments(args, tolerances, console)
    try:
        result = run_pipeline(settings, hooks)
    except RunStopped as err:  # a fault: one line; --resume continues
        print(f"softrank run: error: {err}", file=sys.stderr)
        return err.code
    except BaseException:
        if created:
            remove_if_unwritten(settings.out)
        raise
    for line in result.summary.errors:  # a malformed record: one line on stderr (the others were replayed)
        print(f"softrank run: error: {line}", file=sys.stderr)
    _print_table(console, result.table, result.times, result.summary, result.notes, result.families)
    if as_json:
        from softrank.cli.output import print_json

        print_json({"out": str(result.out), "store": str(result.store), "replay": str(result.replay),
                    "report": str(result.page), "table": result.table, "replay_summary": result.summary.as_json(),
                    "notes": result.notes, "families": result.families, "seconds": result.times, "exit_code": result.code})
    else:
        print(f"report: {result.page}", flush=True)
    return result.code


def remove_if_unwritten(out: Path) -> None:
    """A folder this run created and wrote nothing into (only its lock and the journal's
    parameters) is removed when the run fails."""
    import shutil

    files = [p for p in Path(out).rglob("*") if not p.is_dir()]
    if all(p.name == ".lock" and p.parent == Path(out) or p.name == "params.json" for p in files):
        shutil.rmtree(out, ignore_errors=True)


def _pipeline_arguments(args, tolerances: list[Tolerance], console):
    """The pipeline's ``Settings`` and ``Hooks`` (printing, progress bars, the user's model)."""
    from softrank.cli.args import check_device
    from softrank.cli.run_panel import given_counts
    from softrank.pipeline.steps import Hooks, Settings

    progress = not args.no_progress
    settings = Settings(out=output_dir(args.out), tolerances=tolerances, jobs=args.jobs, scheduler=args.scheduler,
                        resume=args.resume, reuse=args.reuse, panel=args.panel, limit=args.limit,
                        given=given_counts(args), device=check_device(args.device),
                        model=None if args.model is None else str(args.model))
    return settings, Hooks(say=console.print, progress=_progress_hook(progress),
                           extract_model=lambda store: extract_model(args, store, console, progress))


def _progress_hook(on: bool):
    """``hook(label, start)``: a context yielding ``report(done, total)`` (None when ``on`` is
    false) that opens a progress bar at its first report, when the total is known."""
    from functools import partial

    return partial(progress_report, on)


def _print_plan(args, tolerances, as_json: bool) -> int:
    """``--plan``: what would run (``run_panel.run_plan``), on stdout; nothing is computed."""
    from softrank.cli.run_panel import run_plan

    plan = run_plan(args, tolerances)
    if as_json:
        from softrank.cli.output import print_json

        print_json(plan)
        return 0
    print(f"panel {plan['panel']}: {plan['operators']} operators x {len(plan['tolerances'])} tolerances "
          f"({', '.join(plan['tolerances'])})")
    for fam, f in plan["families"].items():
        print(f"  {fam}: {f['operators']} operators at {f['shape'][0]} x {f['shape'][1]}")
    return 0


def _print_table(console, table: list[dict], times: dict, summary, notes=(), families=()) -> None:
    from rich.table import Table

    t = Table(title="softrank run: float64 brackets, validated replay (baseline: truncated SVD / Frobenius tail)")
    for col in ("family", "support", "eps", "operators", "median L", "median U", "median U/L", "resolved",
                "validated agreement", "baseline L", "baseline U", "baseline U/L", "baseline resolved"):
        t.add_column(col, justify="right" if col not in ("family", "support") else "left")
    for r in table:
        agree = "-" if r["validated_agreement"] is None else f"{100 * r['validated_agreement']:.1f}%"
        t.add_row(r["family"], r["support"], str(r["eps"]), str(r["operators"]), f"{r['median_L']:g}", f"{r['median_U']:g}",
                  f"{r['median_U_over_L']:.2f}", f"{100 * r['resolved']:.1f}%", agree,
                  f"{r['baseline_median_L']:g}", f"{r['baseline_median_U']:g}",
                  f"{r['baseline_median_U_over_L']:.2f}", f"{100 * r['baseline_resolved']:.1f}%")
    console.print(t)
    console.print(summary.line())
    if families:
        f = Table(title="per family: replay outcomes (all tolerances), validated != float64, worker seconds")
        for col in ("family", "records", "upper proved", "refuted", "unresolved", "lower proved", "not accepted",
                    "changed (L/U)", "bracket s", "replay s"):
            f.add_column(col, justify="left" if col == "family" else "right")
        for r in families:
            f.add_row(r["family"], str(r["records"]), str(r["upper_proved"]), str(r["upper_refuted"]),
                      str(r["upper_unresolved"]), str(r["lower_proved"]), str(r["lower_not_accepted"]),
                      f"{r['lower_changed']}/{r['upper_changed']}", f"{r['bracket_seconds']:.0f}",
                      f"{r['replay_seconds']:.0f}")
        console.print(f)
    for note in notes:  # a randomly initialised model says so
        console.print(f"note: {note}", markup=False)
    console.print("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
                  + f", total {sum(times.values()):.0f} s")
