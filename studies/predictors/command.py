"""``softrank study predictors --main RUN_OUT --heldout HELDOUT_OUT --out DIR``: does a head's geometry
predict its validated rank bracket? The research page's predictor test on validated targets, under
the frozen protocol (``docs/predictors-protocol-2.md``; ``softrank.studies.predictors.study``)."""

from __future__ import annotations

from pathlib import Path

from softrank.cli.args import check_count, max_jobs, path_arg
from softrank.cli.output import print_json
from softrank.cli.paths import output_dir
from softrank.errors import InputError

OUTPUTS = ("operators.csv", "study.json", "predictors.md", "predictors-<view>-<target>.png", "report.html")


def configure(sub) -> None:
    from softrank.studies.kappa.command import _bootstrap

    p = sub.add_parser("predictors", help="does geometry predict the validated rank? ridge and boosted trees on "
                                          "feature blocks, held-out sources, under a frozen protocol",
                       description=__doc__.splitlines()[0])
    p.add_argument("--main", required=True, type=path_arg, metavar="RUN_OUT",
                   help="the output folder of softrank run --panel full (store/ and replay/)")
    p.add_argument("--heldout", required=True, type=path_arg, metavar="HELDOUT_OUT",
                   help="the output folder of softrank study constructions --panel full (sources disjoint "
                        "from the main panel's)")
    p.add_argument("--out", required=True, type=path_arg, metavar="DIR",
                   help="output folder: " + ", ".join(OUTPUTS) + ", journals and kappa-<panel>/")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="the first N operators of each family and panel (a quick look, not the run of record)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="run the features on this Dask scheduler")
    p.add_argument("--resume", action="store_true", help="continue a run in DIR (per-operator journals kept)")
    p.add_argument("--bootstrap", type=_bootstrap, default=2000,
                   help="source-cluster bootstrap resamples (the protocol's 2000; fewer is not the run of record)")
    p.add_argument("--protocol", type=path_arg, default=None, metavar="FILE",
                   help="the protocol file (default: the repository's docs/predictors-protocol-2.md); the study "
                        "refuses to start unless its SHA-256 is the frozen one")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print study.json's summary as one JSON object")


def run(args) -> int:
    from softrank.studies.predictors.protocol import check_protocol
    from softrank.studies.predictors.study import run_study

    proto = check_protocol(args.protocol)  # before anything is read or written
    check_count(args.limit, "limit", maximum=10_000_000)
    check_count(args.jobs, "jobs", maximum=max_jobs())
    for name in ("main", "heldout"):
        if not Path(getattr(args, name)).is_dir():
            raise InputError(str(getattr(args, name)), name, "not a folder")
    out = output_dir(args.out)
    if not args.resume and any(out.iterdir()):
        raise InputError(str(out), "out", "is not empty: pass --resume to continue a run there, or choose a new "
                                          "folder (nothing there was changed)")
    if not args.json:
        print(f"protocol {proto['path']}: SHA-256 {proto['sha256']} (the frozen one)")
    from softrank.cli.progress import StageBars

    bars = None if args.no_progress or args.json else StageBars()
    progress = None if bars is None else (lambda stage: (lambda done, total: bars(stage, done, total)))
    try:
        study = run_study(args.main, args.heldout, out, limit=args.limit, jobs=args.jobs, resume=args.resume,
                          scheduler=args.scheduler, protocol=args.protocol, bootstrap=args.bootstrap,
                          progress=progress)
    finally:
        if bars is not None:
            bars.close()
    if args.json:
        print_json({k: study[k] for k in ("protocol", "run_of_record", "operators", "families", "results",
                                          "gauges", "cost", "report")})
        return 0
    # the head of the report (protocol, notes, the research page's figures beside this study's);
    # every view's tables are in predictors.md and report.html
    head, sections = [], 0
    for line in study["text"].splitlines():
        sections += line.startswith("## ")
        if sections > 1:
            break
        head.append(line)
    print("\n".join(head).rstrip())
    print(f"per view, model and target: {out / 'predictors.md'}")
    print(f"-> {out / 'report.html'}, {out / 'study.json'}")
    return 0

