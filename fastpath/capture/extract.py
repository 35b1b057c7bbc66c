"""Extraction (the producer's first half): capture attention operators from a model into a store.

:func:`extract_to_store` plans the work (sources, (layer, head) pairs per source, block widths and
pass length; everything that can be checked before a forward pass is checked), runs one forward
pass per source capturing the wanted layers (``fastpath/capture/dispatch.py``), turns the captures into
operators (``fastpath/capture/operators.py``) and writes them unbracketed (``tolerances = []``, form
``qk``); ``index.csv`` is rewritten at the end.  ``softrank extract`` and ``softrank run`` are its
front ends.

Default panels (the ones ``softrank run`` needs), chosen when the model is named and an option
is not given: see ``DEFAULT_PANELS``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from softrank.fastpath.capture.inputs import block_widths, model_window, pass_sources, text_sources
from softrank.errors import InputError

# Defaults per named model: the research panel (>= 64 MiniLM operators at 256 x 256,
# >= 54 SmolLM2 operators as N = 128 common-prefix blocks of a 256-token pass).
DEFAULT_PANELS: dict[str, dict[str, Any]] = {
    "minilm": {"sources": 8, "tokens": 256, "max_operators": 64, "seed": 0},
    "smollm2": {"sources": 6, "tokens": 256, "widths": [128], "max_operators": 54, "seed": 0},
}
GENERAL_DEFAULTS: dict[str, Any] = {"sources": 2, "tokens": 256, "widths": None, "max_operators": None, "seed": 0}
OPTION_NAMES = ("sources", "seed", "tokens", "widths", "layers", "heads", "max_operators", "texts",
                "images", "device", "progress", "threads", "operators", "decoder_tokens")
# torch CPU threads during extraction.  One thread: on the shared 2-core machine two OpenMP
# threads made a SmolLM2 pass 3 to 10 times slower under load (measured: 2 passes, 1 thread
# 3.6-5.7 s, 2 threads 12-42 s, load average 5-7); on an idle machine one thread costs little.
DEFAULT_THREADS = 1



def require_producer(what: str = "capture") -> None:
    """One clear error when the producer's dependencies (torch, transformers) are missing."""
    missing = [m for m in ("torch", "transformers") if _absent(m)]
    if missing:
        raise InputError("softrank", "producer",
                         f"{what} needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not "
                         f"installed: pip install 'softrank[producer]'")


def _absent(module: str) -> bool:
    import importlib.util
    import sys

    if module in sys.modules:
        return sys.modules[module] is None
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def _options(model_name: str | None, given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(OPTION_NAMES)
    if unknown:
        raise TypeError(f"extract_to_store: unknown options {sorted(unknown)}")
    opts = dict(GENERAL_DEFAULTS)
    from softrank.fastpath.capture.shipped import SHIPPED

    shipped = SHIPPED.get(model_name or "")
    opts.update(DEFAULT_PANELS.get(model_name or "", shipped.extract_defaults if shipped else {}))
    opts.update({k: v for k, v in given.items() if v is not None})
    opts["tokens_given"] = given.get("tokens") is not None
    if opts.get("operators") == "native" and given.get("widths") is None:
        opts["widths"] = None  # a panel's block widths do not apply to native operators
    return opts


def spread_pairs(layers: list[int], heads: list[int], count: int | None, rng: random.Random) -> list[tuple[int, int]]:
    """``count`` (layer, head) pairs spread over layers: each layer's heads in a seeded order,
    layers visited round-robin in a seeded order; all pairs when ``count`` is None."""
    layer_order = list(layers)
    rng.shuffle(layer_order)
    per_layer = {}
    for layer in layer_order:
        hs = list(heads)
        rng.shuffle(hs)
        per_layer[layer] = hs
    pairs = [(layer, per_layer[layer][r]) for r in range(len(heads)) for layer in layer_order]
    return pairs if count is None else pairs[:count]


def _check_range(values: list[int] | None, limit: int, field: str) -> list[int]:
    if values is None:
        return list(range(limit))
    bad = [v for v in values if not 0 <= v < limit]
    if bad:
        raise InputError("arguments", field, f"{bad[0]} out of range 0..{limit - 1}")
    return sorted(set(values))


# beyond these a run cannot finish (or a library overflows): refused before any model is loaded
UPPER_LIMITS = {"sources": 100_000, "tokens": 1_000_000, "max_operators": 10_000_000, "threads": 1024}


def extract_to_store(model, store, **options) -> list[str]:
    """Capture operators from ``model`` and write them to ``store``; returns the record ids.

    ``model``: "minilm", "smollm2", a local checkpoint path, a cached hub id, or a ``LoadedModel``.
    Options (all optional; a named model's ``DEFAULT_PANELS`` entry fills what is not given):
    ``sources`` (int), ``seed`` (int), ``tokens`` (pass length), ``widths`` (block widths for
    decoders), ``layers``, ``heads`` (lists of ints), ``max_operators`` (int), ``texts`` (list of
    strings or (source_id, text) pairs, replacing the stdlib passages), ``images`` (image file
    paths for vision models, replacing the synthetic images), ``device``,
    ``progress`` (a callable ``progress(done, total)``, called once the work is planned and after
    each record), ``threads`` (torch CPU threads during extraction, default ``DEFAULT_THREADS``,
    restored afterwards), ``operators`` (what a causal self-attention call gives: "blocks", the
    default, "native" for the masked operator over the whole pass, or "both").
    Raises ``InputError`` for bad input (unknown model, unsupported model, pass too short for a
    block width, empty text, unreadable image file, out-of-range layers or heads).
    """
    require_producer("extraction")
    import torch
    from softrank.fastpath.capture.models import LoadedModel, load_model

    name = model.name if isinstance(model, LoadedModel) else str(model)
    opts = _options(name, options)
    for key in ("sources", "tokens", "max_operators", "threads"):
        if opts.get(key) is not None and (not isinstance(opts[key], int) or opts[key] < 1):
            raise InputError("arguments", key.replace("_", "-"), f"must be a positive integer, got {opts[key]!r}")
        if opts.get(key) is not None and opts[key] > UPPER_LIMITS[key]:
            shown = str(opts[key]) if len(str(opts[key])) <= 30 else f"{str(opts[key])[:12]}... ({len(str(opts[key]))} digits)"
            raise InputError("arguments", key.replace("_", "-"), f"must be at most {UPPER_LIMITS[key]:,}, got {shown}")
    from softrank.fastpath.capture.operators import OPERATOR_KINDS

    if opts.get("operators") is not None and opts["operators"] not in OPERATOR_KINDS:
        raise InputError("arguments", "operators", f"expected one of {', '.join(OPERATOR_KINDS)}, "
                                                   f"got {opts['operators']!r}")
    if opts.get("progress") not in (None, False) and not callable(opts["progress"]):
        raise TypeError("extract_to_store: progress must be a callable progress(done, total)")
    passages = text_sources(opts) if opts.get("texts") is not None else None

    threads_before = torch.get_num_threads()
    torch.set_num_threads(int(opts.get("threads") or DEFAULT_THREADS))
    try:
        lm = model if isinstance(model, LoadedModel) else load_model(name, device=opts.get("device"))
        plan = _plan(lm, opts, passages)
        return _extract(lm, store, plan, opts)
    finally:
        torch.set_num_threads(threads_before)


def _extract(lm, store, plan, opts) -> list[str]:
    from softrank.fastpath.store.writer import write_index

    Path(store).mkdir(parents=True, exist_ok=True)
    report = opts.get("progress") or None
    limit = plan["max_operators"]
    ids: list[str] = []
    if report:
        report(0, plan["total"])
    for source, pairs in plan["work"]:
        for rid in _extract_source(lm, store, source, pairs, plan):
            ids.append(rid)
            if report:
                report(len(ids), plan["total"])
            if limit is not None and len(ids) >= limit:
                break
        if limit is not None and len(ids) >= limit:
            break
    write_index(store)
    return ids


def _plan(lm, opts, passages) -> dict[str, Any]:
    """Sources, (layer, head) pairs per source, widths and pass length; checks what can be
    checked before any forward pass."""
    layers = _check_range(opts.get("layers"), lm.num_layers, "layers")
    heads = _check_range(opts.get("heads"), lm.num_heads, "heads")
    tokens = int(opts["tokens"])
    if not opts.get("tokens_given") and lm.max_positions is not None and lm.kind != "vision":
        tokens = min(tokens, lm.max_positions)  # the default pass fits a small model's positions
    if not opts.get("tokens_given") and opts.get("operators") != "native" and model_window(lm) is not None:
        tokens = min(tokens, model_window(lm))  # and its sliding window (a block must see every key)
    kinds = opts.get("operators") or "blocks"
    widths = block_widths(lm, opts, tokens,
                          passages if lm.kind in ("decoder", "seq2seq") and kinds != "native" else None,
                          blocks=kinds != "native")
    native = int(kinds != "blocks")
    sources = pass_sources(lm, opts, passages)
    per_pair = {"encoder": 1, "vision": 1, "blip2": 1, "decoder": len(widths) + native,
                "seq2seq": 2 + len(widths) + native}[lm.kind]
    max_ops = opts.get("max_operators")
    work = []
    rng = random.Random(int(opts["seed"]))
    quota = None if max_ops is None else math.ceil(max_ops / len(sources))
    for source in sources:
        count = None if quota is None else math.ceil(quota / per_pair)
        work.append((source, spread_pairs(layers, heads, count, rng)))
    total = sum(len(p) * per_pair for _, p in work)
    if max_ops is not None:
        total = min(total, max_ops)
    dec = opts.get("decoder_tokens")  # seq2seq: the decoder's pass is its first dec tokens
    if dec is not None and (lm.kind != "seq2seq" or not isinstance(dec, int) or dec < 2 * max(widths or [1]) - 1):
        raise InputError("arguments", "decoder-tokens", f"{dec!r}: needs a seq2seq model and 2N - 1 <= it for each width N")
    return {"work": work, "widths": widths, "tokens": tokens, "max_operators": max_ops, "total": total,
            "seed": int(opts["seed"]), "operators": kinds, "decoder_tokens": dec}


def _forward(lm, source, plan) -> None:
    """One forward pass of ``lm`` on ``source`` (inside a capture session)."""
    import torch

    dev = lm.device
    widths = plan["widths"]
    if lm.kind in ("vision", "blip2"):
        pixels = torch.from_numpy(source.pixels)[None].to(dev)
        if lm.kind == "vision":
            lm.model(pixel_values=pixels)
        else:
            _blip2_qformer(lm.model, pixels)
        return
    ids = lm.encode_text(source.text, plan["tokens"])
    if not ids:
        raise InputError(source.source_id, "text", "the text gives no tokens")
    if widths and len(ids) < 2 * widths[-1] - 1:
        raise InputError(source.source_id, "text",
                         f"pass of {len(ids)} tokens is too short for block width {widths[-1]} "
                         f"(needs {2 * widths[-1] - 1})")
    input_ids = torch.tensor([ids], dtype=torch.long, device=dev)
    mask = torch.ones_like(input_ids)
    if lm.kind == "seq2seq":
        decoder_ids = torch.cat([torch.full_like(input_ids[:, :1], decoder_start_token(lm)), input_ids[:, :-1]], 1)
        decoder_ids = decoder_ids[:, :plan.get("decoder_tokens") or decoder_ids.shape[1]]
        lm.model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_ids, use_cache=False)
    elif lm.kind == "decoder":
        lm.model.base_model(input_ids=input_ids, attention_mask=mask, use_cache=False)
    else:
        lm.model(input_ids=input_ids, attention_mask=mask)


def decoder_start_token(lm) -> int:
    """T5's first decoder token: the config's ``decoder_start_token_id``, else the generation
    config's, else the pad token (T5's convention), else 0 (a config built with defaults has none)."""
    for source in (lm.config, getattr(lm.model, "generation_config", None)):
        value = getattr(source, "decoder_start_token_id", None)
        if value is not None:
            return int(value)
    pad = getattr(lm.config, "pad_token_id", None)
    return int(pad) if pad is not None else 0


def _head_jobs(captures, pairs) -> list[tuple]:
    """(capture, head) for every wanted pair, in the order of ``pairs`` (then by attention kind)."""
    wanted = set(pairs)
    order = {pair: i for i, pair in enumerate(pairs)}
    jobs = []
    for cap in sorted(captures, key=lambda c: (c.layer, c.attention)):
        for head in range(cap.num_heads):
            if (cap.layer, head) in wanted:
                jobs.append((order[(cap.layer, head)], cap, head))
    jobs.sort(key=lambda j: (j[0], j[1].attention))
    return [(cap, head) for _, cap, head in jobs]


def _select(lm):
    """Which attention modules a pass keeps: for BLIP-2 the Q-Former's cross-attention (queries to
    image patches) only; every attention module otherwise."""
    if lm.kind == "blip2":
        return lambda name, cross: cross and name.startswith("qformer.")
    return None


def _extract_source(lm, store, source, pairs, plan):
    """Run one forward pass on ``source`` capturing the layers in ``pairs``; yield record ids.
    An operator the capture refuses (see ``operators.operators_for``) is warned about
    (``CaptureWarning``) and not written."""
    import warnings

    from softrank.fastpath.capture.dispatch import CaptureWarning, capturing
    from softrank.fastpath.capture.operators import (
        Refusal,
        operators_for,
        provenance,
        record_id,
        write_operator,
    )
    from softrank.fastpath.capture.session import link_cross_queries

    layers = {layer for layer, _ in pairs}
    one_call_per_layer = lm.kind in ("encoder", "decoder", "vision")
    with capturing(lm.model, lm.family, layers, stop_early=one_call_per_layer, select=_select(lm)) as session:
        _forward(lm, source, plan)
    link_cross_queries(session.captures)
    extra = {"checkpoint_files": lm.checkpoint_files, "device": lm.device, "selection_seed": plan["seed"],
             "kv_head": None, **lm.extra}
    if lm.kind == "seq2seq":
        extra["decoder_start_token_id"] = decoder_start_token(lm)
    for cap, head in _head_jobs(session.captures, pairs):
        for op in operators_for(cap, head, plan["widths"], operators=plan["operators"]):
            if isinstance(op, Refusal):
                warnings.warn(op.message(), CaptureWarning, stacklevel=2)
                continue
            rid = record_id(lm.tag, source.source_id, op)
            prov = provenance(op, model=lm.name, family=lm.family, checkpoint_sha256=lm.checkpoint_sha256,
                              source_id=source.source_id, source_sha256=source.sha256,
                              extra={**extra, "kv_head": head // cap.n_rep})
            yield write_operator(store, rid, op, prov)


def _blip2_qformer(model, pixels) -> None:
    """BLIP-2: vision encoder, then the Q-Former's query tokens against the image embeddings."""
    import torch

    image_embeds = model.vision_model(pixel_values=pixels).last_hidden_state
    mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
    queries = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
    model.qformer(query_embeds=queries, encoder_hidden_states=image_embeds, encoder_attention_mask=mask)


