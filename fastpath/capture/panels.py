"""The panels of ``softrank run``, defined in one place.

- ``default``: the embedded default panel (``extract.DEFAULT_PANELS``): 64 all-MiniLM-L6-v2
  operators at 256 x 256 and 54 SmolLM2-135M common-prefix blocks at N = 128, and beside the
  blocks (``smollm2-native``) 54 native causal SmolLM2-135M operators at 128 x 128: the causal
  self-attention the model applies to the first 128 tokens of the same six passes, one per
  (layer, head) pair the blocks use (same seed, so the same selection).
- ``full``: every attention head of both embedded checkpoints over eight fixed sources (stdlib
  documentation passages, seed 0): all-MiniLM-L6-v2 6 layers x 12 heads x 8 sources = 576 operators
  at 256 x 256; SmolLM2-135M 30 layers x 9 heads x 8 sources = 2,160 common-prefix blocks at
  N = 128 (one block per head and source: a 256-token pass fits one width-128 block, which needs
  2N - 1 = 255 tokens), and 2,160 native causal operators at 128 x 128 (the first 128 tokens
  of each pass, one per head and source); and the two checkpoints shipped in pinned packages (``shipped.py``):
  DINOv2-small 12 layers x 6 heads x 8 images (matplotlib sample crops) = 576 operators at
  257 x 257, FLAN-T5-small 8 layers x 6 heads x 8 passages in each of three regimes: encoder
  self-attention 256 x 256, cross-attention 64 x 256 (a 64-token decoder pass) and decoder
  self-attention blocks 32 x 32, 384 each.

``plan`` counts a panel's operators from the checkpoints' shapes below, without loading a model;
``extract_options`` gives ``extract_to_store`` the options that extract exactly that plan.
"""

from __future__ import annotations

from typing import Any

from softrank.fastpath.capture.extract import DEFAULT_PANELS
from softrank.fastpath.capture.labels import REGIME_LABELS

MODELS = ("minilm", "smollm2")  # the embedded checkpoints (--minilm, --smollm2)
SHIPPED_MODELS = ("dinov2-small", "flan-t5-small")  # the shipped ones (full panel)
SHIPPED_FLAGS = {"dinov2": "dinov2-small", "flan_t5": "flan-t5-small"}  # softrank run --dinov2, --flan-t5
# the family label the tables use, layers, heads, how extraction runs it; vision: tokens per image
CHECKPOINTS: dict[str, dict[str, Any]] = {
    "minilm": {"family": "all-MiniLM-L6-v2", "layers": 6, "heads": 12, "kind": "encoder"},
    "smollm2": {"family": "SmolLM2-135M", "layers": 30, "heads": 9, "kind": "decoder"},
    # SmolLM2's native causal operators: extracted from "smollm2" with operators "native"
    "smollm2-native": {"family": "SmolLM2-135M", "layers": 30, "heads": 9, "kind": "native", "model": "smollm2"},
    "dinov2-small": {"family": "DINOv2-small", "layers": 12, "heads": 6, "kind": "vision", "tokens": 257},
    "flan-t5-small": {"family": "FLAN-T5-small", "layers": 8, "heads": 6, "kind": "seq2seq"},
}
PANELS: dict[str, dict[str, dict[str, Any]]] = {
    "default": {**{name: dict(DEFAULT_PANELS[name]) for name in MODELS},
                "smollm2-native": {**DEFAULT_PANELS["smollm2"], "tokens": 128, "widths": None, "operators": "native"}},
    "full": {
        "minilm": {"sources": 8, "tokens": 256, "seed": 0},
        "smollm2": {"sources": 8, "tokens": 256, "widths": [128], "seed": 0},
        "smollm2-native": {"sources": 8, "tokens": 128, "operators": "native", "seed": 0},
        "dinov2-small": {"sources": 8, "seed": 0},
        "flan-t5-small": {"sources": 8, "tokens": 256, "decoder_tokens": 64, "widths": [32], "seed": 0},
    },
}
# a seq2seq pair's operators in the order extraction writes them (by the capture's attention name)
REGIMES = ("cross", "decoder-self-block", "encoder-self")
# the attention kind (provenance ``attention``) of a decoder's operators, which labels a family
# that has both kinds as the summary does (``softrank.findings.kinds``): ``SmolLM2-135M (decoder-self)``
ATTENTION = {"decoder": "decoder-self-block", "native": "decoder-self"}


def model_of(name: str) -> str:
    """The checkpoint a panel entry extracts from: ``smollm2-native`` -> ``smollm2``."""
    return CHECKPOINTS[name].get("model", name)


def shape(name: str, panel: str, regime: str | None = None) -> list[int]:
    """[m, N] of one operator of ``name`` in ``panel``: a whole pass (encoder, vision), one block
    (decoder), or for a seq2seq model the ``regime``'s (``REGIMES``)."""
    opts, arch = PANELS[panel][name], CHECKPOINTS[name]
    if arch["kind"] == "vision":
        return [arch["tokens"], arch["tokens"]]
    if arch["kind"] == "native":
        return [opts["tokens"], opts["tokens"]]
    width = min(opts["widths"]) if opts.get("widths") else opts["tokens"]
    if arch["kind"] == "seq2seq":
        dec = opts.get("decoder_tokens") or opts["tokens"]
        return {"encoder-self": [opts["tokens"], opts["tokens"]], "cross": [dec, opts["tokens"]],
                "decoder-self-block": [width, width]}[regime or "encoder-self"]
    return [width, width]


def per_pair(name: str, panel: str) -> int:
    """Operators per (layer, head) pair and source: one per block width, plus encoder and cross."""
    kind, widths = CHECKPOINTS[name]["kind"], PANELS[panel][name].get("widths") or []
    return {"decoder": max(1, len(widths)), "seq2seq": 2 + len(widths)}.get(kind, 1)


def natural_count(name: str, panel: str) -> int:
    """Every (layer, head) pair over every source, one operator per block width (and regime);
    capped by the panel's ``max_operators`` when it has one."""
    opts, arch = PANELS[panel][name], CHECKPOINTS[name]
    every = arch["layers"] * arch["heads"] * opts["sources"] * per_pair(name, panel)
    cap = opts.get("max_operators")
    return every if cap is None else min(every, cap)


def counts(panel: str, limit: int | None = None, given: dict[str, int | None] | None = None) -> dict[str, int]:
    """Operators per model: the panel's, or ``given[name]`` (``--minilm``, ``--smollm2``), at most
    ``limit`` each; a model counted 0 is left out."""
    out = {}
    for name in PANELS[panel]:
        n = natural_count(name, panel)
        wanted = (given or {}).get(model_of(name))  # --smollm2 counts its native operators too
        if wanted is not None:
            n = min(n, wanted) if panel == "full" else wanted
        if limit is not None:
            n = min(n, limit)
        if n > 0:
            out[name] = n
    return out


def regime_counts(name: str, count: int) -> dict[str, int]:
    """``count`` seq2seq operators over the regimes as extraction writes them (each pair gives
    one operator per regime, in ``REGIMES`` order), so the first regimes get any remainder."""
    return {r: count // len(REGIMES) + (i < count % len(REGIMES)) for i, r in enumerate(REGIMES)}


def plan(panel: str, tolerances: list[str], limit: int | None = None,
         given: dict[str, int | None] | None = None) -> dict[str, Any]:
    """What a run of ``panel`` would compute: operators, tolerances, and per family (the tables'
    label; a seq2seq model once per attention regime) its operators and shape."""
    per_model = counts(panel, limit, given)
    families = {}
    labels = [CHECKPOINTS[name]["family"] for name in per_model]
    for name, n in per_model.items():
        label = CHECKPOINTS[name]["family"]
        if labels.count(label) > 1:  # blocks and native operators of one model, side by side
            label = f"{label} ({ATTENTION[CHECKPOINTS[name]['kind']]})"
        if CHECKPOINTS[name]["kind"] != "seq2seq":
            families[label] = {"operators": n, "shape": shape(name, panel)}
            continue
        for regime, k in regime_counts(name, n).items():
            if k:
                families[f"{label} {REGIME_LABELS[regime]}"] = {"operators": k, "shape": shape(name, panel, regime)}
    return {"panel": panel, "operators": sum(per_model.values()), "tolerances": list(tolerances),
            "families": families}


def extract_options(name: str, panel: str, count: int, explicit: bool) -> dict[str, Any]:
    """``extract_to_store`` options for ``count`` operators of ``name`` in ``panel``.  The default
    panel passes only ``max_operators`` when a count was asked for (``explicit``), as it always did."""
    if panel == "default" and CHECKPOINTS[name].get("model") is None:
        return {"max_operators": count} if explicit else {}
    opts = {k: v for k, v in PANELS[panel][name].items() if k != "max_operators"}
    opts["max_operators"] = count
    return opts

