"""``softrank run``'s panels: the plan (``--plan``) and the journaled extraction (``--resume``).

The extraction of a panel is journaled per family in ``OUT/.extract-partial/`` (``Journal``): a
family whose entry is there is not extracted again on ``--resume``; a family cut short by a kill is
extracted again, its records already written being kept as they are (the same operator, the same
record: ``RecordWriter`` keeps an identical record).  The bracket and the replay resume from their
own journals.
"""

from __future__ import annotations

from pathlib import Path

from softrank.fastpath.capture import panels
from softrank.validated.errors import InputError

JOURNAL = ".extract-partial"


def given_counts(args) -> dict:
    given = {name: getattr(args, name, None) for name in panels.MODELS}
    return {**given, **{model: getattr(args, flag, None) for flag, model in panels.SHIPPED_FLAGS.items()}}


def run_plan(args, tolerances) -> dict:
    """What ``args`` would run (``panels.plan``), computing nothing."""
    return panels.plan(args.panel, [t.text for t in tolerances], args.limit, given_counts(args))


def extract_panel(args, store: Path, out: Path, console, progress: bool) -> None:
    """Step 1 of ``softrank run``: the panel's families into ``store``, each journaled when done."""
    from softrank.cli.extract import progress_report
    from softrank.fastpath.runner import Journal

    have = (store / "records").is_dir() and any((store / "records").iterdir())
    if args.reuse and have:
        console.print(f"[bold]extract[/]: reusing {store}")
        return
    if have and not args.resume:
        raise InputError(str(store), "store", "already holds records; remove it, choose another --out, "
                                              "or pass --reuse or --resume")
    given = given_counts(args)
    per_model = panels.counts(args.panel, args.limit, given)
    journal = Journal(out / JOURNAL, {"panel": args.panel, "limit": args.limit, "counts": per_model,
                                      "device": args.device}, resume=args.resume)
    done = journal.entries()
    extract_to_store = _extraction_api()
    for name, count in per_model.items():
        if name in done:
            console.print(f"[bold]extract[/]: {name} already extracted ({len(done[name]['ids'])} operators)")
            continue
        explicit = given.get(name) is not None or args.limit is not None
        opts = panels.extract_options(name, args.panel, count, explicit)
        if args.device is not None:
            from softrank.cli.args import check_device

            opts["device"] = check_device(args.device)
        with progress_report(progress, f"extract {name}") as report:
            ids = extract_to_store(name, store, progress=report, **opts)
        journal.add(name, {"ids": ids})
        console.print(f"[bold]extract[/]: {len(ids)} operators from {name}")


def _extraction_api():
    try:
        from softrank.fastpath.capture.extract import extract_to_store
    except ImportError as err:  # the extraction half of the fast path is missing
        raise InputError("softrank run", "extraction",
                         f"the extraction API softrank.fastpath.capture.extract.extract_to_store is not available ({err})")
    return extract_to_store
