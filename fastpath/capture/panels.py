"""The panels of ``softrank run``, defined in one place.

- ``default``: the embedded default panel (``extract.DEFAULT_PANELS``): 64 all-MiniLM-L6-v2
  operators at 256 x 256 and 54 SmolLM2-135M common-prefix blocks at N = 128.
- ``full``: every attention head of both embedded checkpoints over eight fixed sources (stdlib
  documentation passages, seed 0): all-MiniLM-L6-v2 6 layers x 12 heads x 8 sources = 576 operators
  at 256 x 256; SmolLM2-135M 30 layers x 9 heads x 8 sources = 2,160 common-prefix blocks at
  N = 128 (one block per head and source: a 256-token pass fits one width-128 block, which needs
  2N - 1 = 255 tokens).

``plan`` counts a panel's operators from the checkpoints' shapes below, without loading a model;
``extract_options`` gives ``extract_to_store`` the options that extract exactly that plan.
"""

from __future__ import annotations

from typing import Any

from softrank.fastpath.capture.extract import DEFAULT_PANELS

MODELS = ("minilm", "smollm2")
# the embedded checkpoints: the family label the tables use, layers, heads, and each operator's shape
CHECKPOINTS: dict[str, dict[str, Any]] = {
    "minilm": {"family": "all-MiniLM-L6-v2", "layers": 6, "heads": 12},
    "smollm2": {"family": "SmolLM2-135M", "layers": 30, "heads": 9},
}
PANELS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {name: dict(DEFAULT_PANELS[name]) for name in MODELS},
    "full": {
        "minilm": {"sources": 8, "tokens": 256, "seed": 0},
        "smollm2": {"sources": 8, "tokens": 256, "widths": [128], "seed": 0},
    },
}


def shape(name: str, panel: str) -> list[int]:
    """[m, N] of one operator of ``name`` in ``panel``: a whole pass (encoder) or one block (decoder)."""
    opts = PANELS[panel][name]
    width = min(opts["widths"]) if opts.get("widths") else opts["tokens"]
    return [width, width]


def natural_count(name: str, panel: str) -> int:
    """Every (layer, head) pair over every source, one operator per block width; capped by the
    panel's ``max_operators`` when it has one."""
    opts, arch = PANELS[panel][name], CHECKPOINTS[name]
    every = arch["layers"] * arch["heads"] * opts["sources"] * max(1, len(opts.get("widths") or []))
    cap = opts.get("max_operators")
    return every if cap is None else min(every, cap)


def counts(panel: str, limit: int | None = None, given: dict[str, int | None] | None = None) -> dict[str, int]:
    """Operators per model: the panel's, or ``given[name]`` (``--minilm``, ``--smollm2``), at most
    ``limit`` each; a model counted 0 is left out."""
    out = {}
    for name in MODELS:
        n = natural_count(name, panel)
        wanted = (given or {}).get(name)
        if wanted is not None:
            n = min(n, wanted) if panel == "full" else wanted
        if limit is not None:
            n = min(n, limit)
        if n > 0:
            out[name] = n
    return out


def plan(panel: str, tolerances: list[str], limit: int | None = None,
         given: dict[str, int | None] | None = None) -> dict[str, Any]:
    """What a run of ``panel`` would compute: operators, tolerances, and per family (the tables'
    label) its operators and shape."""
    per_model = counts(panel, limit, given)
    families = {CHECKPOINTS[name]["family"]: {"operators": n, "shape": shape(name, panel)}
                for name, n in per_model.items()}
    return {"panel": panel, "operators": sum(per_model.values()), "tolerances": list(tolerances),
            "families": families}


def extract_options(name: str, panel: str, count: int, explicit: bool) -> dict[str, Any]:
    """``extract_to_store`` options for ``count`` operators of ``name`` in ``panel``.  The default
    panel passes only ``max_operators`` when a count was asked for (``explicit``), as it always did."""
    if panel == "default":
        return {"max_operators": count} if explicit else {}
    opts = {k: v for k, v in PANELS[panel][name].items() if k != "max_operators"}
    opts["max_operators"] = count
    return opts

