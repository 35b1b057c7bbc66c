"""``softrank study constructions --panel P``: the held-out construction benchmark's steps
(extract on held-out sources, bracket every construction at eps 0.25, replay, summarise with
source-bootstrap intervals; ``softrank.studies.heldout.heldout``), and the report of the
held-out brackets with the construction section, ``OUT/report.html``."""

from __future__ import annotations

import csv
from pathlib import Path

from softrank.cli.extract import progress_report
from softrank.cli.paths import load_json_text, output_dir, read_text_file
from softrank.cli.output import print_json
from softrank.fastpath.store.files import write_json
from softrank.errors import InputError


def _rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


EXTRACTED = ".heldout-extracted"  # written once the extraction is whole: what --resume reuses


def _extract(args, out: Path, progress: bool) -> list[str]:
    """The held-out records in OUT/store (step 1), or, on ``--resume`` after a whole extraction,
    the sources it used; returns the source ids."""
    from softrank.studies.heldout import heldout

    plan = {"panel": args.panel, "limit": args.limit}
    marker = out / EXTRACTED
    if args.resume and marker.is_file():
        done = load_json_text(read_text_file(marker, "resume"), marker, "resume")
        if not isinstance(done, dict) or not isinstance(done.get("sources"), list):
            raise InputError(str(marker), "sources", "not the record of a held-out extraction")
        if {k: done.get(k) for k in plan} != plan:
            raise InputError(str(marker), "panel", f"this folder holds {done.get('panel')!r} with --limit "
                                                   f"{done.get('limit')}; resume it with the same options")
        return list(done["sources"])
    with progress_report(progress, "extract (held-out sources)") as report:
        passages, _ = heldout.extract_held_out(out / "store", args.panel, _text_counts(args),
                                               progress=report)
    sources = [p.source_id for p in passages]
    write_json(marker, {**plan, "sources": sources})
    return sources


def held_out(args) -> int:
    from softrank.cli.bracket import run_bracket
    from softrank.findings.replay_job import ReplayJob
    from softrank.findings.report import write_report
    from softrank.fastpath.bracket.store import COMPLETION
    from softrank.studies.heldout import heldout

    out = output_dir(args.out)
    if not args.resume and any(out.iterdir()):
        raise InputError(str(out), "out", "is not empty: pass --resume to continue a run there, or choose a new "
                                          "folder (nothing there was changed)")
    store, progress = out / "store", not args.no_progress
    sources = _extract(args, out, progress)
    if not (args.resume and all((store / name).is_file() for name in COMPLETION)):  # else: bracketed whole
        run_bracket(store, None, [heldout.EPS], jobs=args.jobs, mode="full", progress=progress,
                    label="bracket (full)", scheduler=args.scheduler, resume=args.resume)
    job = ReplayJob(store, out / "replay", resume=args.resume)
    with progress_report(progress, "replay") as report:
        job.execute(jobs=args.jobs, scheduler=args.scheduler, progress=report)
    ops = heldout.operator_ratios(_rows(store / "bracket.csv"), _rows(out / "replay" / "replay.csv"), 0.25)
    result = {"eps": heldout.EPS, "panel": args.panel,
              "sources": sources,
              "families": heldout.summarise(ops)}
    write_json(out / "heldout.json", result)
    report = write_report(out / "replay", out / "report.html", research=True, heldout=out / "heldout.json")
    if args.json:
        print_json(result)
        return 0
    print(f"held-out sources ({len(result['sources'])}), eps {heldout.EPS}: median rank / validated L "
          "[95% source-bootstrap interval]")
    for fam, row in result["families"].items():
        cells = ", ".join(f"{c} {row[c]['median']:.2f} [{row[c]['ci95'][0]:.2f}, {row[c]['ci95'][1]:.2f}]"
                          for c in ("best", *heldout.ALL_CONSTRUCTIONS))
        print(f"  {fam} ({row['operators']} operators, {row['sources']} sources): {cells}")
        rel, ref = row.get("relative_to_" + heldout.REFERENCE), heldout.REFERENCE
        if rel is not None:
            print(f"    rank / {ref}'s ({row['operators_with_' + ref]} operators with a {ref} witness): "
                  + ", ".join(f"{c} {rel[c]['median']:.2f}" for c in heldout.ALL_CONSTRUCTIONS))
        tally = row["failed_attempts"]["all"]
        print("    failed attempts: " + ", ".join(f"{tally[k]:,} {k}" for k in heldout.ATTEMPT_CLASSES))
    print(f"-> {out / 'heldout.json'}, {report}")
    return 0


def _text_counts(args) -> dict[str, int]:
    """The panel's counts for the embedded text checkpoints (the held-out passages are text)."""
    from softrank.fastpath.capture.panels import MODELS, counts

    return {k: v for k, v in counts(args.panel, args.limit).items() if k in MODELS}
