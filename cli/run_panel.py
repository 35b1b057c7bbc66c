"""``softrank run``'s panels: the plan (``--plan``) and the counts asked for per model.  The
extraction itself is the pipeline's first step (``softrank.pipeline.steps.ExtractStep``)."""

from __future__ import annotations

from softrank.fastpath.capture import panels


def given_counts(args) -> dict:
    given = {name: getattr(args, name, None) for name in panels.MODELS}
    return {**given, **{model: getattr(args, flag, None) for flag, model in panels.SHIPPED_FLAGS.items()}}


def run_plan(args, tolerances) -> dict:
    """What ``args`` would run (``panels.plan``), computing nothing."""
    return panels.plan(args.panel, [t.text for t in tolerances], args.limit, given_counts(args))
